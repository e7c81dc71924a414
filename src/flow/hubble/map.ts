/**
 * Our enriched Flow (src/flow) → Hubble's `flow.Flow`, as a plain object in the @grpc/proto-loader
 * convention the hubble modules share (snake_case keys, enums as their names, oneofs as the set
 * field, 64-bit numbers as numbers). One function, called only when a client reads a flow: the
 * ring keeps our flows as they are.
 *
 * Where Hubble has no field for a fact of ours: the kernel's (or PktMon's) drop reason name goes to
 * `Summary` (deprecated in Hubble, still printed by the hubble CLI, `-o json` shows it) as
 * `drop reason: <NAME>`; `drop_reason_desc` stays unset, since Cilium's datapath reasons are not
 * the kernel's. Retransmissions are FORWARDED flows whose Summary says `TCP retransmission`.
 */
import { isIP } from 'node:net';
import type { Endpoint, Flow } from '../index.js';

export type HubbleObject = Record<string, unknown>;

/** Cilium monitor message types (event_type.type), the ones hubble's printer and `--type` know. */
export const EVENT_TYPE = Object.freeze({ drop: 1, trace: 4, l7: 129 } as const);

/** Cilium trace sub-types per observation point (Cilium's monitor API TraceTo... and TraceFrom... values). */
const TRACE_SUBTYPE: Readonly<Record<string, number>> = { TO_ENDPOINT: 0, TO_STACK: 3, FROM_ENDPOINT: 5, FROM_NETWORK: 10, TO_NETWORK: 11 };

const RCODES: Readonly<Record<string, number>> = {
  NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4, REFUSED: 5, YXDOMAIN: 6, YXRRSET: 7, NXRRSET: 8, NOTAUTH: 9, NOTZONE: 10,
};

/** google.protobuf.Timestamp from ms since the epoch (fractional ms keep their sub-ms part). */
export function timestamp(ms: number): { seconds: number; nanos: number } {
  const seconds = Math.floor(ms / 1000);
  const nanos = Math.min(999_999_999, Math.max(0, Math.round((ms - seconds * 1000) * 1e6)));
  return { seconds, nanos };
}

/** ms since the epoch from a decoded google.protobuf.Timestamp (undefined when absent). */
export function timestampMs(ts: unknown): number | undefined {
  if (ts === null || typeof ts !== 'object') return undefined;
  const t = ts as { seconds?: unknown; nanos?: unknown };
  const s = Number(t.seconds ?? 0);
  const n = Number(t.nanos ?? 0);
  if (!Number.isFinite(s) || !Number.isFinite(n)) return undefined;
  return s * 1000 + n / 1e6;
}

/** Cilium's pod namespace label key. */
const NAMESPACE_LABEL = 'io.kubernetes.pod.namespace';

/**
 * An endpoint's Hubble objects, made once per Endpoint (the enricher hands out one object per
 * endpoint, shared by all its flows; a changed pod is a new Endpoint) and frozen, deeply: every flow
 * of the endpoint shares them, and the frame encoder (src/server/hubble/encode.ts) writes a frozen
 * message's bytes once. Frozen, a reader that tried to change one would throw instead of changing
 * every flow of the endpoint.
 */
const endpoints = new WeakMap<Endpoint, { endpoint: HubbleObject; service: HubbleObject | undefined }>();

function hubbleEndpoint(e: Endpoint): { endpoint: HubbleObject; service: HubbleObject | undefined } {
  const known = endpoints.get(e);
  if (known) return known;
  const out: HubbleObject = {};
  if (e.namespace) out['namespace'] = e.namespace;
  if (e.podName) out['pod_name'] = e.podName;
  // A pod's labels, with the namespace label Cilium gives every pod endpoint (k8s:io.kubernetes.pod.namespace),
  // so label filters can select by namespace as in Hubble (ContainerNetworkLog's k8s.io/namespace key).
  const keys = Object.keys(e.labels);
  const nsLabel = e.podName && e.namespace && e.labels[NAMESPACE_LABEL] === undefined;
  if (keys.length || nsLabel) {
    const labels = keys.map((k) => `k8s:${k}=${e.labels[k] ?? ''}`);
    if (nsLabel) labels.push(`k8s:${NAMESPACE_LABEL}=${e.namespace}`);
    out['labels'] = Object.freeze(labels.sort());
  }
  if (e.workloadName) out['workloads'] = Object.freeze([Object.freeze({ name: e.workloadName, kind: e.workloadKind })]);
  const made = { endpoint: Object.freeze(out), service: e.service ? Object.freeze({ name: e.service, namespace: e.namespace }) : undefined };
  endpoints.set(e, made);
  return made;
}

function endpoint(e: Endpoint | undefined): HubbleObject | undefined {
  return e === undefined ? undefined : hubbleEndpoint(e).endpoint;
}

function service(e: Endpoint | undefined): HubbleObject | undefined {
  return e === undefined ? undefined : hubbleEndpoint(e).service;
}

function tcpFlags(bits: number): HubbleObject {
  const f: HubbleObject = {};
  if (bits & 1) f['FIN'] = true;
  if (bits & 2) f['SYN'] = true;
  if (bits & 4) f['RST'] = true;
  if (bits & 8) f['PSH'] = true;
  if (bits & 16) f['ACK'] = true;
  if (bits & 32) f['URG'] = true;
  if (bits & 64) f['ECE'] = true;
  if (bits & 128) f['CWR'] = true;
  if (bits & 256) f['NS'] = true;
  return f;
}

function l4(f: Readonly<Flow>): HubbleObject | undefined {
  switch (f.proto) {
    case 6: return { protocol: 'TCP', TCP: { source_port: f.srcPort, destination_port: f.dstPort, flags: tcpFlags(f.tcpFlags) } };
    case 17: return { protocol: 'UDP', UDP: { source_port: f.srcPort, destination_port: f.dstPort } };
    case 132: return { protocol: 'SCTP', SCTP: { source_port: f.srcPort, destination_port: f.dstPort } };
    // Our producers do not read ICMP type and code: the protocol alone.
    case 1: return { protocol: 'ICMPv4', ICMPv4: {} };
    case 58: return { protocol: 'ICMPv6', ICMPv6: {} };
    default: return undefined;
  }
}

function fqdn(name: string): string {
  return name === '' || name.endsWith('.') ? name : name + '.';
}

/** How a drop's Summary begins: then the kernel's (or PktMon's) drop-reason name. */
export const DROP_SUMMARY_PREFIX = 'drop reason: ';

/**
 * The kernel's (or PktMon's) drop-reason name a DROPPED Hubble flow of ours carries (in Summary, see
 * above), or undefined when the flow carries none.
 */
export function dropReasonOfSummary(summary: unknown): string | undefined {
  if (typeof summary !== 'string' || !summary.startsWith(DROP_SUMMARY_PREFIX)) return undefined;
  const name = summary.slice(DROP_SUMMARY_PREFIX.length);
  return name === '' ? undefined : name;
}

function summary(f: Readonly<Flow>): string {
  switch (f.verdict) {
    case 'DROPPED': return `${DROP_SUMMARY_PREFIX}${f.dropReason || 'unknown'}`;
    case 'RETRANSMISSION': return 'TCP retransmission';
    case 'DNS': {
      const d = f.dns;
      if (d === undefined) return 'DNS';
      return d.isResponse ? `DNS Answer ${d.rcode} "${fqdn(d.query)}" ${d.qtype} ${d.answers.join(',')}`.trimEnd() : `DNS Query ${fqdn(d.query)} ${d.qtype}`.trimEnd();
    }
    default: return f.proto === 6 ? `TCP Flags: ${Object.keys(tcpFlags(f.tcpFlags)).join(', ')}` : '';
  }
}

/** The Hubble flow.Flow for one of our flows. */
export function toHubbleFlow(f: Readonly<Flow>, nodeName: string): HubbleObject {
  const node = f.nodeName || nodeName;
  const out: HubbleObject = {
    time: timestamp(f.timeMs),
    verdict: f.verdict === 'DROPPED' ? 'DROPPED' : 'FORWARDED',
    IP: { source: f.srcIp, destination: f.dstIp, ipVersion: f.ipVersion === 6 ? 'IPv6' : 'IPv4' },
    Type: f.verdict === 'DNS' ? 'L7' : 'L3_L4',
  };
  const layer4 = l4(f);
  if (layer4) out['l4'] = layer4;
  const src = endpoint(f.source);
  if (src) out['source'] = src;
  const dst = endpoint(f.destination);
  if (dst) out['destination'] = dst;
  if (node) out['node_name'] = node;
  const ss = service(f.source);
  if (ss) out['source_service'] = ss;
  const ds = service(f.destination);
  if (ds) out['destination_service'] = ds;
  if (f.direction !== 'UNKNOWN') out['traffic_direction'] = f.direction;
  if (f.observationPoint !== 'UNKNOWN') out['trace_observation_point'] = f.observationPoint;
  if (f.isReply !== undefined) out['is_reply'] = { value: f.isReply };
  if (f.verdict === 'DROPPED') {
    out['event_type'] = { type: EVENT_TYPE.drop, sub_type: 0 };
  } else if (f.verdict === 'DNS') {
    out['event_type'] = { type: EVENT_TYPE.l7, sub_type: 0 };
    const d = f.dns;
    if (d) {
      const dns: HubbleObject = { query: fqdn(d.query), observation_source: 'retina-ts' };
      if (d.qtype) dns['qtypes'] = [d.qtype];
      if (d.isResponse) {
        dns['rcode'] = RCODES[d.rcode] ?? (/^RCODE(\d+)$/.exec(d.rcode) ? Number(d.rcode.slice(5)) : 0);
        const ips = d.answers.filter((a) => isIP(a) !== 0);
        if (ips.length) dns['ips'] = ips;
      }
      out['l7'] = { type: d.isResponse ? 'RESPONSE' : 'REQUEST', record: 'dns', dns };
    }
  } else {
    out['event_type'] = { type: EVENT_TYPE.trace, sub_type: TRACE_SUBTYPE[f.observationPoint] ?? 0 };
  }
  const s = summary(f);
  if (s) out['Summary'] = s;
  return out;
}
