/**
 * A triggered capture's trigger (ours, `spec.captureConfiguration.trigger`): checked with every
 * problem naming its field (the operator puts them in a condition, the CLI prints them, the workload
 * names CAPTURE_TRIGGER), resolved with its defaults, and turned into the Hubble FlowFilters the
 * capture workload asks the node's agent for (docs/capture.md#triggered-captures).
 */
import { isIP } from 'node:net';
import { parseDurationMs } from '../config/index.js';
import type { CaptureTrigger } from '../k8s/index.js';

export const DEFAULT_PRE_TRIGGER_PACKETS = 100;
export const DEFAULT_POST_TRIGGER_MS = 10_000;
export const MAX_PRE_TRIGGER_PACKETS = 1_000_000;
export const MAX_PRE_TRIGGER_MS = 5 * 60_000;
export const MAX_POST_TRIGGER_MS = 10 * 60_000;
/** The agent's Hubble port on the node (hubble.listenAddress's default); the capture pod runs on the host network. */
export const DEFAULT_HUBBLE_ADDRESS = '127.0.0.1:4244';

const POD_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?\/[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const REASON_RE = /^[A-Z][A-Z0-9_]{0,63}$/;
const PROTOCOLS = ['TCP', 'UDP', 'ICMPv4', 'ICMPv6'] as const;
const VERDICTS = ['DROPPED', 'FORWARDED'] as const;

/** The trigger with its defaults: what the workload runs. */
export interface ResolvedTrigger {
  readonly dropReason: string | undefined;
  readonly pod: string | undefined;
  readonly flowFilter: NonNullable<CaptureTrigger['flowFilter']>;
  /** Exactly one of packets / durationMs is set. */
  readonly preTrigger: { readonly packets: number | undefined; readonly durationMs: number | undefined };
  readonly postTriggerMs: number;
  readonly hubbleAddress: string;
}

const str = (v: unknown): v is string => typeof v === 'string';

function checkDuration(field: string, v: unknown, maxMs: number, errors: string[]): void {
  if (v === undefined) return;
  const ms = str(v) ? parseDurationMs(v) : undefined;
  if (ms === undefined) errors.push(`${field}: ${JSON.stringify(v)} is not a duration (Go syntax: 500ms, 30s, 1m)`);
  else if (ms <= 0 || ms > maxMs) errors.push(`${field}: ${JSON.stringify(v)}; more than 0 and at most ${maxMs / 1000}s`);
}

function checkPod(field: string, v: unknown, errors: string[]): void {
  if (v !== undefined && !(str(v) && POD_RE.test(v))) errors.push(`${field}: ${JSON.stringify(v)} is not namespace/name`);
}

function checkPort(field: string, v: unknown, errors: string[]): void {
  if (v !== undefined && !(Number.isInteger(v) && (v as number) >= 1 && (v as number) <= 65535)) errors.push(`${field}: ${JSON.stringify(v)} is not a port (1-65535)`);
}

/** Every problem of a trigger, each naming its field under `at` (`spec.captureConfiguration.trigger`). */
export function validateTrigger(t: unknown, at = 'spec.captureConfiguration.trigger'): string[] {
  const errors: string[] = [];
  if (t === null || typeof t !== 'object' || Array.isArray(t)) return [`${at}: must be an object`];
  const tr = t as Record<string, unknown>;
  const known = ['dropReason', 'pod', 'flowFilter', 'preTrigger', 'postTriggerDuration', 'hubbleAddress'];
  for (const k of Object.keys(tr)) if (!known.includes(k)) errors.push(`${at}.${k}: unknown field; allowed: ${known.join(', ')}`);
  if (tr['dropReason'] !== undefined && !(str(tr['dropReason']) && REASON_RE.test(tr['dropReason']))) {
    errors.push(`${at}.dropReason: ${JSON.stringify(tr['dropReason'])} is not a drop-reason name (upper case, as the agent reports it: NETFILTER_DROP, NO_SOCKET, ...)`);
  }
  checkPod(`${at}.pod`, tr['pod'], errors);
  const ff = tr['flowFilter'];
  let filterFields = 0;
  if (ff !== undefined) {
    if (ff === null || typeof ff !== 'object' || Array.isArray(ff)) errors.push(`${at}.flowFilter: must be an object`);
    else {
      const f = ff as Record<string, unknown>;
      const fields = ['verdict', 'sourceIP', 'destinationIP', 'sourcePod', 'destinationPod', 'protocol', 'sourcePort', 'destinationPort'];
      for (const k of Object.keys(f)) if (!fields.includes(k)) errors.push(`${at}.flowFilter.${k}: unknown field; allowed: ${fields.join(', ')}`);
      filterFields = Object.keys(f).filter((k) => fields.includes(k)).length;
      if (f['verdict'] !== undefined && !VERDICTS.includes(f['verdict'] as 'DROPPED')) errors.push(`${at}.flowFilter.verdict: ${JSON.stringify(f['verdict'])}; allowed: ${VERDICTS.join(', ')}`);
      if (f['verdict'] === 'FORWARDED' && tr['dropReason'] !== undefined) errors.push(`${at}.flowFilter.verdict: FORWARDED contradicts dropReason (a drop reason is only seen on DROPPED flows)`);
      for (const k of ['sourceIP', 'destinationIP']) if (f[k] !== undefined && !(str(f[k]) && isIP(f[k] as string))) errors.push(`${at}.flowFilter.${k}: ${JSON.stringify(f[k])} is not an IPv4 or IPv6 address`);
      checkPod(`${at}.flowFilter.sourcePod`, f['sourcePod'], errors);
      checkPod(`${at}.flowFilter.destinationPod`, f['destinationPod'], errors);
      if (f['protocol'] !== undefined && !PROTOCOLS.includes(f['protocol'] as 'TCP')) errors.push(`${at}.flowFilter.protocol: ${JSON.stringify(f['protocol'])}; allowed: ${PROTOCOLS.join(', ')}`);
      checkPort(`${at}.flowFilter.sourcePort`, f['sourcePort'], errors);
      checkPort(`${at}.flowFilter.destinationPort`, f['destinationPort'], errors);
    }
  }
  const fp = (ff ?? {}) as Record<string, unknown>;
  if (tr['pod'] !== undefined && fp['sourcePod'] !== undefined && fp['destinationPod'] !== undefined) errors.push(`${at}.pod: flowFilter names both pods already; leave pod out`);
  if (tr['dropReason'] === undefined && tr['pod'] === undefined && filterFields === 0) errors.push(`${at}: set at least one of dropReason, pod, flowFilter (else every flow of the node would trigger)`);
  const pre = tr['preTrigger'];
  if (pre !== undefined) {
    if (pre === null || typeof pre !== 'object' || Array.isArray(pre)) errors.push(`${at}.preTrigger: must be an object`);
    else {
      const p = pre as Record<string, unknown>;
      for (const k of Object.keys(p)) if (k !== 'packets' && k !== 'duration') errors.push(`${at}.preTrigger.${k}: unknown field; allowed: packets, duration`);
      if (p['packets'] !== undefined && p['duration'] !== undefined) errors.push(`${at}.preTrigger: set packets or duration, not both`);
      if (p['packets'] !== undefined && !(Number.isInteger(p['packets']) && (p['packets'] as number) >= 0 && (p['packets'] as number) <= MAX_PRE_TRIGGER_PACKETS)) {
        errors.push(`${at}.preTrigger.packets: ${JSON.stringify(p['packets'])}; an integer from 0 to ${MAX_PRE_TRIGGER_PACKETS}`);
      }
      checkDuration(`${at}.preTrigger.duration`, p['duration'], MAX_PRE_TRIGGER_MS, errors);
    }
  }
  checkDuration(`${at}.postTriggerDuration`, tr['postTriggerDuration'], MAX_POST_TRIGGER_MS, errors);
  const addr = tr['hubbleAddress'];
  if (addr !== undefined && !(str(addr) && (/^unix:\/\/\/[^\s]+$/.test(addr) || /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/.test(addr)))) {
    errors.push(`${at}.hubbleAddress: ${JSON.stringify(addr)} is not host:port or unix:///path`);
  }
  return errors;
}

/** The trigger with its defaults; it must be valid. */
export function resolveTrigger(t: CaptureTrigger): ResolvedTrigger {
  const pre = t.preTrigger ?? {};
  const durationMs = pre.duration !== undefined ? parseDurationMs(pre.duration) : undefined;
  return {
    dropReason: t.dropReason, pod: t.pod, flowFilter: { ...(t.flowFilter ?? {}) },
    preTrigger: durationMs !== undefined ? { packets: undefined, durationMs } : { packets: pre.packets ?? DEFAULT_PRE_TRIGGER_PACKETS, durationMs: undefined },
    postTriggerMs: t.postTriggerDuration !== undefined ? (parseDurationMs(t.postTriggerDuration) ?? DEFAULT_POST_TRIGGER_MS) : DEFAULT_POST_TRIGGER_MS,
    hubbleAddress: t.hubbleAddress ?? DEFAULT_HUBBLE_ADDRESS,
  };
}

/**
 * The GetFlowsRequest whitelist that asks the agent for the trigger's flows (Hubble's FlowFilter in
 * proto field names; the filters of a list are ORed, the fields of one ANDed): `pod` is a flow from
 * or to the pod, so two filters. The drop reason is checked on the client (flowMatchesTrigger): our
 * Hubble flows carry the kernel's reason in Summary, not in drop_reason_desc (src/flow/hubble/map.ts).
 */
export function triggerFlowFilters(t: ResolvedTrigger): Record<string, unknown>[] {
  const f = t.flowFilter;
  const base: Record<string, unknown> = {};
  const verdict = t.dropReason !== undefined ? 'DROPPED' : f.verdict;
  if (verdict) base['verdict'] = [verdict];
  if (f.sourceIP) base['source_ip'] = [f.sourceIP];
  if (f.destinationIP) base['destination_ip'] = [f.destinationIP];
  if (f.sourcePod) base['source_pod'] = [f.sourcePod];
  if (f.destinationPod) base['destination_pod'] = [f.destinationPod];
  if (f.protocol) base['protocol'] = [f.protocol.toLowerCase()];
  if (f.sourcePort) base['source_port'] = [String(f.sourcePort)];
  if (f.destinationPort) base['destination_port'] = [String(f.destinationPort)];
  if (t.pod === undefined) return [base];
  // A flow from the pod or to it; a side flowFilter already names keeps its own pod.
  const out: Record<string, unknown>[] = [];
  if (!base['source_pod']) out.push({ ...base, source_pod: [t.pod] });
  if (!base['destination_pod']) out.push({ ...base, destination_pod: [t.pod] });
  return out;
}

/** The `kubectl retina capture create` words of a trigger: `the first NETFILTER_DROP drop from or to pod a/b; keeps ...`. */
export function describeTrigger(t: ResolvedTrigger): string {
  const parts = [t.dropReason ? `the first ${t.dropReason} drop` : 'the first flow'];
  if (t.pod) parts.push(`from or to pod ${t.pod}`);
  const f = Object.entries(t.flowFilter).map(([k, v]) => `${k}=${String(v)}`);
  if (f.length) parts.push(`matching ${f.join(' ')}`);
  const pre = t.preTrigger.packets !== undefined ? `the last ${t.preTrigger.packets} packets` : `the last ${(t.preTrigger.durationMs ?? 0) / 1000}s`;
  return `${parts.join(' ')}; keeps ${pre} before it and ${t.postTriggerMs / 1000}s after`;
}
