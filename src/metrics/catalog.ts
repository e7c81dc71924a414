/**
 * Every metric family the agent exports, written once: name, type, help and labels. Code refers to
 * these constants, so a name on a dashboard greps straight to its producer. Names and labels follow
 * Microsoft Retina so that dashboards and alerts carry over.
 */

export type MetricType = 'gauge' | 'counter' | 'histogram';

export interface MetricDef<L extends string = string> {
  readonly name: string;
  readonly type: MetricType;
  readonly help: string;
  readonly labels: readonly L[];
  readonly buckets?: readonly number[];
}

const DATA = 'networkobservability_';
const SELF = 'controlplane_networkobservability_';

/** A frozen metric family definition: the one way families are written (here and in src/operator/metrics.ts). */
export function defineMetric<L extends string>(name: string, type: MetricType, help: string, labels: readonly L[], buckets?: readonly number[]): MetricDef<L> {
  return Object.freeze({ name, type, help, labels: Object.freeze([...labels]), ...(buckets ? { buckets } : {}) });
}
const def = defineMetric;

// --- basic (node) metrics ---------------------------------------------------------------------
export const forwardCount = def(`${DATA}forward_count`, 'gauge', 'Total forwarded packets', ['direction']);
export const forwardBytes = def(`${DATA}forward_bytes`, 'gauge', 'Total forwarded bytes', ['direction']);
export const dropCount = def(`${DATA}drop_count`, 'gauge', 'Total dropped packets', ['reason', 'direction']);
export const dropBytes = def(`${DATA}drop_bytes`, 'gauge', 'Total dropped bytes', ['reason', 'direction']);
export const tcpState = def(`${DATA}tcp_state`, 'gauge', 'Number of TCP sockets by state (IPv4 and IPv6)', ['state']);
export const tcpConnectionRemote = def(`${DATA}tcp_connection_remote`, 'gauge', 'Number of TCP connections by remote address', ['address']);
export const tcpConnectionStats = def(`${DATA}tcp_connection_stats`, 'gauge', 'TCP statistics from the kernel (Tcp, TcpExt, MPTcpExt)', ['statistic_name']);
export const ipConnectionStats = def(`${DATA}ip_connection_stats`, 'gauge', 'IP statistics from the kernel (Ip, IpExt)', ['statistic_name']);
export const udpConnectionStats = def(`${DATA}udp_connection_stats`, 'gauge', 'UDP statistics from the kernel (Udp, sockets)', ['statistic_name']);
export const interfaceStats = def(`${DATA}interface_stats`, 'gauge', 'Interface statistics, per interface', ['interface_name', 'statistic_name']);
export const dnsRequestCount = def(`${DATA}dns_request_count`, 'counter', 'DNS requests seen on the node', []);
export const dnsResponseCount = def(`${DATA}dns_response_count`, 'counter', 'DNS responses seen on the node', []);
export const tcpRetransmissionCount = def(`${DATA}tcp_retransmission_count`, 'counter', 'TCP retransmissions on the node', []);
export const windowsHnsStats = def(`${DATA}windows_hns_stats`, 'gauge', 'HNS endpoint packet counters summed over the node', ['direction']);
export const tcpFlagGauges = def(`${DATA}tcp_flag_gauges`, 'gauge', 'TCP packets by flag (VFP)', ['direction', 'flag']);
export const infinibandCounterStats = def(`${DATA}infiniband_counter_stats`, 'gauge', 'InfiniBand port counters', ['statistic_name', 'device', 'port']);
export const conntrackPacketsTx = def(`${DATA}conntrack_packets_tx`, 'gauge', 'Packets sent by the initiators of the tracked connections (packetparser)', []);
export const conntrackPacketsRx = def(`${DATA}conntrack_packets_rx`, 'gauge', 'Packets sent in reply on the tracked connections (packetparser)', []);
export const conntrackBytesTx = def(`${DATA}conntrack_bytes_tx`, 'gauge', 'Bytes sent by the initiators of the tracked connections (packetparser)', []);
export const conntrackBytesRx = def(`${DATA}conntrack_bytes_rx`, 'gauge', 'Bytes sent in reply on the tracked connections (packetparser)', []);
export const conntrackTotalConnections = def(`${DATA}conntrack_total_connections`, 'gauge', 'Connections in the packetparser connection table', []);
export const infinibandStatusParams = def(`${DATA}infiniband_status_params`, 'gauge', 'InfiniBand interface status parameters', ['statistic_name', 'interface_name']);

// --- advanced (pod-level) metrics: these fixed labels, then the context labels configured by the
// MetricsConfiguration (source_/destination_ + ip, namespace, podname, workload_kind, workload_name,
// service, port, zone in remote context; the same names unprefixed in local context).
export const advForwardCount = def(`${DATA}adv_forward_count`, 'gauge', 'Total forwarded packets', ['direction']);
export const advForwardBytes = def(`${DATA}adv_forward_bytes`, 'gauge', 'Total forwarded bytes', ['direction']);
export const advDropCount = def(`${DATA}adv_drop_count`, 'gauge', 'Total dropped packets', ['reason', 'direction']);
export const advDropBytes = def(`${DATA}adv_drop_bytes`, 'gauge', 'Total dropped bytes', ['reason', 'direction']);
export const advTcpFlagsCount = def(`${DATA}adv_tcpflags_count`, 'gauge', 'TCP packets by flag', ['flag']);
export const advTcpRetransCount = def(`${DATA}adv_tcpretrans_count`, 'gauge', 'TCP retransmissions', ['direction']);
export const advDnsRequestCount = def(`${DATA}adv_dns_request_count`, 'counter', 'DNS requests', ['query_type', 'query']);
export const advDnsResponseCount = def(`${DATA}adv_dns_response_count`, 'counter', 'DNS responses', ['return_code', 'query_type', 'query', 'response', 'num_response']);

/** Retina's buckets: 0.5 ms to 63.5 ms, 1 ms wide. */
const API_LATENCY_BUCKETS_MS = Array.from({ length: 64 }, (_, i) => 0.5 + i);
export const advNodeApiserverLatency = def(`${DATA}adv_node_apiserver_latency`, 'histogram', 'Round-trip time of requests from the node to the API server, in ms', [], API_LATENCY_BUCKETS_MS);
export const advNodeApiserverTcpHandshakeLatency = def(`${DATA}adv_node_apiserver_tcp_handshake_latency`, 'histogram', 'TCP handshake (SYN to SYN-ACK) time from the node to the API server, in ms', [], API_LATENCY_BUCKETS_MS);
export const advNodeApiserverNoResponse = def(`${DATA}adv_node_apiserver_no_response`, 'counter', 'Requests to the API server that saw no reply in time', ['no_response']);

// --- what a MetricsConfiguration may ask for (operator and agent read these same lists) ----------
/** Retina's `metricName` values (`utils.IsAdvancedMetric`); the validator accepts exactly these. */
export const advancedMetricNames = Object.freeze([
  'drop_count', 'drop_bytes', 'forward_count', 'forward_bytes', 'node_connectivity_status', 'node_connectivity_latency_seconds',
  'tcp_state', 'tcp_connection_remote', 'tcp_connection_stats', 'tcp_flag_gauges', 'tcp_retransmission_count',
  'ip_connection_stats', 'udp_connection_stats', 'dns_request_count', 'dns_response_count', 'node_apiserver_latency',
  'node_apiserver_handshake_latency', 'node_apiserver_no_response',
] as const);
export type AdvancedMetricName = (typeof advancedMetricNames)[number];

/**
 * The `adv_*` families each `metricName` fills. Names Retina accepts but never fills (`tcp_state`,
 * `node_connectivity_*`, ...) map to none; the three `node_apiserver_*` names turn on all three
 * API-server families, as in Retina (one latency module).
 */
export const advancedFamilies: Readonly<Record<AdvancedMetricName, readonly MetricDef[]>> = (() => {
  const apiserver = [advNodeApiserverLatency, advNodeApiserverTcpHandshakeLatency, advNodeApiserverNoResponse];
  return Object.freeze({
    drop_count: [advDropCount], drop_bytes: [advDropBytes], forward_count: [advForwardCount], forward_bytes: [advForwardBytes],
    node_connectivity_status: [], node_connectivity_latency_seconds: [], tcp_state: [], tcp_connection_remote: [],
    tcp_connection_stats: [], tcp_flag_gauges: [advTcpFlagsCount], tcp_retransmission_count: [advTcpRetransCount],
    ip_connection_stats: [], udp_connection_stats: [], dns_request_count: [advDnsRequestCount], dns_response_count: [advDnsResponseCount],
    node_apiserver_latency: apiserver, node_apiserver_handshake_latency: apiserver, node_apiserver_no_response: apiserver,
  });
})();

/** Context-label options (`sourceLabels`, `destinationLabels`; case-insensitive, as in Retina). */
export const contextLabelOptions = Object.freeze(['ip', 'namespace', 'podname', 'workload', 'service', 'port', 'zone'] as const);
export type ContextLabelOption = (typeof contextLabelOptions)[number];
/** The one `additionalLabels` value with an effect (Retina: `utils.IsReply`, matched exactly, forward metrics only). */
export const isReplyLabel = 'is_reply';

// --- Cilium's Hubble metrics (hubble.metrics.enabled; served on hubble.metrics.listenAddress) ---
// Cilium's names, help texts and fixed labels (pkg/hubble/metrics/<metric>/handler.go); the context
// labels an entry's options ask for (source, destination, labelsContext, pod labels) follow them.
const HUBBLE = 'hubble_';
export const hubbleFlowsProcessed = def(`${HUBBLE}flows_processed_total`, 'counter', 'Total number of flows processed', ['protocol', 'type', 'subtype', 'verdict']);
export const hubbleDrop = def(`${HUBBLE}drop_total`, 'counter', 'Number of drops', ['reason', 'protocol']);
export const hubbleTcpFlags = def(`${HUBBLE}tcp_flags_total`, 'counter', 'TCP flag occurrences', ['flag', 'family']);
export const hubbleDnsQueries = def(`${HUBBLE}dns_queries_total`, 'counter', 'Number of DNS queries observed', ['rcode', 'qtypes', 'ips_returned']);
export const hubbleDnsResponses = def(`${HUBBLE}dns_responses_total`, 'counter', 'Number of DNS queries observed', ['rcode', 'qtypes', 'ips_returned']);
export const hubbleDnsResponseTypes = def(`${HUBBLE}dns_response_types_total`, 'counter', 'Number of DNS queries observed', ['type', 'qtypes']);
export const hubblePortDistribution = def(`${HUBBLE}port_distribution_total`, 'counter', 'Numbers of packets distributed by destination port', ['protocol', 'port']);
export const hubbleFlowsToWorld = def(`${HUBBLE}flows_to_world_total`, 'counter', 'Total number of flows to reserved:world', ['protocol', 'verdict']);
/** Every hubble_* family (not in allMetrics: they are served on their own port, documented in docs/hubble.md). */
export const hubbleFamilies: readonly MetricDef[] = [
  hubbleFlowsProcessed, hubbleDrop, hubbleTcpFlags, hubbleDnsQueries, hubbleDnsResponses, hubbleDnsResponseTypes, hubblePortDistribution, hubbleFlowsToWorld,
];

// --- the agent's own health -------------------------------------------------------------------
export const pluginManagerFailedToReconcile = def(`${SELF}plugin_manager_failed_to_reconcile`, 'counter', 'Plugin start or run failures, by plugin', ['reason']);
export const lostEventsCounter = def(`${SELF}lost_events_counter`, 'counter', 'Events lost, by where (type) and by whom (reason)', ['type', 'reason']);
/**
 * lost_events_counter `type` values (where events were lost), Retina's where it has one: `kernel`,
 * the ring was full; `parser`, a record that reached the agent but could not be decoded (too short,
 * a bad value); `pipeline`, a pod-level stage threw. `reason` is the plugin (or stage) name.
 */
export const lostEventTypes = Object.freeze({ kernel: 'kernel', parser: 'parser', pipeline: 'pipeline' } as const);
export const parsedPacketsCounter = def(`${SELF}parsed_packets_counter`, 'counter', 'Packet records parsed', []);
export const expiredMetricsCounter = def(`${SELF}expired_metrics_counter`, 'counter', 'Series removed by TTL', ['metric']);
export const metricsModuleSeriesOverflow = def(`${SELF}metrics_module_series_overflow_total`, 'counter', 'Ours: flows folded into the overflow series because a metric reached its series budget', ['metric']);
export const k8sWatchEvents = def(`${SELF}k8s_watch_events_total`, 'counter', 'Ours: Kubernetes watch lists, relists, 410s, reconnects and watchdog restarts', ['resource', 'event']);
export const interfaceAttachFailed = def(`${SELF}interface_attach_failed`, 'gauge', 'Ours: 1 for each interface a plugin could not attach its programs to (the series goes when it attaches or the interface goes)', ['plugin', 'interface']);
export const k8sObjectsRejected = def(`${SELF}k8s_objects_rejected_total`, 'counter', 'Ours: Kubernetes objects skipped because they could not be taken in (transform, malformed), and LIST pages or watch events over the size caps', ['resource', 'reason']);
export const pluginUp = def(`${SELF}plugin_up`, 'gauge', 'Ours: 1 when the plugin runs, 0 when it failed or is starting', ['plugin']);
export const hubbleFlowsSeen = def(`${SELF}hubble_flows_seen_total`, 'counter', 'Ours: enriched flows written into the Hubble flow ring', []);
export const hubbleFlowsLost = def(`${SELF}hubble_flows_lost_total`, 'counter', 'Ours: flows a slow Hubble GetFlows follower lost (the ring overwrote them first; the client got a LostEvent)', []);
export const pktmonPackets = def(`${SELF}pktmon_packets_total`, 'counter', 'Ours: Windows PktMon packets made into one flow each, by what closed them (settled, aged, evicted, dropped), and appearances of closed packets discarded (late)', ['outcome']);
export const hubbleClients = def(`${SELF}hubble_clients`, 'gauge', 'Ours: open Hubble gRPC streams, by RPC (GetFlows, Notify, Watch)', ['rpc']);
/** hnsstats (Windows): `kind` `endpoint_without_port` (an attached HNS endpoint whose VFP port the vSwitch does not list) or `port_without_endpoint` (a VFP port no HNS endpoint claims). */
export const hnsVfpDisagreements = def(`${SELF}hns_vfp_disagreements`, 'gauge', 'Ours: HNS/VFP disagreements seen by hnsstats, by kind (endpoint_without_port, port_without_endpoint)', ['kind']);

/**
 * Stored flow logs (src/export): every flow the export selects ends as exactly one of these per sink.
 * `sink`: `file` or `otlp`; `result`: `written` (handed to the file or accepted by the collector) or
 * `dropped`; `reason` (only when dropped): why, e.g. `queue_full`, `disk_full`, `unwritable`,
 * `rejected`, `retries_exhausted`, `encode`.
 */
export const flowLogRecords = def(`${SELF}flow_log_records_total`, 'counter', 'Ours: flow-log records per sink, written or dropped (with the reason)', ['sink', 'result', 'reason']);
/** Flows the export looked at, by whether the selection (ContainerNetworkLog filters, hubble.export lists) took them. */
export const flowLogFlows = def(`${SELF}flow_log_flows_total`, 'counter', 'Ours: enriched flows the flow-log export saw, by whether its filters selected them', ['selected']);
/** The CPU budget (cpuBudget): what the kernel folded into aggregates instead of writing records, and the controller's state. */
export const foldedRecords = def(`${SELF}folded_records_total`, 'counter', 'Ours: records the kernel folded into in-kernel aggregates instead of writing them one by one (their packets, bytes and flags are reported exactly, in aggregate records), by reason: cpu_budget (over the CPU budget\'s record limit), ring_pressure (the ring three quarters full); aggregate_map_full: records written one by one because the aggregate map had no room', ['plugin', 'reason']);
export const cpuBudgetRecordLimit = def(`${SELF}cpu_budget_record_limit`, 'gauge', 'Ours: records per second per CPU the kernel writes one by one while the CPU budget holds it back (0: no limit)', ['plugin']);
/** packetparser's in-kernel connection table: connections its LRU dropped when full (src/plugins/linux/packetparser/table.ts). */
export const conntrackEvictions = def(`${SELF}conntrack_evictions_total`, 'counter', 'Ours: connections the in-kernel connection table (packetparser) evicted for room when full, with whatever counts they held not yet reported: inserts minus deletions minus the live entries, at each sweep', []);
export const cpuBudgetCores = def(`${SELF}cpu_budget_cores`, 'gauge', 'Ours: the CPU budget (cpuBudget) in cores, and the agent\'s CPU (utime + stime) over the last control period', ['kind']);

/** All families, for docs and tests. */
export const allMetrics: readonly MetricDef[] = [
  forwardCount, forwardBytes, dropCount, dropBytes, tcpState, tcpConnectionRemote, tcpConnectionStats,
  ipConnectionStats, udpConnectionStats, interfaceStats, dnsRequestCount, dnsResponseCount,
  tcpRetransmissionCount, windowsHnsStats, tcpFlagGauges, infinibandCounterStats, infinibandStatusParams,
  conntrackPacketsTx, conntrackPacketsRx, conntrackBytesTx, conntrackBytesRx, conntrackTotalConnections,
  advForwardCount, advForwardBytes, advDropCount, advDropBytes, advTcpFlagsCount, advTcpRetransCount,
  advDnsRequestCount, advDnsResponseCount, advNodeApiserverLatency, advNodeApiserverTcpHandshakeLatency, advNodeApiserverNoResponse,
  pluginManagerFailedToReconcile, lostEventsCounter, parsedPacketsCounter, expiredMetricsCounter,
  metricsModuleSeriesOverflow, k8sWatchEvents, k8sObjectsRejected, pluginUp, interfaceAttachFailed,
  hubbleFlowsSeen, hubbleFlowsLost, hubbleClients, pktmonPackets, flowLogRecords, flowLogFlows, hnsVfpDisagreements,
  foldedRecords, cpuBudgetRecordLimit, cpuBudgetCores, conntrackEvictions,
];
