/**
 * The chart's dashboards, statically: Grafana shape (uid, title, schemaVersion, the `${datasource}`
 * variable on every panel and query), every query parses (promtool), every metric it reads is in
 * our catalog, and every panel of Retina's published Standard dashboards has its counterpart.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { allMetrics } from '../../src/metrics/catalog.js';
import { loadDashboards, metricNames, panelQueries, promtoolParse, variableExpr } from './dashboards.js';

const dashboards = loadDashboards();

const N = 'networkobservability_';
const cl = (...families: string[]): [string, string[]] => ['retina-ts-clusters', families.map((f) => N + f)];
/**
 * Retina's panel titles (microsoft/retina 532c5aa, deploy/grafana-dashboards/{clusters,standard-dns,
 * standard-pod-level}.json) → our dashboard holding the panel of that title, and the families it must
 * read for the same meaning. Ours differ where the names do: Retina's `tcp_flag_counters` is
 * `tcp_flag_gauges`, `node_apiserver_handshake_latency_ms` is `adv_node_apiserver_tcp_handshake_latency`,
 * and its DNS panels' per-query labels live on the pod-level `adv_dns_*` families (Retina's basic DNS
 * counters have no labels, so those panels of Retina's show nothing unless pod level is on).
 */
const RETINA_PANELS: Readonly<Record<string, [string, string[]]>> = {
  'Bytes Forwarded by Cluster': cl('forward_bytes'), 'Bytes Dropped by Cluster': cl('drop_bytes'), 'Packets Dropped By Cluster': cl('drop_count'),
  'Egress Bytes': cl('forward_bytes'), 'Egress Packets': cl('forward_count'), 'Ingress Bytes': cl('forward_bytes'), 'Ingress Packets': cl('forward_count'),
  'Packets Dropped - Egress': cl('drop_count'), 'Packets Dropped - Ingress': cl('drop_count'), 'Bytes Dropped by Reason': cl('drop_bytes'),
  'Packets Dropped by Reason': cl('drop_count', 'interface_stats'), 'Bytes Dropped by Node': cl('drop_bytes'), 'Packets Dropped by Node': cl('drop_count'),
  'TCP Active Connections by State': cl('tcp_state'), 'TCP Active Connections by Remote Addr': cl('tcp_connection_remote'),
  'TCP Connection Timeouts': cl('tcp_connection_stats'), 'TCP Connection Resets': cl('tcp_connection_stats'), 'UDP Connections': cl('udp_connection_stats'),
  'RX Packets by Interface': cl('interface_stats'), 'TX Packets by Interface': cl('interface_stats'),
  'Dropped Rx Packets': cl('interface_stats'), 'Dropped Tx Packets': cl('interface_stats'),
  'Windows TCP Packets': ['retina-ts-windows', [`${N}tcp_flag_gauges`]], 'Windows TCP RST Packets': ['retina-ts-windows', [`${N}tcp_flag_gauges`]],
  'Windows TCP SYN-ACK Packets': ['retina-ts-windows', [`${N}tcp_flag_gauges`]],
  'DNS Requests': ['retina-ts-dns', [`${N}adv_dns_request_count`]], 'DNS Responses': ['retina-ts-dns', [`${N}adv_dns_response_count`]],
  'DNS Missing Response': ['retina-ts-dns', [`${N}adv_dns_response_count`, `${N}adv_dns_request_count`]],
  'DNS Response IPs Returned': ['retina-ts-dns', [`${N}adv_dns_response_count`]], 'DNS Errors': ['retina-ts-dns', [`${N}adv_dns_response_count`]],
  'Top DNS Queries (Requests)': ['retina-ts-dns', [`${N}adv_dns_request_count`]], 'Top DNS Queries (Responses)': ['retina-ts-dns', [`${N}adv_dns_response_count`]],
  'DNS Response Table': ['retina-ts-dns', [`${N}adv_dns_response_count`]],
  'Outgoing Traffic': ['retina-ts-pod-traffic', [`${N}adv_forward_count`]], 'Incoming Traffic': ['retina-ts-pod-traffic', [`${N}adv_forward_count`]],
  'All Outgoing pps per pod': ['retina-ts-pod-traffic', [`${N}adv_forward_count`]], 'All Incoming pps per pod': ['retina-ts-pod-traffic', [`${N}adv_forward_count`]],
  'Dropped pps per source pod': ['retina-ts-pod-traffic', [`${N}adv_drop_count`]],
  // Retina's reads adv_forward_count under this title (a slip); the title's meaning is drops.
  'Dropped pps per Destination pod': ['retina-ts-pod-traffic', [`${N}adv_drop_count`]],
  'Top 10 Pods Outgoing traffic': ['retina-ts-pod-traffic', [`${N}adv_forward_count`]], 'Top 10 Pods Incoming traffic': ['retina-ts-pod-traffic', [`${N}adv_forward_count`]],
  'API server latency': ['retina-ts-apiserver', [`${N}adv_node_apiserver_tcp_handshake_latency_bucket`]],
};
/**
 * Retina's panels we leave out, and why. `Current ... by Cluster` are stat twins of the "by Cluster"
 * time series we keep; the rest read counters no agent exports (Retina's curated lists have no
 * `tcptsreorder`, and its ethtool filter keeps only err/drop names, as ours does).
 */
const RETINA_LEFT_OUT: Readonly<Record<string, string>> = {
  'Current Traffic by Cluster': 'a stat of "Bytes Forwarded by Cluster"',
  'Current Dropped Traffic by Cluster': 'a stat of "Bytes Dropped by Cluster"',
  'Packets Dropped - Unknown': 'direction is always ingress or egress here (Retina: unknown for netfilter drops)',
  'TCP Connection Reorders': 'TcpExt TCPTSReorder is in neither curated list; the panel is empty on Retina too',
  'Rx Cache Full error': 'not an err/drop ethtool counter: exported by neither agent',
  'Tx No Op Errors': 'not an err/drop ethtool counter: exported by neither agent',
  'Rx Comp Full Errors': 'not an err/drop ethtool counter: exported by neither agent',
  'Tx Send Full Errors': 'not an err/drop ethtool counter: exported by neither agent',
};

test('seven dashboards, each with a unique uid, a title, a schemaVersion and the datasource variable', () => {
  assert.deepEqual(dashboards.map((d) => d.file), ['agent-health.json', 'apiserver.json', 'clusters.json', 'dns.json', 'pod-traffic.json', 'windows-pods.json', 'windows.json']);
  assert.equal(new Set(dashboards.map((d) => d.uid)).size, dashboards.length);
  for (const d of dashboards) {
    assert.match(d.uid, /^retina-ts-[a-z-]+$/, d.file);
    assert.ok(d.uid.length <= 40, `${d.file}: Grafana uids are at most 40 characters`);
    assert.match(d.title, /^retina-ts \/ /, d.file);
    assert.ok(Number.isInteger(d.schemaVersion) && d.schemaVersion >= 36, `${d.file}: schemaVersion ${d.schemaVersion}`);
    const ds = d.templating.list.find((v) => v.name === 'datasource');
    assert.deepEqual([ds?.type, ds?.query], ['datasource', 'prometheus'], `${d.file}: a datasource variable of type prometheus`);
    assert.ok(d.panels.length > 0, d.file);
    assert.equal(new Set(d.panels.map((p) => p.id)).size, d.panels.length, `${d.file}: panel ids are unique`);
    for (const p of d.panels) {
      assert.equal(p.datasource?.uid, '${datasource}', `${d.file} "${p.title}": panel datasource`);
      assert.ok((p.targets ?? []).length > 0, `${d.file} "${p.title}": has queries`);
      for (const t of p.targets ?? []) assert.equal(t.datasource?.uid, '${datasource}', `${d.file} "${p.title}" ${t.refId}`);
    }
    for (const v of d.templating.list.filter((x) => x.type === 'query')) assert.equal(v.datasource?.uid, '${datasource}', `${d.file} variable ${v.name}`);
  }
});

test('every panel and variable query parses (promtool check rules)', () => {
  const exprs = [...panelQueries(dashboards).map((q) => q.expr), ...dashboards.flatMap((d) => d.templating.list.map(variableExpr).filter((e) => e !== undefined).map((e) => e.replace(/\$cluster/g, '.*')))];
  assert.ok(exprs.length > 60, `${exprs.length} queries`);
  assert.match(promtoolParse(exprs), new RegExp(`SUCCESS: ${exprs.length} rules found`));
});

test('every metric a query reads is in the catalog (histograms by their _bucket/_count/_sum series)', () => {
  const known = new Set(allMetrics.flatMap((m) => (m.type === 'histogram' ? [`${m.name}_bucket`, `${m.name}_count`, `${m.name}_sum`] : [m.name])));
  const read = new Set<string>();
  for (const q of panelQueries(dashboards)) {
    for (const n of metricNames(q.expr)) {
      assert.ok(known.has(n), `${q.dashboard} "${q.panel}" reads ${n}, which no family of the catalog exports`);
      read.add(n);
    }
  }
  for (const m of allMetrics.filter((x) => /drop|forward|dns|plugin_up|lost_events|overflow|interface_attach|rejected|windows_hns/.test(x.name))) {
    assert.ok([...read].some((n) => n.startsWith(m.name)), `no panel shows ${m.name}`);
  }
});

test("every panel of Retina's Standard dashboards has its counterpart: same title, same families", () => {
  const ours = new Map(dashboards.flatMap((d) => d.panels.map((p) => [p.title, { uid: d.uid, reads: p.targets?.flatMap((t) => metricNames(t.expr)) ?? [] }] as const)));
  for (const [title, [uid, families]] of Object.entries(RETINA_PANELS)) {
    assert.equal(ours.get(title)?.uid, uid, `Retina's panel "${title}"`);
    assert.deepEqual([...new Set(ours.get(title)?.reads)].sort(), [...families].sort(), `"${title}" reads what Retina's reads`);
  }
  for (const title of Object.keys(RETINA_LEFT_OUT)) assert.equal(ours.get(title), undefined, `"${title}" is listed as left out`);
  assert.equal(Object.keys(RETINA_PANELS).length + Object.keys(RETINA_LEFT_OUT).length, 50, "Retina's 50 distinct titles of panels with queries");
});
