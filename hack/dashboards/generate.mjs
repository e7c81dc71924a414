// Writes charts/retina/dashboards/*.json (Grafana dashboards, ours) from the panel lists below: one
// place for the layout, the datasource variable and the filters every query shares. Run
// `node hack/dashboards/generate.mjs` after editing and commit both. Titles that Retina's published
// dashboards also have keep Retina's wording (test/chart/dashboards.test.ts lists them).
import { writeFileSync } from 'node:fs';

const OUT = new URL('../../charts/retina/dashboards/', import.meta.url);
const DS = { type: 'prometheus', uid: '${datasource}' };
/** Every node query filters on these two variables. */
const SEL = 'cluster=~"$cluster", instance=~"$node"';
const r = (metric, extra = '') => `rate(${metric}{${[extra, SEL].filter(Boolean).join(', ')}}[$__rate_interval])`;
const N = 'networkobservability_';
const C = 'controlplane_networkobservability_';

const variable = (name, label, query) => ({
  name, label, type: 'query', datasource: DS, query: { query, refId: `${name}-var` }, refresh: 2,
  includeAll: true, multi: true, allValue: '.*', current: {}, sort: 1,
});
const VARS = [
  { name: 'datasource', label: 'Data source', type: 'datasource', query: 'prometheus', current: {} },
  variable('cluster', 'Cluster', 'label_values(controlplane_networkobservability_plugin_up, cluster)'),
  variable('node', 'Node', 'label_values(controlplane_networkobservability_plugin_up{cluster=~"$cluster"}, instance)'),
];

/** [title, unit, description, ...[expr, legend]] */
function panel([title, unit, description, ...targets], i) {
  return {
    id: i + 1, type: 'timeseries', title, description, datasource: DS,
    gridPos: { h: 8, w: 12, x: (i % 2) * 12, y: Math.floor(i / 2) * 8 },
    fieldConfig: { defaults: { unit }, overrides: [] },
    options: { legend: { displayMode: 'list', placement: 'bottom' }, tooltip: { mode: 'multi' } },
    targets: targets.map(([expr, legendFormat], k) => ({ refId: String.fromCharCode(65 + k), datasource: DS, expr, legendFormat })),
  };
}

function dashboard(file, uid, title, description, panels, vars = VARS) {
  const d = {
    uid, title, description, tags: ['retina-ts', 'networking'], schemaVersion: 39, version: 1, editable: true,
    time: { from: 'now-1h', to: 'now' }, refresh: '30s', timezone: '',
    templating: { list: vars }, panels: panels.map(panel),
  };
  writeFileSync(new URL(file, OUT), JSON.stringify(d, null, 2) + '\n');
}

dashboard('clusters.json', 'retina-ts-clusters', 'retina-ts / Clusters and nodes', 'Traffic and drops per cluster and node (Retina\'s "Clusters" dashboard, our queries).', [
  ['Bytes Forwarded by Cluster', 'Bps', 'Bytes through the nodes\' external interfaces (packetforward).', [`sum by (cluster) (${r(`${N}forward_bytes`)})`, '{{cluster}}']],
  ['Bytes Dropped by Cluster', 'Bps', 'Bytes the kernel dropped (dropreason).', [`sum by (cluster) (${r(`${N}drop_bytes`)})`, '{{cluster}}']],
  ['Packets Dropped By Cluster', 'pps', '', [`sum by (cluster) (${r(`${N}drop_count`)})`, '{{cluster}}']],
  ['Egress Bytes', 'Bps', '', [`sum(${r(`${N}forward_bytes`, 'direction="egress"')})`, 'egress']],
  ['Egress Packets', 'pps', '', [`sum(${r(`${N}forward_count`, 'direction="egress"')})`, 'egress']],
  ['Ingress Bytes', 'Bps', '', [`sum(${r(`${N}forward_bytes`, 'direction="ingress"')})`, 'ingress']],
  ['Ingress Packets', 'pps', '', [`sum(${r(`${N}forward_count`, 'direction="ingress"')})`, 'ingress']],
  ['Packets Dropped - Egress', 'pps', 'Drops of packets built on the node.', [`sum(${r(`${N}drop_count`, 'direction="egress"')})`, 'egress']],
  ['Packets Dropped - Ingress', 'pps', 'Drops of packets that came in through an interface.', [`sum(${r(`${N}drop_count`, 'direction="ingress"')})`, 'ingress']],
  ['Bytes Dropped by Reason', 'Bps', 'reason: the kernel\'s drop reason, or Retina\'s value with dropReasonNames: retina.', [`sum by (reason) (${r(`${N}drop_bytes`)}) > 0`, '{{reason}}']],
  ['Packets Dropped by Reason', 'pps', 'Kernel drop reasons, plus the interfaces\' rx_dropped/tx_dropped counters as reasons.',
    [`sum by (reason) (${r(`${N}drop_count`)}) > 0`, '{{reason}}'],
    [`sum by (reason) (label_replace(${r(`${N}interface_stats`, 'statistic_name=~"rx_dropped|tx_dropped"')}, "reason", "$1", "statistic_name", "(.*)")) > 0`, '{{reason}}']],
  ['Bytes Dropped by Node', 'Bps', '', [`sum by (instance) (${r(`${N}drop_bytes`)}) > 0`, '{{instance}}']],
  ['Packets Dropped by Node', 'pps', '', [`sum by (instance) (${r(`${N}drop_count`)}) > 0`, '{{instance}}']],
  ['TCP Active Connections by State', 'short', 'TCP sockets per state, IPv4 and IPv6 (linuxutil).', [`sum by (state) (${N}tcp_state{${SEL}})`, '{{state}}']],
  ['TCP Active Connections by Remote Addr', 'short', 'Sockets with a remote end (address="AllIPs", as Retina).', [`sum by (address) (${N}tcp_connection_remote{${SEL}, address!~"127.0.0.1|0.0.0.0"})`, '{{address}}']],
  ['TCP Connection Timeouts', 'ops', 'TcpExt TCPTimeouts.', [`sum(${r(`${N}tcp_connection_stats`, 'statistic_name="TCPTimeouts"')})`, 'timeouts']],
  ['TCP Connection Resets', 'ops', 'Linux: Tcp EstabResets (connections reset from ESTABLISHED or CLOSE_WAIT) and OutRsts (resets sent); Windows: VFP ResetCount.', [`sum by (statistic_name) (${r(`${N}tcp_connection_stats`, 'statistic_name=~"EstabResets|OutRsts|ResetCount"')})`, '{{statistic_name}}']],
  ['TCP Retransmissions', 'ops', 'Retransmitted segments on the node (tcpretrans, when enabled).', [`sum by (instance) (${r(`${N}tcp_retransmission_count`)})`, '{{instance}}']],
  ['UDP Connections', 'short', 'UDP sockets, IPv4 and IPv6.', [`sum(${N}udp_connection_stats{statistic_name="ACTIVE", ${SEL}})`, 'sockets']],
  ['RX Packets by Interface', 'pps', '', [`sum by (interface_name) (${r(`${N}interface_stats`, 'statistic_name="rx_packets"')})`, '{{interface_name}}']],
  ['TX Packets by Interface', 'pps', '', [`sum by (interface_name) (${r(`${N}interface_stats`, 'statistic_name="tx_packets"')})`, '{{interface_name}}']],
  ['Dropped Rx Packets', 'pps', 'Interfaces\' rx_dropped (a per-node sum; shown only when non-zero).', [`sum by (instance) (${r(`${N}interface_stats`, 'statistic_name="rx_dropped"')}) > 0`, '{{instance}}']],
  ['Dropped Tx Packets', 'pps', 'Interfaces\' tx_dropped (shown only when non-zero).', [`sum by (instance) (${r(`${N}interface_stats`, 'statistic_name="tx_dropped"')}) > 0`, '{{instance}}']],
  ['Interface Errors', 'ops', 'Every error/drop counter of every interface (the kernel\'s and the driver\'s), per node and interface.', [`sum by (instance, interface_name, statistic_name) (${r(`${N}interface_stats`, 'statistic_name=~".*(err|drop).*"')}) > 0`, '{{instance}} {{interface_name}} {{statistic_name}}']],
]);

dashboard('dns.json', 'retina-ts-dns', 'retina-ts / DNS', 'DNS on the nodes (basic) and per query (pod level: adv_dns_*), as Retina\'s "Standard / DNS" dashboard.', [
  ['DNS Requests per Node', 'reqps', 'Every DNS query the node sends, receives or forwards, counted once (dns).', [`sum by (instance) (${r(`${N}dns_request_count`)})`, '{{instance}}']],
  ['DNS Responses per Node', 'reqps', '', [`sum by (instance) (${r(`${N}dns_response_count`)})`, '{{instance}}']],
  ['DNS Requests', 'reqps', 'Pod level: by query type.', [`sum by (query_type) (${r(`${N}adv_dns_request_count`)}) > 0`, '{{query_type}}']],
  ['DNS Responses', 'reqps', 'Pod level: by query type.', [`sum by (query_type) (${r(`${N}adv_dns_response_count`)}) > 0`, '{{query_type}}']],
  ['DNS Missing Response', 'percent', 'Requests without a response, % by query type, while responses flow.',
    [`(1 - (sum by (query_type) (${N}adv_dns_response_count{${SEL}}) / sum by (query_type) (${N}adv_dns_request_count{${SEL}}))) * 100 * ((sum by (query_type) (${r(`${N}adv_dns_response_count`)})) > bool 0) > 0`, '{{query_type}}']],
  ['DNS Response IPs Returned', 'reqps', 'Successful responses by the number of answers.', [`sum by (num_response) (${r(`${N}adv_dns_response_count`, 'return_code="NoError"')}) > 0`, '{{num_response}}']],
  ['DNS Errors', 'reqps', 'Responses with an error code.', [`sum by (return_code, query_type) (${r(`${N}adv_dns_response_count`, 'return_code!="NoError"')}) > 0`, '{{return_code}} {{query_type}}']],
  ['Top DNS Queries (Requests)', 'reqpm', '', [`round(topk(10, sum by (query, query_type) (60 * ${r(`${N}adv_dns_request_count`)})), 1)`, '{{query}} {{query_type}}']],
  ['Top DNS Queries (Responses)', 'reqpm', '', [`round(topk(10, sum by (query, query_type) (60 * ${r(`${N}adv_dns_response_count`)})), 1)`, '{{query}} {{query_type}}']],
  ['DNS Response Table', 'reqpm', 'Answers per query.', [`sum by (query, query_type, response, return_code) (60 * ${r(`${N}adv_dns_response_count`, 'num_response!="0", response!=""')})`, '{{query}} {{response}}']],
]);

const POD = [...VARS, variable('pod', 'Pod', 'label_values(networkobservability_adv_forward_count{cluster=~"$cluster"}, source_podname)')];
const a = (metric, extra) => r(`${N}${metric}`, extra);
dashboard('pod-traffic.json', 'retina-ts-pod-traffic', 'retina-ts / Pod traffic', 'Pod-level (advanced, remote context) traffic and drops, as Retina\'s "Standard / Pod Traffic" dashboard.', [
  ['Outgoing Traffic', 'pps', 'Packets from the selected pods.', [`sum(${a('adv_forward_count', 'source_podname=~"$pod"')})`, 'out']],
  ['Incoming Traffic', 'pps', 'Packets to the selected pods.', [`sum(${a('adv_forward_count', 'destination_podname=~"$pod"')})`, 'in']],
  ['All Outgoing pps per pod', 'pps', 'Pod to pod.', [`sum by (source_podname) (${a('adv_forward_count', 'source_podname!="", destination_podname!=""')})`, '{{source_podname}}']],
  ['All Incoming pps per pod', 'pps', 'Pod to pod.', [`sum by (destination_podname) (${a('adv_forward_count', 'source_podname!="", destination_podname!=""')})`, '{{destination_podname}}']],
  ['Dropped pps per source pod', 'pps', '', [`sum by (source_podname) (${a('adv_drop_count', 'source_podname!=""')})`, '{{source_podname}}']],
  ['Dropped pps per Destination pod', 'pps', 'Retina\'s panel reads adv_forward_count here (a slip); this one reads drops.', [`sum by (destination_podname) (${a('adv_drop_count', 'destination_podname!=""')})`, '{{destination_podname}}']],
  ['Dropped pps by Reason', 'pps', '', [`sum by (reason) (${a('adv_drop_count', '')})`, '{{reason}}']],
  ['Outgoing Bytes per pod', 'Bps', '', [`sum by (source_podname) (${a('adv_forward_bytes', 'source_podname!=""')})`, '{{source_podname}}']],
  ['Dropped Bytes per pod', 'Bps', '', [`sum by (source_podname, reason) (${a('adv_drop_bytes', '')})`, '{{source_podname}} {{reason}}']],
  ['Outgoing pps to non-pod addresses', 'pps', 'Traffic from an address that is no pod, by source IP (Retina: "All Outgoing pps per pod" by IP).', [`sum by (source_ip) (${a('adv_forward_count', 'source_podname=""')})`, '{{source_ip}}']],
  ['Incoming pps from non-pod addresses', 'pps', 'Traffic to an address that is no pod, by destination IP.', [`sum by (destination_ip) (${a('adv_forward_count', 'destination_podname=""')})`, '{{destination_ip}}']],
  ['Top 10 Pods Outgoing traffic', 'pps', '', [`topk(10, sum by (source_podname) (${a('adv_forward_count', 'source_podname!=""')}))`, '{{source_podname}}']],
  ['Top 10 Pods Incoming traffic', 'pps', '', [`topk(10, sum by (destination_podname) (${a('adv_forward_count', 'destination_podname!=""')}))`, '{{destination_podname}}']],
  ['TCP Flags by Pod', 'pps', '', [`sum by (source_podname, flag) (${a('adv_tcpflags_count', '')})`, '{{source_podname}} {{flag}}']],
  ['TCP Retransmissions by Pod', 'ops', '', [`sum by (source_podname) (${a('adv_tcpretrans_count', '')})`, '{{source_podname}}']],
], POD);

const q = (p, metric) => `histogram_quantile(${p}, sum by (le, instance) (${r(`${N}${metric}_bucket`)}))`;
dashboard('apiserver.json', 'retina-ts-apiserver', 'retina-ts / API server latency', 'Node to API-server latency (pod level: adv_node_apiserver_*; the API server is always an IP of interest).', [
  ['API server latency', 'ms', 'TCP handshake (SYN to SYN-ACK) from the node to the API server, p50/p99 per node: the histogram Retina\'s panel of this title reads.',
    [q(0.5, 'adv_node_apiserver_tcp_handshake_latency'), 'p50 {{instance}}'], [q(0.99, 'adv_node_apiserver_tcp_handshake_latency'), 'p99 {{instance}}']],
  ['API server request latency', 'ms', 'Round trip of requests from the node to the API server, p50/p99 per node.',
    [q(0.5, 'adv_node_apiserver_latency'), 'p50 {{instance}}'], [q(0.99, 'adv_node_apiserver_latency'), 'p99 {{instance}}']],
  ['API server requests', 'reqps', 'Requests measured per node.', [`sum by (instance) (${r(`${N}adv_node_apiserver_latency_count`)})`, '{{instance}}']],
  ['API server no response', 'ops', 'Requests that saw no reply in time.', [`sum by (instance) (${r(`${N}adv_node_apiserver_no_response`)})`, '{{instance}}']],
]);

dashboard('windows.json', 'retina-ts-windows', 'retina-ts / Windows nodes', 'Windows nodes (hnsstats): HNS endpoint counters summed per node, VFP TCP flags, drops.', [
  ['HNS Packets', 'pps', 'windows_hns_stats by direction (win_packets_sent_count, win_packets_recv_count).', [`sum by (instance, direction) (${r(`${N}windows_hns_stats`)})`, '{{instance}} {{direction}}']],
  ['Windows Drops by Reason', 'pps', 'HNS endpoint drops (reason="endpoint") and VFP ACL drops (reason="aclrule").', [`sum by (instance, reason, direction) (${r(`${N}drop_count`, 'reason=~"endpoint|aclrule"')})`, '{{instance}} {{reason}} {{direction}}']],
  ['Windows TCP Packets', 'pps', 'VFP TCP packets (tcp_flag_gauges).', [`sum(${r(`${N}tcp_flag_gauges`)})`, 'tcp']],
  ['Windows TCP RST Packets', 'pps', '', [`sum(${r(`${N}tcp_flag_gauges`, 'flag="RST"')})`, 'rst']],
  ['Windows TCP SYN-ACK Packets', 'pps', '', [`sum(${r(`${N}tcp_flag_gauges`, 'flag="SYNACK"')})`, 'syn-ack']],
  ['Windows TCP Connections (VFP)', 'ops', 'VFP connection counters, IN direction: ResetCount, ClosedFin, ResetSyn, TcpHalfOpenTimeouts, Verified, TimedOutCount, TimeWaitExpiredCount.', [`sum by (instance, statistic_name) (${r(`${N}tcp_connection_stats`, 'statistic_name=~"ResetCount|ClosedFin|ResetSyn|TcpHalfOpenTimeouts|Verified|TimedOutCount|TimeWaitExpiredCount"')})`, '{{instance}} {{statistic_name}}']],
  ['Windows TCP Flags', 'pps', '', [`sum by (instance, flag, direction) (${r(`${N}tcp_flag_gauges`)})`, '{{instance}} {{flag}} {{direction}}']],
]);

// Windows, pod level (retina#1465): Retina's Windows eBPF dashboards (deploy/grafana-dashboards/standard-windows-ebpf,
// local context: podname, namespace) over pktmon's flows, one per packet, plus pktmon's own health.
const WIN_POD = [...VARS, variable('namespace', 'Namespace', 'label_values(networkobservability_adv_forward_count{cluster=~"$cluster"}, namespace)')];
const w = (metric, extra = '') => r(`${N}${metric}`, ['namespace=~"$namespace"', extra].filter(Boolean).join(', '));
dashboard('windows-pods.json', 'retina-ts-windows-pods', 'retina-ts / Windows pods (advanced)', 'Windows pod-level traffic and drops from pktmon (one flow per packet; MetricsConfiguration with local context: podname, namespace), as Retina\'s Windows eBPF dashboards.', [
  ['Total Forward Rate (pps)', 'pps', 'Packets of the selected namespaces, one per packet however many components PktMon saw it at.', [`sum(${w('adv_forward_count')})`, 'forwarded']],
  ['Total Forward Bytes (Bps)', 'Bps', 'Each packet\'s original size.', [`sum(${w('adv_forward_bytes')})`, 'forwarded']],
  ['Drop Rate (pps)', 'pps', 'Packets PktMon saw dropped, each counted once.', [`sum(${w('adv_drop_count')})`, 'dropped']],
  ['Drop Percentage', 'percent', 'Dropped / (forwarded + dropped).', [`100 * sum(${w('adv_drop_count')}) / (sum(${w('adv_forward_count')}) + sum(${w('adv_drop_count')}))`, 'drop %']],
  ['Drop Rate by Reason (Top 10)', 'pps', 'PktMon\'s drop-reason names.', [`topk(10, sum by (reason) (${w('adv_drop_count')}))`, '{{reason}}']],
  ['Drops by Direction (Egress vs Ingress)', 'pps', '', [`sum by (direction) (${w('adv_drop_count')})`, '{{direction}}']],
  ['Drop Bytes vs Count Correlation', 'pps', 'Dropped packets and their bytes (adv_drop_bytes: Retina has none on Windows).', [`sum(${w('adv_drop_count')})`, 'packets'], [`sum(${w('adv_drop_bytes')})`, 'bytes']],
  ['Top 10 Pods by Drop Rate', 'pps', '', [`topk(10, sum by (podname, namespace) (${w('adv_drop_count', 'podname!=""')}))`, '{{namespace}}/{{podname}}']],
  ['Top 10 Pods - Outgoing Traffic', 'pps', '', [`topk(10, sum by (podname, namespace) (${w('adv_forward_count', 'podname!="", direction="egress"')}))`, '{{namespace}}/{{podname}}']],
  ['Top 10 Pods - Incoming Traffic', 'pps', '', [`topk(10, sum by (podname, namespace) (${w('adv_forward_count', 'podname!="", direction="ingress"')}))`, '{{namespace}}/{{podname}}']],
  ['Forward Bytes by Pod', 'Bps', '', [`sum by (podname) (${w('adv_forward_bytes', 'podname!=""')})`, '{{podname}}']],
  ['Drop Reasons by Pod', 'pps', '', [`sum by (podname, reason) (${w('adv_drop_count', 'podname!=""')})`, '{{podname}} {{reason}}']],
  ['TCP Flags by Pod', 'pps', '', [`sum by (podname, flag) (${w('adv_tcpflags_count', 'podname!=""')})`, '{{podname}} {{flag}}']],
  ['Namespace Traffic Breakdown (Top 10)', 'pps', '', [`topk(10, sum by (namespace) (${w('adv_forward_count', 'namespace!=""')}))`, '{{namespace}}']],
  ['Dropped Bytes by PktMon Reason (node)', 'Bps', 'drop_bytes from pktmon, per node and reason.', [`sum by (instance, reason) (${r(`${N}drop_bytes`, 'reason=~"Drop_.*|UnknownDropReason.*"')}) > 0`, '{{instance}} {{reason}}']],
  ['PktMon Packets by Outcome', 'ops', 'How pktmon closed each packet (settled, aged, evicted, dropped, non_ip) and late appearances it discarded.', [`sum by (instance, outcome) (${r(`${C}pktmon_packets_total`)})`, '{{instance}} {{outcome}}']],
  ['PktMon Lost Events', 'ops', 'Events lost before decoding: the consumer queue full or ETW losses (kernel), short records (parser).', [`sum by (instance, type) (${r(`${C}lost_events_counter`, 'reason="pktmon"')}) > 0`, '{{instance}} {{type}}']],
], WIN_POD);

dashboard('agent-health.json', 'retina-ts-agent-health', 'retina-ts / Agent health', 'The agent\'s own health: plugins, losses, series budget, Kubernetes and attach failures.', [
  ['Plugins up', 'short', '1 while a plugin runs, 0 when it failed or is starting.', [`min by (instance, plugin) (${C}plugin_up{${SEL}})`, '{{instance}} {{plugin}}']],
  ['Plugins not running', 'short', 'Plugins whose plugin_up is 0, per node.', [`count by (instance) (${C}plugin_up{${SEL}} == 0)`, '{{instance}}']],
  ['Plugin reconcile failures', 'short', 'Plugin start or run failures since the agent started (a failure that is not retried counts once).', [`sum by (instance, reason) (${C}plugin_manager_failed_to_reconcile{${SEL}})`, '{{instance}} {{reason}}']],
  ['Lost events', 'ops', 'Events lost, by where (kernel ring, parser, pipeline) and by whom.', [`sum by (instance, type, reason) (${r(`${C}lost_events_counter`)}) > 0`, '{{instance}} {{type}} {{reason}}']],
  ['Parsed packets', 'ops', 'Packet records parsed.', [`sum by (instance) (${r(`${C}parsed_packets_counter`)})`, '{{instance}}']],
  ['Series overflow', 'ops', 'Pod level: flows folded into a metric\'s overflow series (its series budget is reached).', [`sum by (instance, metric) (${r(`${C}metrics_module_series_overflow_total`)}) > 0`, '{{instance}} {{metric}}']],
  ['Expired series', 'ops', 'Pod level: series removed by their ttl.', [`sum by (metric) (${r(`${C}expired_metrics_counter`)})`, '{{metric}}']],
  ['Kubernetes objects rejected', 'ops', 'Objects skipped (transform, malformed) and pages or events over the caps.', [`sum by (instance, resource, reason) (${r(`${C}k8s_objects_rejected_total`)}) > 0`, '{{instance}} {{resource}} {{reason}}']],
  ['Kubernetes watch events', 'ops', 'Lists, relists, 410s, reconnects, watchdog restarts.', [`sum by (resource, event) (${r(`${C}k8s_watch_events_total`)})`, '{{resource}} {{event}}']],
  ['Interface attach failures', 'short', 'Interfaces a plugin could not attach its programs to.', [`sum by (instance, plugin, interface) (${C}interface_attach_failed{${SEL}})`, '{{instance}} {{plugin}} {{interface}}']],
  ['Connection table evictions', 'ops', 'Pod level: connections packetparser\'s in-kernel connection table evicted when full, with the counts they held (raise packetParserConntrackMaxEntries).', [`sum by (instance) (${r(`${C}conntrack_evictions_total`)}) > 0`, '{{instance}}']],
  ['Series per family', 'short', 'Series the agent exports per metric family (cardinality).', [`sort_desc(count by (__name__) ({__name__=~"(controlplane_)?networkobservability_.+", ${SEL}}))`, '{{__name__}}']],
]);
