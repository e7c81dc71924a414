import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createFlow, type Endpoint, type Flow, type ObservationPoint } from '../../flow/index.js';
import { createMetricsRegistry } from '../registry.js';
import { createMetricsModule, type MetricsModule } from './index.js';
import { specOf } from '../../../test/fakes/metrics-spec.js';

/** Retina requires namespaces.include or .exclude; `exclude: []` is every namespace. */
const allNamespaces = (spec: unknown): unknown => ({ namespaces: { exclude: [] }, ...(spec as object) });

// This node is node-1. A and B run here, R on node-2; S is a Service, H this node's address, X the Internet.
const pod = (podName: string, nodeName: string): Endpoint => ({ namespace: 'shop', podName, workloadKind: 'Deployment', workloadName: podName, service: '', nodeName, zone: '', labels: {} });
const A = pod('a', 'node-1');
const B = pod('b', 'node-1');
const R = pod('r', 'node-2');
const S: Endpoint = { namespace: 'shop', podName: '', workloadKind: '', workloadName: '', service: 's', nodeName: '', zone: '', labels: {} };
const H: Endpoint = { namespace: '', podName: '', workloadKind: '', workloadName: '', service: '', nodeName: 'node-1', zone: '', labels: {} };
const ips = new Map<Endpoint | undefined, string>([[A, '10.1.0.1'], [B, '10.1.0.2'], [R, '10.2.0.1'], [S, '10.96.0.1'], [H, '192.168.0.1'], [undefined, '1.1.1.1']]);

/** A packetparser report: `packets` packets of one connection direction seen at `obs`. */
function pp(src: Endpoint | undefined, dst: Endpoint | undefined, obs: ObservationPoint, over: Partial<Flow> = {}): Flow {
  return createFlow({
    srcIp: ips.get(src) as string, dstIp: ips.get(dst) as string, verdict: 'FORWARDED', proto: 6, srcPort: 40000, dstPort: 80,
    observationPoint: obs, direction: 'EGRESS', isReply: false, packets: 10, bytes: 1000, tcpFlags: 0x10, nodeName: 'node-1',
    source: src, destination: dst, ...over,
  });
}

function setup(remoteContext: boolean, spec: unknown, o: { nodeName?: string; max?: number; t?: { now: number } } = {}) {
  const metrics = createMetricsRegistry({ processMetrics: false });
  const t = o.t ?? { now: 1000 };
  const mod: MetricsModule = createMetricsModule({ metrics, remoteContext, now: () => t.now, maxSeriesPerMetric: o.max ?? 1000, ...(o.nodeName === undefined ? {} : { nodeName: o.nodeName }) });
  mod.apply(specOf(allNamespaces(spec)));
  const text = async (): Promise<string> => (await metrics.expose()).body;
  /** Sum of a family's series values whose line matches `re`. */
  const sum = async (family: string, re = /./): Promise<number> => {
    let n = 0;
    for (const l of (await text()).split('\n')) if (l.startsWith(`networkobservability_${family}{`) && re.test(l)) n += Number(l.slice(l.lastIndexOf(' ') + 1));
    return n;
  };
  return { mod, text, sum, t };
}

const both = (metricName: string) => ({ metricName, sourceLabels: ['podname', 'ip'], destinationLabels: ['podname', 'ip'] });
const local = (metricName: string) => ({ metricName, sourceLabels: ['podname'] });

describe('metrics module: tcp_flag_gauges from aggregated reports', () => {
  it('adds each flag\'s own packet count (non-zero slots only) when tcpFlagCounts is there', async () => {
    const { mod, text, sum } = setup(true, { contextOptions: [both('tcp_flag_gauges')] });
    //              FIN SYN SYNACK RST PSH ACK URG ECE CWR NS
    const counts = [1, 0, 1, 0, 7, 40, 0, 0, 0, 0];
    mod.consume({ source: 'packetparser', flows: [pp(A, R, 'FROM_ENDPOINT', { packets: 41, tcpFlags: 0x1b, tcpFlagCounts: counts })] });
    assert.equal(await sum('adv_tcpflags_count', /flag="FIN"/), 1);
    assert.equal(await sum('adv_tcpflags_count', /flag="SYNACK"/), 1);
    assert.equal(await sum('adv_tcpflags_count', /flag="PSH"/), 7);
    assert.equal(await sum('adv_tcpflags_count', /flag="ACK"/), 40);
    assert.doesNotMatch(await text(), /flag="(SYN|RST|URG|ECE|CWR|NS)"/);
  });

  it('without counts, adds `packets` to every flag of the bitmask (SYN with ACK as SYNACK)', async () => {
    const { mod, sum } = setup(true, { contextOptions: [both('tcp_flag_gauges')] });
    mod.consume({ source: 'packetparser', flows: [pp(A, R, 'FROM_ENDPOINT', { packets: 3, tcpFlags: 0x12 }), pp(A, R, 'FROM_ENDPOINT', { packets: 2, tcpFlags: 0x19 })] });
    assert.equal(await sum('adv_tcpflags_count', /flag="SYNACK"/), 3);
    assert.equal(await sum('adv_tcpflags_count', /flag="ACK"/), 2);
    assert.equal(await sum('adv_tcpflags_count', /flag="FIN"/), 2);
    assert.equal(await sum('adv_tcpflags_count', /flag="PSH"/), 2);
    assert.equal(await sum('adv_tcpflags_count', /flag="SYN"/), 0);
  });

  it('ignores UDP and flagless flows', async () => {
    const { mod, text } = setup(true, { contextOptions: [both('tcp_flag_gauges')] });
    mod.consume({ source: 'packetparser', flows: [pp(A, R, 'FROM_ENDPOINT', { proto: 17, tcpFlags: 0 }), pp(A, R, 'FROM_ENDPOINT', { tcpFlags: 0 })] });
    assert.doesNotMatch(await text(), /adv_tcpflags_count\{/);
  });
});

/** Every observation this node makes of 10-packet reports, in both directions of each connection. */
function nodeObservations(): Flow[] {
  return [
    pp(A, R, 'FROM_ENDPOINT'), pp(A, R, 'TO_NETWORK'), // A → R leaves through A's veth, then the host interface
    pp(R, A, 'FROM_NETWORK', { direction: 'INGRESS', isReply: true }), pp(R, A, 'TO_ENDPOINT', { direction: 'INGRESS', isReply: true }),
    pp(A, B, 'FROM_ENDPOINT'), pp(A, B, 'TO_ENDPOINT'), // A → B on this node: A's veth, then B's
    pp(B, A, 'FROM_ENDPOINT', { isReply: true }), pp(B, A, 'TO_ENDPOINT', { isReply: true }),
    pp(A, S, 'FROM_ENDPOINT'), pp(S, A, 'TO_ENDPOINT', { isReply: true }), // to a Service IP (before DNAT)
    pp(A, undefined, 'FROM_ENDPOINT'), pp(A, undefined, 'TO_NETWORK'), // to the Internet
    pp(H, undefined, 'TO_NETWORK'), pp(undefined, H, 'FROM_NETWORK', { direction: 'INGRESS', isReply: true }), // the host alone
    pp(H, A, 'TO_ENDPOINT'), pp(A, H, 'FROM_ENDPOINT', { isReply: true }), // the kubelet probing A
  ];
}

describe('metrics module: each packet counted once per node (remote context)', () => {
  it('counts a packet seen at a veth and at the host interface, or at two veths, once', async () => {
    const { mod, sum, text } = setup(true, { contextOptions: [both('forward_count'), both('forward_bytes'), both('tcp_flag_gauges')] }, { nodeName: 'node-1' });
    mod.consume({ source: 'packetparser', flows: nodeObservations() });
    // 16 observations of 11 distinct packet reports: A→R, R→A, A→B, B→A, A→S, S→A, A→X, H→X, X→H, H→A, A→H.
    assert.equal(await sum('adv_forward_count'), 110);
    assert.equal(await sum('adv_forward_bytes'), 11_000);
    assert.equal(await sum('adv_tcpflags_count', /flag="ACK"/), 110);
    const body = await text();
    assert.match(body, /adv_forward_count\{direction="EGRESS",source_podname="a",source_ip="10\.1\.0\.1",destination_podname="r",destination_ip="10\.2\.0\.1"\} 10/);
    assert.match(body, /adv_forward_count\{direction="INGRESS",source_podname="r",source_ip="10\.2\.0\.1",destination_podname="a",destination_ip="10\.1\.0\.1"\} 10/);
    assert.match(body, /adv_forward_count\{direction="EGRESS",source_podname="unknown",source_ip="192\.168\.0\.1",destination_podname="unknown",destination_ip="1\.1\.1\.1"\} 10/);
  });

  it('takes this node from the flows when the module is not told (nodeName unset)', async () => {
    const { mod, sum } = setup(true, { contextOptions: [both('forward_count')] });
    mod.consume({ source: 'packetparser', flows: nodeObservations() });
    assert.equal(await sum('adv_forward_count'), 110);
  });

  it('learns this node\'s pods from their veths when no node name is known', async () => {
    const { mod, sum } = setup(true, { contextOptions: [both('forward_count')] });
    const anon = (e: Endpoint): Endpoint => ({ ...e, nodeName: '' });
    const [a, b, r] = [anon(A), anon(B), anon(R)];
    ips.set(a, '10.1.0.1').set(b, '10.1.0.2').set(r, '10.2.0.1');
    const flows = [pp(a, b, 'FROM_ENDPOINT'), pp(a, b, 'TO_ENDPOINT'), pp(r, a, 'TO_ENDPOINT'), pp(r, a, 'FROM_NETWORK'), pp(a, r, 'TO_NETWORK')].map((f) => ({ ...f, nodeName: '' }));
    mod.consume({ source: 'packetparser', flows });
    assert.equal(await sum('adv_forward_count'), 20); // a→b once, r→a once
  });

  it('keeps the one observation of drops, DNS and retransmissions (dropreason marks FROM/TO_NETWORK)', async () => {
    const { mod, sum } = setup(true, { contextOptions: [both('drop_count'), both('tcp_retransmission_count')] }, { nodeName: 'node-1' });
    mod.consume({ source: 't', flows: [
      pp(A, R, 'TO_NETWORK', { verdict: 'DROPPED', dropReason: 'NETFILTER_DROP', packets: 1 }),
      pp(R, A, 'FROM_NETWORK', { verdict: 'DROPPED', dropReason: 'NETFILTER_DROP', packets: 1 }),
      pp(A, R, 'UNKNOWN', { verdict: 'RETRANSMISSION', packets: 2 }),
    ] });
    assert.equal(await sum('adv_drop_count'), 2);
    assert.equal(await sum('adv_tcpretrans_count'), 2);
  });

  it('counts flows without an observation point (Windows, older sources) as before', async () => {
    const { mod, sum } = setup(true, { contextOptions: [both('forward_count')] }, { nodeName: 'node-1' });
    mod.consume({ source: 't', flows: [pp(A, B, 'UNKNOWN'), pp(A, B, 'UNKNOWN')] });
    assert.equal(await sum('adv_forward_count'), 20);
  });
});

describe('metrics module: each packet counted once per pod side (local context)', () => {
  it('egress from the sender\'s veth, ingress at the receiver\'s, nothing from the host interface', async () => {
    const { mod, sum } = setup(false, { contextOptions: [local('forward_count'), local('tcp_flag_gauges')] }, { nodeName: 'node-1' });
    mod.consume({ source: 'packetparser', flows: nodeObservations() });
    // A sends to R, B, S, X, H: 5 egress reports; receives from R, B, S, H: 4 ingress. B: 1 of each.
    assert.equal(await sum('adv_forward_count', /direction="egress",podname="a"/), 50);
    assert.equal(await sum('adv_forward_count', /direction="ingress",podname="a"/), 40);
    assert.equal(await sum('adv_forward_count', /direction="egress",podname="b"/), 10);
    assert.equal(await sum('adv_forward_count', /direction="ingress",podname="b"/), 10);
    assert.equal(await sum('adv_forward_count'), 110);
    // TCP flags: once per report, for the pod whose veth saw it.
    assert.equal(await sum('adv_tcpflags_count', /podname="a"/), 90);
    assert.equal(await sum('adv_tcpflags_count', /podname="b"/), 20);
  });

  it('never labels a Service or a node as a local pod', async () => {
    const { mod, text } = setup(false, { contextOptions: [local('drop_count')] });
    mod.consume({ source: 'dropreason', flows: [pp(S, H, 'UNKNOWN', { verdict: 'DROPPED', dropReason: 'NO_SOCKET' })] });
    assert.doesNotMatch(await text(), /adv_drop_count\{/);
  });
});

describe('metrics module: cached series stay right', () => {
  it('starts a series afresh after it expired, and after forgetPods', async () => {
    const t = { now: 1000 };
    const spec = { metricName: 'forward_count', sourceLabels: ['namespace', 'podname', 'ip'], destinationLabels: ['podname'], ttl: '10s' };
    const { mod, sum } = setup(true, { contextOptions: [spec] }, { nodeName: 'node-1', t });
    mod.consume({ source: 'p', flows: [pp(A, R, 'FROM_ENDPOINT')] });
    t.now += 20_000;
    mod.sweep();
    assert.equal(await sum('adv_forward_count'), 0);
    mod.consume({ source: 'p', flows: [pp(A, R, 'FROM_ENDPOINT', { packets: 3 })] });
    assert.equal(await sum('adv_forward_count'), 3);
    assert.equal(mod.forgetPods({ pods: [{ namespace: 'shop', name: 'a' }], names: [], ips: [] }), 1);
    mod.consume({ source: 'p', flows: [pp(A, R, 'FROM_ENDPOINT', { packets: 4 })] });
    assert.equal(await sum('adv_forward_count'), 4);
  });

  it('counts every flow folded into overflow, and stops folding once series expire', async () => {
    const t = { now: 1000 };
    const { mod, sum, text } = setup(true, { contextOptions: [{ metricName: 'forward_count', sourceLabels: ['podname'], ttl: '10s' }] }, { nodeName: 'node-1', max: 1, t });
    mod.consume({ source: 'p', flows: [pp(A, R, 'FROM_ENDPOINT', { packets: 1 }), pp(B, R, 'FROM_ENDPOINT', { packets: 1 }), pp(B, R, 'FROM_ENDPOINT', { packets: 1 })] });
    assert.match(await text(), /metrics_module_series_overflow_total\{metric="networkobservability_adv_forward_count"\} 2/);
    assert.equal(await sum('adv_forward_count', /source_podname="overflow"/), 2);
    t.now += 20_000;
    mod.sweep();
    mod.consume({ source: 'p', flows: [pp(B, R, 'FROM_ENDPOINT', { packets: 5 })] });
    assert.equal(await sum('adv_forward_count', /source_podname="b"/), 5);
  });

  it('keeps drop series per reason on one connection', async () => {
    const { mod, sum } = setup(true, { contextOptions: [both('drop_bytes')] });
    const drop = (dropReason: string, bytes: number): Flow => pp(A, R, 'TO_NETWORK', { verdict: 'DROPPED', dropReason, bytes });
    mod.consume({ source: 'd', flows: [drop('NO_SOCKET', 1), drop('NETFILTER_DROP', 10), drop('NO_SOCKET', 100), drop('', 1000)] });
    assert.equal(await sum('adv_drop_bytes', /reason="NO_SOCKET"/), 101);
    assert.equal(await sum('adv_drop_bytes', /reason="NETFILTER_DROP"/), 10);
    assert.equal(await sum('adv_drop_bytes', /reason="UNKNOWN"/), 1000);
  });

  it('gives a dual-stack pod one series per address, and an endpoint standing for many addresses too', async () => {
    const { mod, text } = setup(true, { contextOptions: [{ metricName: 'forward_count', sourceLabels: ['ip'] }] });
    const flows = ['10.1.0.1', 'fd00::1', '10.1.0.1', ...Array.from({ length: 6 }, (_, i) => `10.9.0.${i}`)].map((srcIp) => pp(A, R, 'FROM_ENDPOINT', { srcIp, packets: 1 }));
    mod.consume({ source: 'p', flows });
    const body = await text();
    assert.match(body, /source_ip="10\.1\.0\.1"\} 2/);
    assert.match(body, /source_ip="fd00::1"\} 1/);
    for (let i = 0; i < 6; i++) assert.match(body, new RegExp(`source_ip="10\\.9\\.0\\.${i}"\\} 1`));
  });
});
