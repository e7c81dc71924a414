import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { IpCache, normalizeIp, type PodEndpoint } from './ip-cache.js';

const pod = (name: string, ips: string[]): PodEndpoint => ({ kind: 'pod', namespace: 'ns', name, ips, nodeIP: undefined, labels: {}, annotations: {}, owners: [], workloads: [] });

describe('IpCache', () => {
  it('gives a reused IP to its new owner and keeps it when the old owner is deleted', () => {
    const c = new IpCache();
    c.upsertPod(pod('a', ['10.0.0.1', 'fd00::1']));
    c.upsertPod(pod('b', ['10.0.0.1']));
    assert.equal((c.lookup('10.0.0.1') as PodEndpoint).name, 'b');
    assert.equal((c.lookup('fd00::1') as PodEndpoint).name, 'a');
    c.deletePod('ns', 'a');
    assert.equal((c.lookup('10.0.0.1') as PodEndpoint).name, 'b');
    assert.equal(c.lookup('fd00::1'), undefined);
  });

  it('drops IPs an object no longer has', () => {
    const c = new IpCache();
    c.upsertPod(pod('a', ['10.0.0.1']));
    c.upsertPod(pod('a', ['10.0.0.2']));
    assert.equal(c.lookup('10.0.0.1'), undefined);
    assert.equal(c.stats().podIps, 1);
  });

  it('looks up pods, then services, then nodes', () => {
    const c = new IpCache();
    c.upsertNode({ kind: 'node', name: 'n', ips: ['10.0.0.9'], zone: 'z' });
    c.upsertService({ kind: 'service', namespace: 'ns', name: 's', ips: ['10.0.0.9'], selector: {} });
    assert.equal(c.lookup('10.0.0.9')?.kind, 'service');
    c.upsertPod(pod('p', ['10.0.0.9']));
    assert.equal(c.lookup('10.0.0.9')?.kind, 'pod');
  });

  it('normalises IPv6 spellings', () => {
    assert.equal(normalizeIp('FD00:0:0:0:0:0:0:AB'), 'fd00::ab');
    assert.equal(normalizeIp('2001:db8:0:0:1:0:0:1'), '2001:db8::1:0:0:1');
    assert.equal(normalizeIp('::1'), '::1');
    assert.equal(normalizeIp('10.1.2.3'), '10.1.2.3');
  });

  it('counts changes (all, and services or nodes alone) and finds nodes by address behind pods', () => {
    const c = new IpCache();
    const v0 = c.version;
    const t0 = c.topologyVersion;
    c.upsertPod(pod('p', ['10.0.0.9']));
    assert.equal(c.version, v0 + 1);
    assert.equal(c.topologyVersion, t0);
    c.upsertNode({ kind: 'node', name: 'n', ips: ['10.0.0.9'], zone: 'z' });
    c.deleteService('ns', 'nope');
    assert.equal(c.version, v0 + 3);
    assert.equal(c.topologyVersion, t0 + 2);
    assert.equal(c.lookup('10.0.0.9')?.kind, 'pod');
    assert.equal(c.nodeByIp('10.0.0.9')?.name, 'n');
  });
});
