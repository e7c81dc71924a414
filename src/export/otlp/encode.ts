/**
 * Flow-log records → an OTLP ExportLogsServiceRequest (opentelemetry-proto v1.11.0, vendored in
 * proto/opentelemetry): the log records, and the request in OTLP/JSON (lowerCamelCase names, 64-bit
 * integers as decimal strings, as the OTLP specification's JSON encoding says). The protobuf bytes of
 * the same request, for gRPC and OTLP/HTTP protobuf, are wire.ts's.
 *
 * One LogRecord per flow-log record:
 * - body: the record as the JSON string the file sink writes as a line (`{"flow":{...},"node_name":
 *   ...,"time":...}`, `hubble observe -o json`'s shape). A string, not a kvlist: Azure Monitor's
 *   Log Analytics keeps a log's Body as one string column (parse_json() reads it back), most
 *   collector exporters (Loki, Elasticsearch, Splunk HEC, file) take string bodies as they are, and
 *   whoever already reads Hubble exporter files gets the same line; it is also far cheaper to encode
 *   than a nested kvlist of ~30 values per flow.
 * - attributes: the fields people filter on, flat (OpenTelemetry semantic conventions where one
 *   exists: source.address, destination.port, network.transport; the Kubernetes ones under
 *   source.k8s.* / destination.k8s.*; the Hubble ones under hubble.*). `hubble.drop_reason` of a
 *   drop is the kernel's (or PktMon's) reason name, which our flows carry in Summary (`drop reason:
 *   NETFILTER_DROP`), or Hubble's drop_reason_desc when a record has one.
 * - time_unix_nano: the flow's time; observed_time_unix_nano: when the sink took it.
 * - resource: k8s.node.name, service.name (retina-agent); scope: retina-ts/flow-logs.
 */
import { dropReasonOfSummary } from '../../flow/hubble/index.js';
import type { FlowLogRecord } from '../types.js';

/** One attribute: string or integer. */
export type AttrValue = string | number;

export interface OtlpLogRecord {
  readonly timeUnixNano: string;
  readonly observedTimeUnixNano: string;
  readonly body: string;
  readonly attributes: ReadonlyArray<readonly [string, AttrValue]>;
}

export interface OtlpResourceInfo {
  readonly nodeName: string;
  readonly serviceName: string;
  readonly serviceVersion: string;
}

export const SCOPE_NAME = 'retina-ts/flow-logs';

type Obj = Readonly<Record<string, unknown>>;

function obj(v: unknown): Obj | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : undefined;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

function int(v: unknown): number | undefined {
  const n = typeof v === 'string' ? Number(v) : v;
  return typeof n === 'number' && Number.isSafeInteger(n) ? n : undefined;
}

/**
 * RFC 3339 (UTC or with an offset, up to 9 fraction digits) → nanoseconds since the epoch as a
 * decimal string; undefined when it is not one.
 */
export function rfc3339ToUnixNano(s: unknown): string | undefined {
  if (typeof s !== 'string') return undefined;
  const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$/i.exec(s);
  if (!m) return undefined;
  const ms = Date.parse(`${m[1]}${m[3]}`);
  if (!Number.isFinite(ms)) return undefined;
  const frac = (m[2] ?? '').padEnd(9, '0');
  return (BigInt(ms) * 1_000_000n + BigInt(frac)).toString();
}

export function msToUnixNano(ms: number): string {
  const whole = Math.floor(ms);
  return (BigInt(whole) * 1_000_000n + BigInt(Math.round((ms - whole) * 1e6))).toString();
}

function endpointAttrs(out: Array<[string, AttrValue]>, side: 'source' | 'destination', e: Obj | undefined): void {
  if (!e) return;
  const ns = str(e['namespace']);
  if (ns) out.push([`${side}.k8s.namespace.name`, ns]);
  const pod = str(e['pod_name']);
  if (pod) out.push([`${side}.k8s.pod.name`, pod]);
  const w = Array.isArray(e['workloads']) ? obj(e['workloads'][0]) : undefined;
  const wn = str(w?.['name']);
  if (wn) out.push([`${side}.k8s.workload.name`, wn]);
  const wk = str(w?.['kind']);
  if (wk) out.push([`${side}.k8s.workload.kind`, wk]);
}

/** The attributes of one record: what its Hubble flow has of the common fields. */
export function flowAttributes(r: FlowLogRecord): Array<[string, AttrValue]> {
  const out: Array<[string, AttrValue]> = [];
  const f = obj(r['flow']);
  if (!f) return out;
  const verdict = str(f['verdict']);
  if (verdict) out.push(['hubble.verdict', verdict]);
  const dir = str(f['traffic_direction']);
  if (dir) out.push(['hubble.traffic_direction', dir]);
  // Hubble's drop_reason_desc (Cilium's datapath reasons) when a record has one; our flows never set
  // it: a drop of ours carries the kernel's (or PktMon's) reason name in Summary (src/flow/hubble/map.ts).
  const drop = str(f['drop_reason_desc']) ?? (verdict === 'DROPPED' ? dropReasonOfSummary(f['Summary']) : undefined);
  if (drop) out.push(['hubble.drop_reason', drop]);
  endpointAttrs(out, 'source', obj(f['source']));
  endpointAttrs(out, 'destination', obj(f['destination']));
  const ip = obj(f['IP']);
  const sa = str(ip?.['source']);
  if (sa) out.push(['source.address', sa]);
  const da = str(ip?.['destination']);
  if (da) out.push(['destination.address', da]);
  const l4 = obj(f['l4']);
  if (l4) {
    for (const [proto, transport] of [['TCP', 'tcp'], ['UDP', 'udp'], ['SCTP', 'sctp'], ['ICMPv4', 'icmp'], ['ICMPv6', 'icmp']] as const) {
      const p = obj(l4[proto]);
      if (!p) continue;
      out.push(['network.transport', transport]);
      const sp = int(p['source_port']);
      if (sp !== undefined) out.push(['source.port', sp]);
      const dp = int(p['destination_port']);
      if (dp !== undefined) out.push(['destination.port', dp]);
      break;
    }
  }
  return out;
}

/** The LogRecord of one flow-log record (`nowNano`: when the sink took it; `body`: its JSON, when made already). */
export function toLogRecord(r: FlowLogRecord, nowNano: string, body = JSON.stringify(r)): OtlpLogRecord {
  const f = obj(r['flow']);
  return {
    timeUnixNano: rfc3339ToUnixNano(r['time']) ?? rfc3339ToUnixNano(f?.['time']) ?? nowNano,
    observedTimeUnixNano: nowNano,
    body,
    attributes: flowAttributes(r),
  };
}

/** The resource's attributes: service.name, service.version and k8s.node.name (the empty ones left out). */
export function resourceAttributes(res: OtlpResourceInfo): Array<[string, AttrValue]> {
  const a: Array<[string, AttrValue]> = [['service.name', res.serviceName]];
  if (res.serviceVersion) a.push(['service.version', res.serviceVersion]);
  if (res.nodeName) a.push(['k8s.node.name', res.nodeName]);
  return a;
}

function jsonKv([key, v]: readonly [string, AttrValue]): object {
  return { key, value: typeof v === 'number' ? { intValue: String(v) } : { stringValue: v } };
}

/** ExportLogsServiceRequest in OTLP/JSON. */
export function toJsonRequest(records: readonly OtlpLogRecord[], res: OtlpResourceInfo): string {
  return JSON.stringify({
    resourceLogs: [{
      resource: { attributes: resourceAttributes(res).map(jsonKv) },
      scopeLogs: [{
        scope: { name: SCOPE_NAME, version: res.serviceVersion },
        logRecords: records.map((r) => ({
          timeUnixNano: r.timeUnixNano,
          observedTimeUnixNano: r.observedTimeUnixNano,
          body: { stringValue: r.body },
          attributes: r.attributes.map(jsonKv),
        })),
      }],
    }],
  });
}
