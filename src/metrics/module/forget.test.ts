import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createFlow, type Endpoint, type Flow } from '../../flow/index.js';
import { createMetricsRegistry } from '../registry.js';
import { createMetricsModule, type GonePods } from './index.js';
import { specOf } from '../../../test/fakes/metrics-spec.js';

// A (dual-stack) and B are pods of node-1 in namespace shop, of one Deployment.
const pod = (podName: string): Endpoint => ({ namespace: 'shop', podName, workloadKind: 'Deployment', workloadName: 'web', service: 'web', nodeName: 'node-1', zone: 'z1', labels: {} });
const A = pod('a');
const B = pod('b');

function fwd(src: Endpoint, srcIp: string, dst: Endpoint, dstIp: string, over: Partial<Flow> = {}): Flow {
  return createFlow({ srcIp, dstIp, verdict: 'FORWARDED', proto: 6, srcPort: 40000, dstPort: 80, direction: 'EGRESS', packets: 1, bytes: 100, source: src, destination: dst, ...over });
}

/** A ⇄ B over IPv4 and IPv6. */
const TRAFFIC = [
  fwd(A, '10.0.0.1', B, '10.0.0.2'), fwd(B, '10.0.0.2', A, '10.0.0.1', { srcPort: 80, dstPort: 40000 }),
  fwd(A, 'fd00::1', B, 'fd00::2'), fwd(B, 'fd00::2', A, 'fd00::1', { srcPort: 80, dstPort: 40000 }),
];

const GONE_A: GonePods = { pods: [{ namespace: 'shop', name: 'a' }], names: ['a'], ips: ['10.0.0.1', 'fd00::1'] };

function setup(remoteContext: boolean, option: object) {
  const metrics = createMetricsRegistry({ processMetrics: false });
  const mod = createMetricsModule({ metrics, remoteContext, nodeName: 'node-1' });
  mod.apply(specOf({ contextOptions: [{ metricName: 'forward_count', ...option }], namespaces: { exclude: [] } }));
  mod.consume({ source: 't', flows: TRAFFIC });
  const lines = async (): Promise<string[]> => (await metrics.expose()).body.split('\n').filter((l) => l.startsWith('networkobservability_adv_forward_count{'));
  return { mod, lines };
}

/** A's identity in a side's labels (prefix '' for local context). */
const ofA = (prefix: string): RegExp => new RegExp(`[{,]${prefix}(podname="a"|ip="10\\.0\\.0\\.1"|ip="fd00::1")`);

// Every label Retina allows, alone and in the combinations users write (annotation mode's set too).
const LABEL_SETS: { labels: string[]; identity: boolean }[] = [
  { labels: ['podname'], identity: true },
  { labels: ['ip'], identity: true },
  { labels: ['namespace', 'podname'], identity: true },
  { labels: ['ip', 'port'], identity: true },
  { labels: ['podname', 'service', 'zone'], identity: true },
  { labels: ['ip', 'namespace', 'podname', 'workload'], identity: true },
  { labels: ['namespace'], identity: false },
  { labels: ['workload'], identity: false },
  { labels: ['service'], identity: false },
  { labels: ['zone'], identity: false },
  { labels: ['port'], identity: false },
  { labels: ['namespace', 'workload', 'service', 'zone', 'port'], identity: false },
];

const SIDES = [
  { name: 'local', remote: false, prefix: '', option: (l: string[]) => ({ sourceLabels: l }) },
  { name: 'remote source', remote: true, prefix: 'source_', option: (l: string[]) => ({ sourceLabels: l }) },
  { name: 'remote destination', remote: true, prefix: 'destination_', option: (l: string[]) => ({ destinationLabels: l }) },
];

describe('metrics module: deleted pods\' series', () => {
  for (const side of SIDES) {
    for (const { labels, identity } of LABEL_SETS) {
      it(`${side.name} [${labels.join(', ')}]: ${identity ? 'the deleted pod\'s series go, the live pod\'s stay' : 'no pod identity, every series stays (TTL)'}`, async () => {
        const { mod, lines } = setup(side.remote, side.option(labels));
        const before = await lines();
        const re = ofA(side.prefix);
        const ofDeleted = before.filter((l) => re.test(l));
        assert.ok(before.length > 0);
        const removed = mod.forgetPods(GONE_A);
        const after = await lines();
        if (identity) {
          assert.ok(ofDeleted.length > 0, 'the label set shows A');
          assert.equal(removed, ofDeleted.length);
          assert.deepEqual(after, before.filter((l) => !re.test(l)), 'exactly A\'s series removed');
          assert.ok(after.length > 0, 'B\'s series stay');
        } else {
          assert.equal(removed, 0);
          assert.deepEqual(after, before);
        }
      });
    }
  }

  it('a name that lives on in another namespace keeps [podname] series; an IP a live endpoint holds keeps [ip] series', async () => {
    const byName = setup(true, { sourceLabels: ['podname'] });
    assert.equal(byName.mod.forgetPods({ pods: [{ namespace: 'shop', name: 'a' }], names: [], ips: [] }), 0);
    const withNs = setup(true, { sourceLabels: ['namespace', 'podname'] });
    assert.equal(withNs.mod.forgetPods({ pods: [{ namespace: 'shop', name: 'a' }], names: [], ips: [] }), 1, 'with namespace the pod is told apart');
    const byIp = setup(true, { sourceLabels: ['ip'] });
    assert.equal(byIp.mod.forgetPods({ pods: [{ namespace: 'shop', name: 'a' }], names: ['a'], ips: ['fd00::1'] }), 1, 'only the IP no one holds');
    assert.equal((await byIp.lines()).filter((l) => l.includes('source_ip="10.0.0.1"')).length, 1);
    const both = setup(true, { sourceLabels: ['ip', 'podname'] });
    assert.equal(both.mod.forgetPods({ pods: [{ namespace: 'shop', name: 'a' }], names: ['a'], ips: [] }), 2, 'with podname the reused IP does not matter');
  });

  it('removes many pods in one pass and leaves others', async () => {
    const metrics = createMetricsRegistry({ processMetrics: false });
    const mod = createMetricsModule({ metrics, remoteContext: true, nodeName: 'node-1' });
    mod.apply(specOf({ contextOptions: [{ metricName: 'forward_count', sourceLabels: ['podname'], destinationLabels: ['ip'] }], namespaces: { exclude: [] } }));
    const flows = Array.from({ length: 1000 }, (_, i) => fwd(pod(`p${i}`), `10.1.${i >> 8}.${i & 255}`, B, '10.0.0.2'));
    mod.consume({ source: 't', flows });
    const gone: GonePods = { pods: [], names: Array.from({ length: 600 }, (_, i) => `p${i}`), ips: [] };
    assert.equal(mod.forgetPods(gone), 600);
    assert.equal(mod.forgetPods({ pods: [], names: [], ips: ['10.0.0.2'] }), 400, 'by the destination IP');
  });
});
