/**
 * Flow-log aggregation: instead of one record per flow, one record per
 * (source, destination, protocol, port, verdict, direction) per interval. The record keeps the
 * Hubble JSON line's shape and field names (`{flow: {...}, node_name, time}` with `IP`, `l4`,
 * `source`, `destination`, `verdict`, `traffic_direction`) so the same queries read both, and the
 * counts go where Cilium's own exporter aggregation puts them, `flow.aggregate` with Hubble's
 * `ingress_flow_count`, `egress_flow_count`, `unknown_direction_flow_count`, to which we add the
 * `packets` and `bytes` the folded flows carried. `time` is the end of the interval.
 *
 * - source / destination: the endpoint's address and, when the enricher knew it, its namespace, pod
 *   and workload (the first flow of the key supplies them);
 * - port: the server's: a request's destination port (`l4.TCP.destination_port`), a reply's
 *   (is_reply) source port (`l4.TCP.source_port`), so both directions of a connection fold per
 *   service port instead of per ephemeral client port; ICMP has none;
 * - memory is bounded: at most `maxKeys` keys per interval; a flow whose key would be new past the
 *   cap is folded into one overflow record for the interval (`aggregate.overflow: true`, without
 *   addresses), so no flow goes uncounted; `overflowFlows` counts them.
 *
 * The timer emits every interval (unref'd: it keeps no process alive); disposing the aggregator
 * stops it and emits what is open.
 */
import type { Flow } from '../flow/index.js';
import { rfc3339, timestamp } from '../flow/hubble/index.js';
import type { FlowLogRecord } from './types.js';

export interface AggregationOptions {
  /** The interval, ms. */
  readonly intervalMs: number;
  /** Keys kept per interval before flows fold into the overflow record. */
  readonly maxKeys: number;
}

export interface AggregatorContext {
  readonly deliver: (records: FlowLogRecord[]) => void;
  /** For tests: the clock (ms since the epoch). */
  readonly now?: () => number;
}

export interface Aggregator extends Disposable {
  /** Folds one selected flow; `hubble` is its Hubble flow (toHubbleFlow). */
  add(flow: Readonly<Flow>, hubble: Readonly<Record<string, unknown>>): void;
  /** Emits the open interval now (the timer calls it). */
  flush(): void;
  /** Flows folded into overflow records since the start. */
  readonly overflowFlows: number;
}

interface Counts {
  ingress: number;
  egress: number;
  unknown: number;
  packets: number;
  bytes: number;
}

interface Entry extends Counts {
  readonly first: Readonly<Record<string, unknown>>;
  readonly proto: number;
  readonly port: number;
  readonly reply: boolean;
}

const PORTED = new Set([6, 17, 132]);

/** Keeps what the key says about an endpoint: namespace, pod and workloads (labels cost much and vary little). */
function endpointOf(e: unknown): Record<string, unknown> | undefined {
  if (e === undefined || e === null) return undefined;
  const r = e as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  if (r['namespace']) out['namespace'] = r['namespace'];
  if (r['pod_name']) out['pod_name'] = r['pod_name'];
  if (r['workloads']) out['workloads'] = r['workloads'];
  return Object.keys(out).length ? out : undefined;
}

const L4_NAMES: Readonly<Record<number, string>> = { 6: 'TCP', 17: 'UDP', 132: 'SCTP', 1: 'ICMPv4', 58: 'ICMPv6' };

const zero = (): Counts => ({ ingress: 0, egress: 0, unknown: 0, packets: 0, bytes: 0 });

function count(c: Counts, f: Readonly<Flow>): void {
  if (f.direction === 'INGRESS') c.ingress++;
  else if (f.direction === 'EGRESS') c.egress++;
  else c.unknown++;
  c.packets += f.packets;
  c.bytes += f.bytes;
}

const aggregate = (c: Counts): Record<string, unknown> => ({
  ingress_flow_count: c.ingress, egress_flow_count: c.egress, unknown_direction_flow_count: c.unknown, packets: c.packets, bytes: c.bytes,
});

export function createAggregator(o: AggregationOptions, ctx: AggregatorContext): Aggregator {
  const now = ctx.now ?? Date.now;
  let open = new Map<string, Entry>();
  let overflow: Counts | undefined;
  let overflowFlows = 0;

  const record = (e: Entry, time: string): FlowLogRecord => {
    const h = e.first;
    const ip = h['IP'] as Record<string, unknown> | undefined;
    const flow: Record<string, unknown> = { time, verdict: h['verdict'] };
    if (ip) flow['IP'] = { source: ip['source'], destination: ip['destination'], ipVersion: ip['ipVersion'] };
    const name = L4_NAMES[e.proto];
    if (name !== undefined) flow['l4'] = { [name]: PORTED.has(e.proto) ? { [e.reply ? 'source_port' : 'destination_port']: e.port } : {} };
    const src = endpointOf(h['source']);
    if (src) flow['source'] = src;
    const dst = endpointOf(h['destination']);
    if (dst) flow['destination'] = dst;
    flow['Type'] = h['Type'];
    if (h['node_name']) flow['node_name'] = h['node_name'];
    if (h['traffic_direction']) flow['traffic_direction'] = h['traffic_direction'];
    if (e.reply) flow['is_reply'] = true;
    flow['aggregate'] = aggregate(e);
    return { flow, node_name: h['node_name'], time };
  };

  const flush = (): void => {
    const time = rfc3339(timestamp(now()));
    const records: FlowLogRecord[] = [];
    for (const e of open.values()) records.push(record(e, time));
    if (overflow) records.push({ flow: { time, aggregate: { ...aggregate(overflow), overflow: true } }, time });
    open = new Map();
    overflow = undefined;
    if (records.length) ctx.deliver(records);
  };

  const timer = setInterval(flush, o.intervalMs);
  timer.unref();

  return {
    add(f, h) {
      const reply = f.isReply === true;
      const port = !PORTED.has(f.proto) ? 0 : reply ? f.srcPort : f.dstPort;
      const key = `${f.srcIp}|${f.dstIp}|${f.proto}|${port}|${reply ? 'r' : ''}|${f.verdict}|${f.direction}`;
      let e = open.get(key);
      if (e === undefined) {
        if (open.size >= o.maxKeys) {
          overflow ??= zero();
          count(overflow, f);
          overflowFlows++;
          return;
        }
        e = { first: h, proto: f.proto, port, reply, ...zero() };
        open.set(key, e);
      }
      count(e, f);
    },
    flush,
    get overflowFlows() {
      return overflowFlows;
    },
    [Symbol.dispose]() {
      clearInterval(timer);
      flush();
    },
  };
}
