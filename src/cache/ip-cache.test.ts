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

  it('hands a reused IP back to the earlier claimant that still holds it when its owner goes or drops it (a lingering terminating pod)', () => {
    const c = new IpCache();
    const owner = (ip: string): string | undefined => (c.lookup(ip) as PodEndpoint | undefined)?.name;
    // a (terminating, its RetinaEndpoint still there) and b, the new pod with a's IP.
    c.upsertPod(pod('a', ['10.0.0.1']));
    c.upsertPod(pod('b', ['10.0.0.1']));
    // a changes while it lingers: the last write takes the IP, as a fresh LIST ordered by version says.
    c.upsertPod({ ...pod('a', ['10.0.0.1']), labels: { x: '1' } });
    assert.equal(owner('10.0.0.1'), 'a');
    c.deletePod('ns', 'a');
    assert.equal(owner('10.0.0.1'), 'b', 'b still holds the IP when a goes (it was lost before)');
    // the new owner goes first: the IP is the remaining claimant's again
    c.upsertPod(pod('c', ['10.0.0.1']));
    c.deletePod('ns', 'c');
    assert.equal(owner('10.0.0.1'), 'b');
    // an earlier claimant that moved to another IP, or was deleted, does not get it back
    c.upsertPod(pod('d', ['10.0.0.1']));
    c.upsertPod(pod('b', ['10.0.0.2']));
    c.upsertPod(pod('e', ['10.0.0.1']));
    c.deletePod('ns', 'd');
    assert.equal(owner('10.0.0.1'), 'e');
    c.deletePod('ns', 'e');
    assert.deepEqual([owner('10.0.0.1'), owner('10.0.0.2')], [undefined, 'b']);
    // three claimants: the newest remaining one wins; the owner dropping the IP (not deleted) hands it back too
    c.upsertPod(pod('f', ['10.0.0.3']));
    c.upsertPod(pod('g', ['10.0.0.3']));
    c.upsertPod(pod('h', ['10.0.0.3']));
    c.upsertPod(pod('h', ['10.0.0.4']));
    assert.equal(owner('10.0.0.3'), 'g');
    c.deletePod('ns', 'g');
    assert.equal(owner('10.0.0.3'), 'f');
    c.deletePod('ns', 'f');
    assert.deepEqual([owner('10.0.0.3'), owner('10.0.0.4'), c.stats().podIps], [undefined, 'h', 2]);
  });

  it('keeps pods of one name in different namespaces apart: lookup, count, update and delete each its own', () => {
    const c = new IpCache();
    c.upsertPod(pod('a', ['10.0.0.1']));
    c.upsertPod({ ...pod('a', ['10.0.0.2']), namespace: 'other' });
    assert.deepEqual([c.stats().pods, c.pod('ns', 'a')?.ips, c.pod('other', 'a')?.ips], [2, ['10.0.0.1'], ['10.0.0.2']]);
    c.upsertPod({ ...pod('a', ['10.0.0.3']), namespace: 'other' });
    assert.deepEqual([c.stats().pods, c.lookup('10.0.0.2'), (c.lookup('10.0.0.3') as PodEndpoint).namespace], [2, undefined, 'other']);
    assert.equal(c.deletePod('other', 'b'), false);
    assert.equal(c.deletePod('other', 'a'), true);
    assert.equal(c.deletePod('other', 'a'), false);
    assert.deepEqual([c.stats().pods, [...c.pods()].map((p) => `${p.namespace}/${p.name}`), c.lookup('10.0.0.3')], [1, ['ns/a'], undefined]);
    c.upsertService({ kind: 'service', namespace: 'ns', name: 'a', ips: ['10.0.1.1'], selector: {} });
    c.upsertNode({ kind: 'node', name: 'a', ips: ['10.0.2.1'], zone: undefined });
    assert.deepEqual([c.service('ns', 'a')?.kind, c.node('a')?.kind, c.pod('ns', 'a')?.kind, c.stats().services, c.stats().nodes], ['service', 'node', 'pod', 1, 1]);
    c.clear();
    assert.deepEqual([c.stats().pods, [...c.pods()].length, c.pod('ns', 'a')], [0, 0, undefined]);
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
