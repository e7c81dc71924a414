/**
 * Context labels: which label names a context option produces, and the compiled function that
 * turns one side of a flow into those labels' values (each preceded by SEP, ready to be part of a
 * series key). Endpoint-derived values are built once per endpoint and cached; only the flow's own
 * values (ip, port) are added per flow. So a side's labels are ordered endpoint labels first, then
 * `ip`, then `port` (label order carries no meaning in Prometheus).
 */
import type { Endpoint, Flow } from '../../flow/index.js';
import { SEP, cleanLabelValue } from '../series.js';
import type { ContextLabel } from './spec.js';

export type Side = 'source' | 'destination';

const UNKNOWN = 'unknown';
const ENDPOINT_LABELS: readonly ContextLabel[] = ['namespace', 'podname', 'workload', 'service', 'zone'];

function ordered(labels: readonly ContextLabel[]): ContextLabel[] {
  const eps = labels.filter((l) => ENDPOINT_LABELS.includes(l));
  return [...eps, ...(labels.includes('ip') ? ['ip' as const] : []), ...(labels.includes('port') ? ['port' as const] : [])];
}

/** Label names for one side, in the order `compileSide` produces values: `source_podname`, or `podname` locally. */
export function contextLabelNames(labels: readonly ContextLabel[], prefix: string): string[] {
  const out: string[] = [];
  for (const l of ordered(labels)) {
    if (l === 'workload') out.push(`${prefix}workload_kind`, `${prefix}workload_name`);
    else out.push(`${prefix}${l}`);
  }
  return out;
}

const text = (v: string | undefined): string => (v ? cleanLabelValue(v) : UNKNOWN);

function endpointFragment(labels: readonly ContextLabel[], ep: Endpoint | undefined): string {
  let s = '';
  for (const l of labels) {
    switch (l) {
      case 'namespace': s += SEP + text(ep?.namespace); break;
      case 'podname': s += SEP + text(ep?.podName); break;
      case 'workload': s += SEP + text(ep?.workloadKind) + SEP + text(ep?.workloadName); break;
      case 'service': s += SEP + text(ep?.service); break;
      case 'zone': s += SEP + text(ep?.zone); break;
      default: break;
    }
  }
  return s;
}

const isL4 = (p: number): boolean => p === 6 || p === 17 || p === 132;

/** A stable name for a side's label set, to share one computed value between metrics. */
export function sideSignature(labels: readonly ContextLabel[], side: Side): string {
  return `${side}:${ordered(labels).join(',')}`;
}

export function compileSide(labels: readonly ContextLabel[], side: Side): (f: Readonly<Flow>) => string {
  const ord = ordered(labels);
  const epLabels = ord.filter((l) => ENDPOINT_LABELS.includes(l));
  const withIp = ord.includes('ip');
  const withPort = ord.includes('port');
  if (ord.length === 0) return () => '';
  const cache = new WeakMap<Endpoint, string>();
  const none = endpointFragment(epLabels, undefined);
  const frag = epLabels.length === 0
    ? () => ''
    : (ep: Endpoint | undefined): string => {
        if (ep === undefined) return none;
        let s = cache.get(ep);
        if (s === undefined) cache.set(ep, (s = endpointFragment(epLabels, ep)));
        return s;
      };
  if (side === 'source') {
    return (f) => {
      let s = frag(f.source);
      if (withIp) s += SEP + f.srcIp;
      if (withPort) s += SEP + (isL4(f.proto) && f.srcPort ? String(f.srcPort) : UNKNOWN);
      return s;
    };
  }
  return (f) => {
    let s = frag(f.destination);
    if (withIp) s += SEP + f.dstIp;
    if (withPort) s += SEP + (isL4(f.proto) && f.dstPort ? String(f.dstPort) : UNKNOWN);
    return s;
  };
}
