import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseHubbleMetrics, podLabelName } from '../../config/index.js';
import { createFlow, type Endpoint, type Flow } from '../../flow/index.js';
import { createMetricsRegistry } from '../registry.js';
import { createHubbleMetrics } from './index.js';

function ep(namespace: string, podName: string, over: Partial<Endpoint> = {}): Endpoint {
  return { namespace, podName, workloadKind: 'Deployment', workloadName: podName.replace(/-[a-z0-9]+-[a-z0-9]+$/, ''), service: '', nodeName: 'node-1', zone: '', labels: {}, ...over };
}
const web = ep('shop', 'web-5d4f8c9b7-x2x9q', { labels: { app: 'web', team: 'red', 'app.kubernetes.io/name': 'storefront' } });
const db = ep('data', 'db-0', { workloadKind: 'StatefulSet', workloadName: 'db', labels: { 'k8s-app': 'postgres', team: 'blue' } });

const fwd = (over: Partial<Flow> = {}): Flow => createFlow({
  srcIp: '10.0.0.1', dstIp: '10.0.0.2', verdict: 'FORWARDED', proto: 6, srcPort: 40000, dstPort: 5432, tcpFlags: 2, isReply: false,
  direction: 'EGRESS', observationPoint: 'FROM_ENDPOINT', source: web, destination: db, ...over,
});

function setup(entries: string[], podLabels: string[] = [], nodeName = 'node-1') {
  const registry = createMetricsRegistry({ processMetrics: false });
  const { metrics, refused } = parseHubbleMetrics(entries);
  assert.deepEqual(refused, []);
  const hm = createHubbleMetrics({ metrics, registry, nodeName, podLabels: podLabels.map((key) => ({ key, name: podLabelName(key) })) });
  const text = async (): Promise<string> => (await registry.expose()).body;
  return { hm, text };
}

/** The series of a family, each as its label object and value (the exposition parsed back). */
function series(body: string, name: string): { labels: Record<string, string>; value: number }[] {
  const out: { labels: Record<string, string>; value: number }[] = [];
  for (const line of body.split('\n')) {
    const m = new RegExp(`^${name}\\{(.*)\\} (\\S+)$`).exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[1] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1] as string] = l[2] as string;
    out.push({ labels, value: Number(m[2]) });
  }
  return out;
}

describe('hubble metrics: Cilium families and labels', () => {
  it('flow: protocol, type, subtype, verdict and the source/destination context', async () => {
    const { hm, text } = setup(['flow:sourceContext=pod;destinationContext=pod-name']);
    hm.consume({ source: 't', flows: [
      fwd(), fwd(),
      fwd({ verdict: 'DROPPED', dropReason: 'NO_SOCKET', observationPoint: 'UNKNOWN' }),
      fwd({ verdict: 'DNS', proto: 17, dns: { query: 'db.data.svc', qtype: 'A', rcode: '', answers: [], isResponse: false, numAnswers: 0 } }),
      fwd({ observationPoint: 'TO_NETWORK', proto: 17, source: undefined, srcIp: '192.0.2.9' }),
    ] });
    const s = series(await text(), 'hubble_flows_processed_total');
    assert.deepEqual(s.find((x) => x.labels['type'] === 'Trace' && x.labels['subtype'] === 'from-endpoint'), {
      labels: { protocol: 'TCP', type: 'Trace', subtype: 'from-endpoint', verdict: 'FORWARDED', source: 'shop/web-5d4f8c9b7-x2x9q', destination: 'db-0' }, value: 2,
    });
    assert.equal(s.find((x) => x.labels['type'] === 'Drop')?.labels['verdict'], 'DROPPED');
    assert.deepEqual(s.find((x) => x.labels['type'] === 'L7')?.labels, { protocol: 'DNS', type: 'L7', subtype: 'DNS', verdict: 'FORWARDED', source: 'shop/web-5d4f8c9b7-x2x9q', destination: 'db-0' });
    // A source the enricher did not know has no pod: the pod context is empty, as Cilium's.
    assert.deepEqual(s.find((x) => x.labels['subtype'] === 'to-network')?.labels, { protocol: 'UDP', type: 'Trace', subtype: 'to-network', verdict: 'FORWARDED', source: '', destination: 'db-0' });
  });

  it('drop: reason (NETFILTER_DROP as POLICY_DENIED) and protocol, counted per drop', async () => {
    const { hm, text } = setup(['drop:sourceContext=namespace;destinationContext=workload']);
    hm.consume({ source: 't', flows: [
      fwd({ verdict: 'DROPPED', dropReason: 'NETFILTER_DROP' }), fwd({ verdict: 'DROPPED', dropReason: 'NETFILTER_DROP' }),
      fwd({ verdict: 'DROPPED', dropReason: 'NO_SOCKET', proto: 17 }), fwd(),
    ] });
    const s = series(await text(), 'hubble_drop_total');
    assert.deepEqual(s.map((x) => [x.labels['reason'], x.labels['protocol'], x.labels['source'], x.labels['destination'], x.value]).sort(), [
      ['NO_SOCKET', 'UDP', 'shop', 'data/db', 1], ['POLICY_DENIED', 'TCP', 'shop', 'data/db', 2],
    ]);
  });

  it('tcp: SYN, SYN-ACK, FIN, RST by family, forwarded flows only, aggregated counts honoured', async () => {
    const { hm, text } = setup(['tcp']);
    hm.consume({ source: 't', flows: [
      fwd({ tcpFlags: 2 }), fwd({ tcpFlags: 0x12 }), fwd({ tcpFlags: 0x11 }), fwd({ tcpFlags: 4, ipVersion: 6, srcIp: 'fd00::1', dstIp: 'fd00::2' }),
      fwd({ tcpFlags: 0x1a, packets: 9, tcpFlagCounts: [1, 2, 3, 0, 0, 0, 0, 0, 0, 0] }),
      fwd({ tcpFlags: 2, verdict: 'RETRANSMISSION' }), fwd({ tcpFlags: 2, verdict: 'DROPPED' }),
    ] });
    const s = series(await text(), 'hubble_tcp_flags_total').map((x) => `${x.labels['flag']}/${x.labels['family']}=${x.value}`).sort();
    assert.deepEqual(s, ['FIN/IPv4=2', 'RST/IPv6=1', 'SYN-ACK/IPv4=4', 'SYN/IPv4=3']);
  });

  it('dns: queries, responses (Cilium rcode names, ips_returned), response types, query and ignoreAAAA', async () => {
    const { hm, text } = setup(['dns:query;ignoreAAAA;sourceContext=app|pod;destinationContext=ip']);
    const q = (qtype: string) => fwd({ verdict: 'DNS', proto: 17, dstPort: 53, dns: { query: 'svc.test', qtype, rcode: '', answers: [], isResponse: false, numAnswers: 0 } });
    const r = (rcode: string, answers: string[]) => fwd({ verdict: 'DNS', proto: 17, srcIp: '10.0.0.2', dstIp: '10.0.0.1', source: db, destination: web,
      dns: { query: 'svc.test', qtype: 'A', rcode, answers, isResponse: true, numAnswers: answers.length } });
    hm.consume({ source: 'dns', flows: [q('A'), q('A'), q('AAAA'), r('NOERROR', ['10.1.1.1', '10.1.1.2']), r('NXDOMAIN', [])] });
    const body = await text();
    assert.deepEqual(series(body, 'hubble_dns_queries_total'), [{ labels: { rcode: '', qtypes: 'A', ips_returned: '0', query: 'svc.test.', source: 'storefront', destination: '10.0.0.2' }, value: 2 }]);
    assert.deepEqual(series(body, 'hubble_dns_responses_total').map((x) => [x.labels['rcode'], x.labels['ips_returned'], x.labels['source'], x.value]).sort(), [
      ['No Error', '2', 'postgres', 1], ['Non-Existent Domain', '0', 'postgres', 1],
    ]);
    assert.deepEqual(series(body, 'hubble_dns_response_types_total'), [{ labels: { type: 'A', qtypes: 'A', query: 'svc.test.', source: 'postgres', destination: '10.0.0.1' }, value: 2 }]);
  });

  it('port-distribution: forwarded requests by destination port (replies and unknown replies skipped)', async () => {
    const { hm, text } = setup(['port-distribution:destinationContext=namespace']);
    hm.consume({ source: 't', flows: [fwd(), fwd({ isReply: true }), fwd({ isReply: undefined }), fwd({ proto: 1, dstPort: 0 }), fwd({ proto: 17, dstPort: 53 })] });
    const s = series(await text(), 'hubble_port_distribution_total').map((x) => `${x.labels['protocol']}/${x.labels['port']}@${x.labels['destination']}=${x.value}`).sort();
    assert.deepEqual(s, ['ICMPv4/0@data=1', 'TCP/5432@data=1', 'UDP/53@data=1']);
  });

  it('flows-to-world: destinations outside the cluster only; policy drops unless any-drop; port and syn-only', async () => {
    const { hm, text } = setup(['flows-to-world:port;syn-only;sourceContext=pod-name;destinationContext=reserved-identity']);
    const out = (over: Partial<Flow>) => fwd({ destination: undefined, dstIp: '198.51.100.7', dstPort: 443, ...over });
    hm.consume({ source: 't', flows: [
      out({}), out({}), out({ tcpFlags: 0x10 }), out({ isReply: true }), fwd(),
      out({ verdict: 'DROPPED', dropReason: 'NETFILTER_DROP' }), out({ verdict: 'DROPPED', dropReason: 'NO_SOCKET' }),
    ] });
    const s = series(await text(), 'hubble_flows_to_world_total').map((x) => `${x.labels['verdict']}:${x.labels['port']}:${x.labels['source']}>${x.labels['destination']}=${x.value}`).sort();
    assert.deepEqual(s, ['DROPPED:443:web-5d4f8c9b7-x2x9q>reserved:world=1', 'FORWARDED:443:web-5d4f8c9b7-x2x9q>reserved:world=2']);
  });

  it('labelsContext in Cilium order, traffic_direction, per-direction overrides, identity and reserved identities', async () => {
    const { hm, text } = setup([
      'flow:labelsContext=traffic_direction,destination_namespace,source_workload,source_app,source_ip;sourceContext=identity;destinationContext=pod-short;sourceIngressContext=namespace',
    ]);
    const node = ep('', '', { nodeName: 'node-1', workloadKind: '', workloadName: '' });
    hm.consume({ source: 't', flows: [fwd(), fwd({ direction: 'INGRESS' }), fwd({ source: node, srcIp: '10.9.9.9', destination: ep('', '', { nodeName: 'node-2', workloadName: '', workloadKind: '' }), direction: 'UNKNOWN' })] });
    const s = series(await text(), 'hubble_flows_processed_total');
    assert.deepEqual(Object.keys(s[0]?.labels ?? {}), ['protocol', 'type', 'subtype', 'verdict', 'source_ip', 'source_workload', 'source_app', 'source', 'destination_namespace', 'destination', 'traffic_direction']);
    const egress = s.find((x) => x.labels['traffic_direction'] === 'egress')?.labels;
    assert.equal(egress?.['source'], 'k8s:app.kubernetes.io/name=storefront,k8s:app=web,k8s:io.kubernetes.pod.namespace=shop,k8s:team=red');
    assert.equal(egress?.['source_app'], 'storefront');
    assert.equal(egress?.['destination'], 'data/db', 'pod-short: Cilium strips the last one or two -suffixes');
    assert.equal(s.find((x) => x.labels['traffic_direction'] === 'ingress')?.labels['source'], 'shop', 'sourceIngressContext for ingress flows');
    const hosts = s.find((x) => x.labels['traffic_direction'] === 'unknown')?.labels;
    assert.deepEqual([hosts?.['source'], hosts?.['destination']], ['reserved:host', ''], 'this node is reserved:host; a node has no pod-short');
  });

  it('Retina\'s Hubble chart default: per-direction contexts alone give both labels, filled for their direction only', async () => {
    const { hm, text } = setup(['flow:sourceEgressContext=pod;destinationIngressContext=pod']);
    hm.consume({ source: 't', flows: [fwd({ direction: 'EGRESS' }), fwd({ direction: 'INGRESS' }), fwd({ direction: 'UNKNOWN' })] });
    const s = series(await text(), 'hubble_flows_processed_total').map((x) => [x.labels['source'], x.labels['destination'], x.value]).sort();
    assert.deepEqual(s, [['', '', 1], ['', 'data/db-0', 1], ['shop/web-5d4f8c9b7-x2x9q', '', 1]]);
  });

  it('pod labels (metricsPodLabelsAllowlist) on both sides as source_/destination_label_<key>', async () => {
    const { hm, text } = setup(['drop:sourceContext=pod'], ['team', 'app.kubernetes.io/name']);
    hm.consume({ source: 't', flows: [fwd({ verdict: 'DROPPED', dropReason: 'NO_SOCKET' }), fwd({ verdict: 'DROPPED', dropReason: 'NO_SOCKET', source: undefined })] });
    const s = series(await text(), 'hubble_drop_total').map((x) => x.labels).sort((a, b) => (a['source'] ?? '').localeCompare(b['source'] ?? ''));
    assert.deepEqual(s, [
      { reason: 'NO_SOCKET', protocol: 'TCP', source: '', source_label_team: '', source_label_app_kubernetes_io_name: '', destination_label_team: 'blue', destination_label_app_kubernetes_io_name: '' },
      { reason: 'NO_SOCKET', protocol: 'TCP', source: 'shop/web-5d4f8c9b7-x2x9q', source_label_team: 'red', source_label_app_kubernetes_io_name: 'storefront', destination_label_team: 'blue', destination_label_app_kubernetes_io_name: '' },
    ]);
  });

  it('deleted pods lose their series (pod, pod-name, ip contexts and labelsContext), other pods keep theirs', async () => {
    const { hm, text } = setup(['flow:sourceContext=pod;destinationContext=ip', 'drop:labelsContext=source_pod,source_namespace', 'tcp:sourceContext=namespace']);
    const other = ep('shop', 'web-other');
    hm.consume({ source: 't', flows: [fwd({ verdict: 'DROPPED', dropReason: 'X' }), fwd({ source: other, srcIp: '10.0.0.3' }), fwd()] });
    assert.equal(series(await text(), 'hubble_flows_processed_total').length, 3);
    const removed = hm.forgetPods({ pods: [{ namespace: 'shop', name: 'web-5d4f8c9b7-x2x9q' }], names: ['web-5d4f8c9b7-x2x9q'], ips: [] });
    const body = await text();
    assert.deepEqual(series(body, 'hubble_flows_processed_total').map((x) => x.labels['source']), ['shop/web-other']);
    assert.deepEqual(series(body, 'hubble_drop_total'), []);
    assert.equal(series(body, 'hubble_tcp_flags_total').length, 1, 'a namespace says nothing of one pod: kept');
    assert.equal(removed, 3);
    // A destination IP gone with its pod.
    assert.equal(hm.forgetPods({ pods: [], names: [], ips: ['10.0.0.2'] }), 1);
    assert.deepEqual(series(await text(), 'hubble_flows_processed_total'), []);
  });
});

describe('hubble metrics: the series budget', () => {
  it('folds label sets past the budget into one overflow series and counts them', () => {
    const registry = createMetricsRegistry({ processMetrics: false });
    let over = 0;
    const hm = createHubbleMetrics({ metrics: parseHubbleMetrics(['flow:sourceContext=ip']).metrics, registry, maxSeriesPerMetric: 4, onOverflow: (_f, n) => (over += n) });
    hm.consume({ source: 't', flows: Array.from({ length: 10 }, (_, i) => fwd({ srcIp: `10.1.0.${i}`, source: undefined })) });
    const fam = hm.families()[0];
    assert.equal(fam?.size, 5, 'four label sets and the overflow series');
    assert.equal(fam?.get().values.find((v) => v.labels['source'] === 'overflow')?.value, 6);
    assert.equal(over, 6);
  });
});
