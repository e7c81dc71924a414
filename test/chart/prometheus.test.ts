/**
 * A real Prometheus (Debian's) scrapes a real agent through the chart's scrape job
 * (charts/retina/scrape/prometheus-job.yaml, its Kubernetes discovery rendered to static targets
 * carrying the same meta labels), and every panel query of every dashboard returns data through
 * Prometheus's HTTP API, except the panels named below with the reason. Both run in a network
 * namespace of the test's own, with traffic, drops, interface drops, TCP timeouts and resets and
 * DNS to a second namespace. Needs root, kernel BTF and `prometheus` (the Makefile installs it).
 */
import assert from 'node:assert/strict';
import { execFileSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { parse } from 'yaml';
import { ROOT } from '../e2e/agent-process.js';
import { startPrometheus, type Prometheus } from '../node/prometheus.js';
import { Netns, NsAgent, requireKernel, sleep, stopAll, vethPair } from '../ebpf/netns.js';
import { DNS_SERVER } from '../ebpf/traffic.js';
import { fillVariables, loadDashboards } from './dashboards.js';
import { TRAFFIC_LOOP } from './traffic-loop.js';
import { holdDropsForThisFile } from '../ebpf/drop-lock.js';

// Its drops (or losses) and the node-level counts, apart from every other lane's (drop-lock.ts).
holdDropsForThisFile();

const PROM = '127.0.0.1:19090';
const NODE_NAME = 'rt-node-a';

/** Panels (or whole dashboards, by uid) whose data needs another OS or mode, or a failure this test does not cause. */
const NO_DATA_HERE: Readonly<Record<string, string>> = {
  'retina-ts-windows': 'Windows nodes (hnsstats, VFP)',
  'retina-ts-windows-pods': 'Windows pods (pktmon, pod level)',
  'retina-ts-pod-traffic': 'pod level: enablePodLevel with Kubernetes and an Accepted MetricsConfiguration',
  'retina-ts-apiserver': 'pod level: the API-server histograms need Kubernetes',
  'retina-ts-dns/DNS Requests': 'pod level (adv_dns_request_count)',
  'retina-ts-dns/DNS Responses': 'pod level (adv_dns_response_count)',
  'retina-ts-dns/DNS Missing Response': 'pod level (adv_dns_*)',
  'retina-ts-dns/DNS Response IPs Returned': 'pod level (adv_dns_response_count)',
  'retina-ts-dns/DNS Errors': 'pod level (adv_dns_response_count)',
  'retina-ts-dns/Top DNS Queries (Requests)': 'pod level (adv_dns_request_count)',
  'retina-ts-dns/Top DNS Queries (Responses)': 'pod level (adv_dns_response_count)',
  'retina-ts-dns/DNS Response Table': 'pod level (adv_dns_response_count)',
  'retina-ts-agent-health/Series overflow': 'pod level: a metric over its series budget',
  'retina-ts-agent-health/Expired series': 'pod level: series with a ttl',
  'retina-ts-agent-health/Kubernetes objects rejected': 'Kubernetes: objects that cannot be taken in',
  'retina-ts-agent-health/Kubernetes watch events': 'Kubernetes',
  'retina-ts-agent-health/Interface attach failures': 'pod level: packetparser on pod veths',
  'retina-ts-agent-health/Lost events': 'a full kernel ring buffer (or a failing stage): not caused here',
  'retina-ts-agent-health/Connection table evictions': 'pod level: a full packetparser connection table, not caused here',
};

let node: Netns | undefined;
let peer: Netns | undefined;
let agent: NsAgent | undefined;
let prom: Prometheus | undefined;
const children: ChildProcess[] = [];

/** The chart's job with its pod discovery replaced by static targets: the agent, and a pod that does not ask to be scraped. */
function renderJob(agentPort: number): unknown {
  const jobs = parse(readFileSync(`${ROOT}charts/retina/scrape/prometheus-job.yaml`, 'utf8')) as Record<string, unknown>[];
  assert.equal(jobs.length, 1);
  const { kubernetes_sd_configs: sd, ...job } = jobs[0] as Record<string, unknown>;
  assert.deepEqual(sd, [{ role: 'pod' }], 'the job discovers pods');
  const pod = (name: string, scrape: string): Record<string, string> => ({
    __meta_kubernetes_pod_ip: '127.0.0.1', __meta_kubernetes_pod_node_name: name, __meta_kubernetes_namespace: 'kube-system',
    __meta_kubernetes_pod_name: `retina-agent-${name}`, __meta_kubernetes_pod_label_app_kubernetes_io_name: 'retina', __meta_kubernetes_pod_label_app_kubernetes_io_component: 'agent',
    __meta_kubernetes_pod_annotation_prometheus_io_scrape: scrape, __meta_kubernetes_pod_annotation_prometheus_io_port: String(agentPort),
  });
  // Shorter interval than the chart's 30s, so that rate() has samples within seconds.
  return { ...job, scrape_interval: '2s', scrape_timeout: '2s', static_configs: [
    { targets: ['127.0.0.1:1'], labels: pod(NODE_NAME, 'true') },
    { targets: ['127.0.0.1:2'], labels: pod('rt-not-scraped', 'false') },
  ] };
}

const api = (path: string, params: Record<string, string> = {}): Promise<{ status: string; data: unknown }> => (prom as Prometheus).api(path, params);

before(async () => {
  requireKernel();
  execFileSync('prometheus', ['--version'], { stdio: 'ignore' });
  node = new Netns('prom-node');
  peer = new Netns('prom-peer');
  vethPair(node, 'rtprom0', '10.232.1.1', peer, 'rtprom1', '10.232.1.2');
  vethPair(node, 'rtprom2', '10.232.2.1', peer, 'rtprom3', '10.232.2.2');
  vethPair(node, 'rtprom4', '10.232.3.1', peer, 'rtprom5', '10.232.3.2');
  peer.run('ip', ['link', 'set', 'rtprom3', 'mtu', '600']);
  node.run('ip', ['link', 'set', 'rtprom4', 'mtu', '600']);
  const rules = (extra: string): string => `table inet rtprom {\n chain input {\n  type filter hook input priority 0;\n  udp dport 9999 drop\n${extra} }\n chain output {\n  type filter hook output priority 0;\n  udp dport 9997 drop\n }\n}\n`;
  node.run('nft', ['-f', '-'], rules(''));
  peer.run('nft', ['-f', '-'], rules('  tcp dport 7 drop\n'));
  // infiniband is enabled on a host without InfiniBand on purpose: it is refused and shows as a plugin
  // down, which the health panels "Plugins not running" and "Plugin reconcile failures" must show.
  // interfaceStatsMode: the per-interface panels (RX/TX Packets by Interface, Dropped Rx/Tx Packets,
  // Interface Errors) read link counters, which Retina's default all_interfaces shape does not carry
  // (docs/metrics.md): this node's interfaces are veths, so with them.
  agent = new NsAgent(node, 'enabledPlugin: [packetforward, dropreason, linuxutil, dns, tcpretrans, infiniband]\nmetricsIntervalDuration: 1s\npacketForwardInterfaces: [rtprom0]\ninterfaceStatsMode: per_interface_with_veths\n');
  await agent.started(['packetforward', 'dropreason', 'linuxutil', 'dns', 'tcpretrans']);
  const port = agent.port;
  prom = await startPrometheus(PROM, () => ({ global: { evaluation_interval: '2s' }, scrape_configs: [renderJob(port)] }), { netns: node.name });
  children.push(await peer.spawnReady(DNS_SERVER, ['10.232.1.2', '::1']));
  children.push(await node.spawnReady(TRAFFIC_LOOP, ['node', '10.232.1.2', '10.232.2.2']));
  children.push(await peer.spawnReady(TRAFFIC_LOOP, ['peer', '10.232.1.1', '10.232.3.1']));
});

after(async () => {
  try {
    await stopAll(children);
    await prom?.[Symbol.asyncDispose]();
    await agent?.[Symbol.asyncDispose]();
  } finally {
    node?.destroy();
    peer?.destroy();
  }
});

test("the chart's job scrapes the agent, names it by its node, and skips pods that do not ask", async () => {
  let active: { labels: Record<string, string>; health: string }[] = [];
  for (let i = 0; i < 60 && !active.some((t) => t.health === 'up'); i++) {
    await sleep(1000);
    try {
      active = ((await api('/api/v1/targets')).data as { activeTargets: typeof active }).activeTargets;
    } catch {
      /* Prometheus still starting */
    }
  }
  assert.equal(active.length, 1, JSON.stringify(active));
  assert.equal(active[0]?.health, 'up');
  assert.deepEqual([active[0]?.labels['job'], active[0]?.labels['instance'], active[0]?.labels['namespace']], ['network-observability', NODE_NAME, 'kube-system']);
});

test('every panel query of every dashboard returns data, except the panels named with their reason', async () => {
  const dashboards = loadDashboards();
  const titles = new Set(dashboards.flatMap((d) => [d.uid, ...d.panels.map((p) => `${d.uid}/${p.title}`)]));
  for (const k of Object.keys(NO_DATA_HERE)) assert.ok(titles.has(k), `NO_DATA_HERE names "${k}", which no dashboard has`);
  const queries = dashboards.flatMap((d) => d.panels.filter((p) => !(d.uid in NO_DATA_HERE) && !(`${d.uid}/${p.title}` in NO_DATA_HERE))
    .flatMap((p) => (p.targets ?? []).map((t) => ({ panel: `${d.uid}/${p.title} (${t.refId})`, expr: fillVariables(t.expr, '20s') }))));
  assert.ok(queries.length >= 30, `${queries.length} queries checked`);
  let empty: string[] = [];
  for (let round = 0; round < 30; round++) {
    empty = [];
    for (const q of queries) {
      const r = await api('/api/v1/query', { query: q.expr });
      assert.equal(r.status, 'success', q.panel);
      if ((r.data as { result: unknown[] }).result.length === 0) empty.push(`${q.panel}: ${q.expr}`);
    }
    if (empty.length === 0) break;
    await sleep(2000);
  }
  assert.deepEqual(empty, [], 'panels without data');
  const plugins = (await api('/api/v1/query', { query: 'controlplane_networkobservability_plugin_up' })).data as { result: { metric: Record<string, string>; value: [number, string] }[] };
  assert.ok(plugins.result.some((s) => s.metric['plugin'] === 'infiniband' && s.value[1] === '0'), 'infiniband (no InfiniBand here) is the plugin shown down');
});
