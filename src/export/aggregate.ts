/**
 * Flow-log aggregation: instead of one record per flow, one record per
 * (source, destination, protocol, port, verdict, direction) per interval, with the packets, bytes
 * and flows it folds. The record keeps the Hubble JSON line's shape and field names (`flow` with
 * `IP`, `l4`, `source`, `destination`, `verdict`, `traffic_direction`, `node_name`, `time`) so the
 * same queries read both, and adds `aggregate: {flows, packets, bytes, start_time, end_time}`.
 *
 * - source / destination: the endpoint's address and, when the enricher knew it, its namespace, pod
 *   and workload (the first flow of the key supplies them);
 * - port: the server's port: the destination port of a request, the source port of a reply
 *   (is_reply), so both directions of one connection fold per service port instead of per ephemeral
 *   client port; ICMP has none;
 * - memory is bounded: at most `maxKeys` keys per interval; a flow whose key would be new past the
 *   cap is folded into one overflow record for the interval (`aggregate.overflow: true`, addresses
 *   and pods left out), so no flow goes uncounted; `overflowFlows` counts them.
 *
 * The timer emits every interval (unref'd: it keeps no process alive); close() emits what is open.
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

export interface Aggregator {
  /** Folds one selected flow; `hubble` is its Hubble flow (toHubbleFlow). */
  add(flow: Readonly<Flow>, hubble: Readonly<Record<string, unknown>>): void;
  /** Emits the open interval now (the timer calls it). */
  flush(): void;
  /** Flows folded into overflow records since the start. */
  readonly overflowFlows: number;
  close(): void;
}

interface Entry {
  readonly first: Readonly<Record<string, unknown>>;
  readonly port: number;
  flows: number;
  packets: number;
  bytes: number;
}

const PORTED = new Set([6, 17, 132]);

/** Keeps only what the key says about an endpoint: namespace, pod and workloads (labels vary less but cost much). */
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

export function createAggregator(o: AggregationOptions, ctx: AggregatorContext): Aggregator {
  const now = ctx.now ?? Date.now;
  let open = new Map<string, Entry>();
  let start = now();
  let overflow: { flows: number; packets: number; bytes: number } | undefined;
  let overflowFlows = 0;

  const record = (e: Entry, end: number): FlowLogRecord => {
    const h = e.first;
    const ip = h['IP'] as Record<string, unknown> | undefined;
    const proto = (h['__proto'] as number | undefined) ?? 0;
    const flow: Record<string, unknown> = { time: rfc3339(timestamp(end)), verdict: h['verdict'] };
    if (ip) flow['IP'] = { source: ip['source'], destination: ip['destination'], ipVersion: ip['ipVersion'] };
    const name = L4_NAMES[proto];
    if (name !== undefined) flow['l4'] = PORTED.has(proto) ? { [name]: { destination_port: e.port } } : { [name]: {} };
    const src = endpointOf(h['source']);
    if (src) flow['source'] = src;
    const dst = endpointOf(h['destination']);
    if (dst) flow['destination'] = dst;
    flow['Type'] = h['Type'];
    if (h['node_name']) flow['node_name'] = h['node_name'];
    if (h['traffic_direction']) flow['traffic_direction'] = h['traffic_direction'];
    return {
      flow, node_name: h['node_name'], time: flow['time'],
      aggregate: { flows: e.flows, packets: e.packets, bytes: e.bytes, start_time: rfc3339(timestamp(start)), end_time: flow['time'] },
    };
  };

  const flush = (): void => {
    const end = now();
    const records: FlowLogRecord[] = [];
    for (const e of open.values()) records.push(record(e, end));
    if (overflow) {
      const t = rfc3339(timestamp(end));
      records.push({ flow: { time: t }, time: t, aggregate: { ...overflow, overflow: true, start_time: rfc3339(timestamp(start)), end_time: t } });
    }
    open = new Map();
    overflow = undefined;
    start = end;
    if (records.length) ctx.deliver(records);
  };

  const timer = setInterval(flush, o.intervalMs);
  timer.unref();

  return {
    add(f, h) {
      const port = !PORTED.has(f.proto) ? 0 : f.isReply === true ? f.srcPort : f.dstPort;
      const key = `${f.srcIp}|${f.dstIp}|${f.proto}|${port}|${f.verdict}|${f.direction}`;
      let e = open.get(key);
      if (e === undefined) {
        if (open.size >= o.maxKeys) {
          overflow ??= { flows: 0, packets: 0, bytes: 0 };
          overflow.flows++;
          overflow.packets += f.packets;
          overflow.bytes += f.bytes;
          overflowFlows++;
          return;
        }
        e = { first: { ...h, __proto: f.proto }, port, flows: 0, packets: 0, bytes: 0 };
        open.set(key, e);
      }
      e.flows++;
      e.packets += f.packets;
      e.bytes += f.bytes;
    },
    flush,
    get overflowFlows() {
      return overflowFlows;
    },
    close() {
      clearInterval(timer);
      flush();
    },
  };
}
