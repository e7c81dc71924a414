import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createFlow, type Endpoint, type Flow } from '../../flow/index.js';
import { createMetricsRegistry } from '../registry.js';
import { annotationSpec, createMetricsModule } from './index.js';
import { specOf } from '../../../test/fakes/metrics-spec.js';

/** Retina requires namespaces.include or .exclude; `exclude: []` is every namespace. */
const allNamespaces = (spec: unknown): unknown => ({ namespaces: { exclude: [] }, ...(spec as object) });

function ep(namespace: string, podName: string, over: Partial<Endpoint> = {}): Endpoint {
  return { namespace, podName, workloadKind: 'Deployment', workloadName: `${podName}-app`, service: '', nodeName: 'node-1', zone: '', labels: {}, ...over };
}
const web = ep('shop', 'web-1', { service: 'web', zone: 'zone-a' });
const db = ep('data', 'db-0', { workloadKind: 'StatefulSet', workloadName: 'db' });

function fwd(over: Partial<Flow> = {}): Flow {
  return createFlow({ srcIp: '10.0.0.1', dstIp: '10.0.0.2', verdict: 'FORWARDED', proto: 6, srcPort: 40000, dstPort: 5432, packets: 3, bytes: 300, direction: 'EGRESS', source: web, destination: db, ...over });
}

function setup(remoteContext: boolean, spec: unknown, t = { now: 1000 }) {
  const metrics = createMetricsRegistry({ processMetrics: false });
  const mod = createMetricsModule({ metrics, remoteContext, now: () => t.now, maxSeriesPerMetric: 5 });
  mod.apply(specOf(allNamespaces(spec)));
  const text = async () => (await metrics.expose()).body;
  return { mod, text, t };
}

const all = (metricName: string, extra: object = {}) => ({ metricName, sourceLabels: ['ip', 'namespace', 'podname', 'workload', 'port'], destinationLabels: ['namespace', 'podname', 'service', 'zone'], ...extra });

describe('metrics module: remote context', () => {
  it('labels forward metrics with source_/destination_ context and upper-case direction', async () => {
    const { mod, text } = setup(true, { contextOptions: [all('forward_count', { additionalLabels: ['is_reply'] }), all('forward_bytes')] });
    mod.consume({ source: 't', flows: [fwd(), fwd({ isReply: false }), fwd({ direction: 'UNKNOWN', destination: undefined })] });
    const body = await text();
    assert.match(body, /networkobservability_adv_forward_count\{direction="EGRESS",source_namespace="shop",source_podname="web-1",source_workload_kind="Deployment",source_workload_name="web-1-app",source_ip="10\.0\.0\.1",source_port="40000",destination_namespace="data",destination_podname="db-0",destination_service="unknown",destination_zone="unknown",is_reply="unknown"\} 3/);
    assert.match(body, /is_reply="false"\} 3/);
    assert.match(body, /adv_forward_bytes\{direction="EGRESS",[^}]*\} 600/);
    assert.match(body, /adv_forward_bytes\{direction="TRAFFIC_DIRECTION_UNKNOWN",[^}]*destination_namespace="unknown",destination_podname="unknown"[^}]*\} 300/);
  });

  it('counts drops by reason and TCP flags (SYN-ACK as SYNACK)', async () => {
    const { mod, text } = setup(true, { contextOptions: [{ metricName: 'drop_count', sourceLabels: ['podname'] }, { metricName: 'tcp_flag_gauges', sourceLabels: ['podname'] }] });
    mod.consume({ source: 't', flows: [
      fwd({ verdict: 'DROPPED', dropReason: 'NETFILTER_DROP', packets: 1, direction: 'INGRESS' }),
      fwd({ verdict: 'DROPPED', dropReason: 'NETFILTER_DROP', packets: 1, direction: 'INGRESS' }),
      fwd({ tcpFlags: 0x012, packets: 1 }), fwd({ tcpFlags: 0x011, packets: 1 }),
    ] });
    const body = await text();
    assert.match(body, /adv_drop_count\{reason="NETFILTER_DROP",direction="INGRESS",source_podname="web-1"\} 2/);
    assert.match(body, /adv_tcpflags_count\{flag="SYNACK",source_podname="web-1"\} 1/);
    assert.match(body, /adv_tcpflags_count\{flag="FIN",source_podname="web-1"\} 1/);
    assert.match(body, /adv_tcpflags_count\{flag="ACK",source_podname="web-1"\} 1/);
    assert.doesNotMatch(body, /flag="SYN",/);
  });

  it('counts DNS requests and responses with Retina labels', async () => {
    const { mod, text } = setup(true, { contextOptions: [{ metricName: 'dns_request_count', sourceLabels: ['podname'] }, { metricName: 'dns_response_count', destinationLabels: ['podname'] }] });
    const dns = { query: 'example.com.', qtype: 'A', rcode: 'NOERROR', answers: ['93.184.216.34', '93.184.216.35'], numAnswers: 2 };
    mod.consume({ source: 'dns', flows: [
      fwd({ verdict: 'DNS', dns: { ...dns, isResponse: false, answers: [], numAnswers: 0, rcode: '' } }),
      fwd({ verdict: 'DNS', dns: { ...dns, isResponse: true } }),
    ] });
    const body = await text();
    assert.match(body, /# TYPE networkobservability_adv_dns_request_count counter/);
    assert.match(body, /adv_dns_request_count\{query_type="A",query="example\.com\.",source_podname="web-1"\} 1/);
    assert.match(body, /adv_dns_response_count\{return_code="NOERROR",query_type="A",query="example\.com\.",response="93\.184\.216\.34,93\.184\.216\.35",num_response="2",destination_podname="db-0"\} 1/);
  });
});

describe('metrics module: local context', () => {
  it('counts a flow for each local pod, lower-case direction, unprefixed labels', async () => {
    const { mod, text } = setup(false, { contextOptions: [{ metricName: 'forward_count', sourceLabels: ['ip', 'podname', 'namespace'] }] });
    mod.consume({ source: 't', flows: [fwd(), fwd({ destination: undefined, dstIp: '1.1.1.1' })] });
    const body = await text();
    assert.match(body, /adv_forward_count\{direction="egress",podname="web-1",namespace="shop",ip="10\.0\.0\.1"\} 6/);
    assert.match(body, /adv_forward_count\{direction="ingress",podname="db-0",namespace="data",ip="10\.0\.0\.2"\} 3/);
    assert.doesNotMatch(body, /1\.1\.1\.1/);
  });
});

describe('metrics module: configuration changes and series life', () => {
  it('applies a new spec without restarting: families and labels change, an unchanged spec is a no-op', async () => {
    const { mod, text } = setup(true, { contextOptions: [{ metricName: 'forward_count', sourceLabels: ['podname'] }] });
    mod.consume({ source: 't', flows: [fwd()] });
    mod.apply(specOf(allNamespaces({ contextOptions: [{ metricName: 'forward_count', sourceLabels: ['podname'] }] })));
    assert.match(await text(), /source_podname="web-1"\} 3/);
    mod.apply(specOf(allNamespaces({ contextOptions: [{ metricName: 'forward_count', sourceLabels: ['namespace'] }, { metricName: 'drop_count' }] })));
    mod.consume({ source: 't', flows: [fwd()] });
    const body = await text();
    assert.doesNotMatch(body, /source_podname/);
    assert.match(body, /adv_forward_count\{direction="EGRESS",source_namespace="shop"\} 3/);
    assert.deepEqual(mod.families().sort(), ['networkobservability_adv_drop_count', 'networkobservability_adv_forward_count']);
    mod.apply(undefined);
    assert.doesNotMatch(await text(), /adv_/);
  });

  it('filters by namespace include and exclude', async () => {
    const inc = setup(true, { contextOptions: [{ metricName: 'forward_count', sourceLabels: ['podname'] }], namespaces: { include: ['other'] } });
    inc.mod.consume({ source: 't', flows: [fwd(), fwd({ source: ep('other', 'x') })] });
    assert.match(await inc.text(), /source_podname="x"/);
    assert.doesNotMatch(await inc.text(), /web-1/);
    const exc = setup(true, { contextOptions: [{ metricName: 'forward_count', sourceLabels: ['podname'] }], namespaces: { exclude: ['shop', 'data'] } });
    exc.mod.consume({ source: 't', flows: [fwd(), fwd({ source: ep('other', 'x') })] });
    assert.match(await exc.text(), /source_podname="x"/);
    assert.doesNotMatch(await exc.text(), /web-1/);
  });

  it('expires series by TTL and counts them; forgets a deleted pod at once', async () => {
    const { mod, text, t } = setup(true, { contextOptions: [{ metricName: 'forward_count', sourceLabels: ['namespace', 'podname'], ttl: '30s' }] });
    mod.consume({ source: 't', flows: [fwd(), fwd({ source: ep('shop', 'web-2') })] });
    t.now += 20_000;
    mod.consume({ source: 't', flows: [fwd({ source: ep('shop', 'web-2') })] });
    t.now += 15_000;
    mod.sweep();
    const body = await text();
    assert.doesNotMatch(body, /web-1/);
    assert.match(body, /web-2/);
    assert.match(body, /expired_metrics_counter\{metric="networkobservability_adv_forward_count"\} 1/);
    assert.equal(mod.forgetPods({ pods: [{ namespace: 'shop', name: 'web-2' }], names: [], ips: [] }), 1);
    assert.doesNotMatch(await text(), /web-2/);
  });

  it('folds flows past the series budget into one overflow series', async () => {
    const { mod, text } = setup(true, { contextOptions: [{ metricName: 'forward_count', sourceLabels: ['podname'] }] });
    mod.consume({ source: 't', flows: Array.from({ length: 8 }, (_, i) => fwd({ source: ep('shop', `p${i}`), packets: 1 })) });
    const body = await text();
    assert.match(body, /adv_forward_count\{direction="overflow",source_podname="overflow"\} 3/);
    assert.match(body, /metrics_module_series_overflow_total\{metric="networkobservability_adv_forward_count"\} 3/);
  });
});

describe('metrics module: API-server latency', () => {
  it('annotation mode exports all 11 families of Retina\'s default set, API-server latency included', () => {
    const metrics = createMetricsRegistry({ processMetrics: false });
    const mod = createMetricsModule({ metrics, remoteContext: true, isApiServer: (ip) => ip === '10.0.0.2' });
    mod.apply(annotationSpec(['a']));
    const fams = mod.families();
    assert.equal(new Set(fams).size, 11, fams.join(', '));
    for (const f of ['latency', 'tcp_handshake_latency', 'no_response']) assert.ok(fams.includes(`networkobservability_adv_node_apiserver_${f}`), f);
  });
  it('turns on with the node_apiserver_* metrics and off with them', async () => {
    const metrics = createMetricsRegistry({ processMetrics: false });
    const mod = createMetricsModule({ metrics, remoteContext: true, isApiServer: (ip) => ip === '10.0.0.2' });
    mod.apply(specOf(allNamespaces({ contextOptions: [{ metricName: 'node_apiserver_latency' }] })));
    mod.consume({ source: 't', flows: [fwd({ tcpFlags: 0x18, tcpTsval: 5, timeMs: 100 }), fwd({ srcIp: '10.0.0.2', dstIp: '10.0.0.1', srcPort: 5432, dstPort: 40000, tcpFlags: 0x10, tcpTsecr: 5, timeMs: 104 })] });
    assert.match((await metrics.expose()).body, /adv_node_apiserver_latency_sum 4/);
    mod.apply(specOf(allNamespaces({ contextOptions: [{ metricName: 'forward_count' }] })));
    assert.doesNotMatch((await metrics.expose()).body, /apiserver/);
  });
});
