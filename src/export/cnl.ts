/**
 * The ContainerNetworkLog selection: which flows the agent writes as flow logs, from the
 * ContainerNetworkLog resources (acn.azure.com/v1alpha1, ACNS's schema; src/k8s/crd) it reads
 * through the node's one informer factory (src/pipeline/watches.ts). Built and watched by setup.ts
 * when flowLogs.enabled; nothing watches ContainerNetworkLogs otherwise.
 *
 * As ACNS documents: several resources and their include filters combine as a union (a flow is
 * written when it matches ANY filter of ANY valid resource), and while no valid resource with
 * filters exists nothing is written (`active: false`). Each include filter becomes ONE Hubble
 * FlowFilter, so the Observer's filter compiler (src/flow/hubble/filter.ts) decides what matches,
 * with Hubble's semantics: every field given must match (AND), any value of a list may (OR):
 *
 *   from.namespacedPod  -> source_pod         "ns/prefix" (Hubble: namespace equal, pod name prefix)
 *   from.labelSelector  -> source_label       one Kubernetes selector over the pod's labels with
 *                                             Cilium's `k8s:` source; ACNS's k8s.io/namespace key
 *                                             is Cilium's namespace label io.kubernetes.pod.namespace,
 *                                             and its equality / In become source_pod `ns/` (same
 *                                             answer for pods, a tenth of the cost)
 *   from.ip             -> source_ip          IPs and CIDRs
 *   to.*                -> destination_*      the same
 *   protocol tcp|udp|dns -> protocol          dns: Hubble's L7 DNS flows (the dns plugin's records)
 *   verdict forwarded|dropped -> verdict      FORWARDED, DROPPED
 *
 * An empty labelSelector ({}) selects every pod, so it adds nothing; an omitted field matches
 * everything. A resource that fails validation (the operator's own check, status FAILED) or whose
 * translation the filter compiler refuses is skipped whole with one log line naming the field; the
 * others stay in force. Nothing here throws into the watch.
 */
import {
  CNL_NAMESPACE_LABEL, resources, validateContainerNetworkLogSpec,
  type ContainerNetworkLog, type ContainerNetworkLogEndpoint, type ContainerNetworkLogFilter, type ContainerNetworkLogSpec, type InformerFactory,
} from '../k8s/index.js';
import type { LabelSelector } from '../k8s/index.js';
import { compileFlowFilters, FilterError, type FlowEnums } from '../flow/hubble/index.js';
import type { Logger } from '../log/index.js';
import type { FlowFilterObject, FlowSelection, SelectionFilters } from './types.js';

/** Cilium's pod namespace label (Hubble flows carry it as `k8s:io.kubernetes.pod.namespace=<ns>`). */
export const CILIUM_NAMESPACE_LABEL = 'io.kubernetes.pod.namespace';

const VERDICTS: Readonly<Record<string, string>> = { forwarded: 'FORWARDED', dropped: 'DROPPED' };

function labelKey(key: string): string {
  return `k8s:${key === CNL_NAMESPACE_LABEL ? CILIUM_NAMESPACE_LABEL : key}`;
}

/** A Kubernetes LabelSelector as the one selector string Hubble's *_label filter takes (comma = AND); '' when it selects everything. */
export function selectorString(sel: LabelSelector): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(sel.matchLabels ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) parts.push(`${labelKey(k)}=${v}`);
  for (const e of sel.matchExpressions ?? []) {
    const key = labelKey(e.key);
    const values = (e.values ?? []).join(',');
    if (e.operator === 'In') parts.push(`${key} in (${values})`);
    else if (e.operator === 'NotIn') parts.push(`${key} notin (${values})`);
    else if (e.operator === 'Exists') parts.push(key);
    else parts.push(`!${key}`);
  }
  return parts.join(',');
}

/**
 * The namespaces a selector's k8s.io/namespace equality / In requirements allow (their
 * intersection), and the selector without them; undefined when it has none. Hubble's pod filter
 * (`ns/`) then does what the namespace label would, at a tenth of the cost per flow
 * (bench/export/cnl.bench.ts): both hold exactly for pod endpoints of those namespaces.
 */
function splitNamespaces(sel: LabelSelector): { namespaces: string[]; rest: LabelSelector } | undefined {
  let namespaces: string[] | undefined;
  const keep = (xs: string[]): void => {
    namespaces = namespaces === undefined ? [...new Set(xs)] : namespaces.filter((n) => xs.includes(n));
  };
  const matchLabels: Record<string, string> = {};
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) {
    if (k === CNL_NAMESPACE_LABEL) keep([v]);
    else matchLabels[k] = v;
  }
  const matchExpressions = (sel.matchExpressions ?? []).filter((e) => {
    if (e.key !== CNL_NAMESPACE_LABEL || e.operator !== 'In') return true;
    keep(e.values ?? []);
    return false;
  });
  return namespaces === undefined ? undefined : { namespaces, rest: { matchLabels, matchExpressions } };
}

function endpointFields(out: Record<string, unknown>, side: 'source' | 'destination', e: ContainerNetworkLogEndpoint | undefined): void {
  if (!e) return;
  let pods = e.namespacedPod?.length ? [...e.namespacedPod] : undefined;
  let selector = e.labelSelector;
  const ns = selector ? splitNamespaces(selector) : undefined;
  if (ns) {
    const inNs = pods ? pods.filter((p) => ns.namespaces.includes(p.slice(0, p.indexOf('/')))) : ns.namespaces.map((n) => `${n}/`);
    // No pod left (the namespaces and namespacedPod disagree): keep the label form, which then matches nothing.
    if (inNs.length) {
      pods = inNs;
      selector = ns.rest;
    }
  }
  if (pods) out[`${side}_pod`] = pods;
  if (selector) {
    const s = selectorString(selector);
    if (s !== '') out[`${side}_label`] = [s];
  }
  if (e.ip?.length) out[`${side}_ip`] = [...e.ip];
}

/** One include filter as one Hubble FlowFilter (an empty object matches every flow). */
export function includeFilterToFlowFilter(f: ContainerNetworkLogFilter): FlowFilterObject {
  const out: Record<string, unknown> = {};
  endpointFields(out, 'source', f.from);
  endpointFields(out, 'destination', f.to);
  if (f.protocol?.length) out['protocol'] = [...new Set(f.protocol)];
  if (f.verdict?.length) out['verdict'] = [...new Set(f.verdict.map((v) => VERDICTS[v] ?? v))];
  return out;
}

/** A valid spec's include filters as Hubble FlowFilters (the union: any of them selects). */
export function specToFlowFilters(spec: ContainerNetworkLogSpec): FlowFilterObject[] {
  return spec.includefilters.map(includeFilterToFlowFilter);
}

/** What one resource contributes: its filters, or why it is skipped. */
export type ResourceSelection =
  | { readonly name: string; readonly ok: true; readonly filters: readonly FlowFilterObject[] }
  | { readonly name: string; readonly ok: false; readonly problems: readonly string[] };

/** Validates and translates one resource; never throws. `enums` also runs the filter compiler over the result. */
export function selectResource(name: string, spec: unknown, enums?: FlowEnums): ResourceSelection {
  const problems = validateContainerNetworkLogSpec(spec);
  if (problems.length) return { name, ok: false, problems };
  const filters = specToFlowFilters(spec as ContainerNetworkLogSpec);
  if (enums) {
    try {
      compileFlowFilters(filters, undefined, enums);
    } catch (e) {
      // The validator and the compiler disagree: name the include filter the compiler refused.
      const msg = e instanceof FilterError || e instanceof Error ? e.message : String(e);
      return { name, ok: false, problems: [msg.replace(/^whitelist\[(\d+)\]/, 'spec.includefilters[$1] (as a Hubble FlowFilter)')] };
    }
  }
  return { name, ok: true, filters };
}

export interface ContainerNetworkLogSelection extends FlowSelection, Disposable {
  /** Starts reading ContainerNetworkLogs through the node's informer factory (once). */
  watch(factory: InformerFactory): void;
  /** Per resource, what is in force and what is skipped (sorted by name). */
  resources(): readonly ResourceSelection[];
}

export interface ContainerNetworkLogSelectionOptions {
  readonly log: Logger;
  /** flow.proto's enums: when given, each resource's filters are also compiled (a refused one is skipped). */
  readonly enums?: FlowEnums;
}

interface SlimCnl {
  readonly name: string;
  readonly generation: number;
  readonly spec: unknown;
}

const slim = (c: ContainerNetworkLog): SlimCnl => ({ name: c.metadata.name, generation: c.metadata.generation ?? 0, spec: c.spec });

const INACTIVE: SelectionFilters = Object.freeze({ active: false, allow: Object.freeze([]), deny: Object.freeze([]) });

export function createContainerNetworkLogSelection(o: ContainerNetworkLogSelectionOptions): ContainerNetworkLogSelection {
  const log = o.log.child({ component: 'containernetworklog' });
  const byName = new Map<string, ResourceSelection>();
  const listeners = new Set<() => void>();
  let current: SelectionFilters = INACTIVE;
  let subscription: Disposable | undefined;
  let ready = false;

  const rebuild = (): void => {
    const allow: FlowFilterObject[] = [];
    for (const name of [...byName.keys()].sort()) {
      const r = byName.get(name) as ResourceSelection;
      if (r.ok) allow.push(...r.filters);
    }
    const next: SelectionFilters = allow.length ? Object.freeze({ active: true, allow: Object.freeze(allow), deny: Object.freeze([]) }) : INACTIVE;
    if (JSON.stringify(next) === JSON.stringify(current)) return;
    current = next;
    log.info('flow-log selection changed', {
      active: current.active, filters: allow.length,
      resources: [...byName.values()].filter((r) => r.ok).map((r) => r.name).sort(),
    });
    for (const l of [...listeners]) {
      try {
        l();
      } catch (e) {
        log.error('a flow-log selection listener threw', { error: (e as Error).message });
      }
    }
  };

  const put = (c: SlimCnl): void => {
    const prev = byName.get(c.name);
    const r = selectResource(c.name, c.spec, o.enums);
    byName.set(c.name, r);
    if (!r.ok) {
      const same = prev && !prev.ok && prev.problems.join('\n') === r.problems.join('\n');
      if (!same) log.warn('ContainerNetworkLog skipped: invalid', { name: c.name, generation: c.generation, field: r.problems[0], problems: r.problems });
    }
    if (ready) rebuild();
  };

  return {
    current: () => current,
    onChange(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    resources: () => [...byName.keys()].sort().map((n) => byName.get(n) as ResourceSelection),
    watch(factory) {
      if (subscription) return;
      const informer = factory.informer<ContainerNetworkLog, SlimCnl>({
        resource: resources.containerNetworkLogs,
        transform: slim,
      });
      const apply = (fn: () => void): void => {
        try {
          fn();
        } catch (e) {
          log.error('ContainerNetworkLog event failed', { error: (e as Error).message });
        }
      };
      subscription = informer.subscribe({
        added: (_k, c) => apply(() => put(c)),
        updated: (_k, c) => apply(() => put(c)),
        deleted: (_k, c) => apply(() => {
          byName.delete(c.name);
          if (ready) rebuild();
        }),
        // The first list is one change, not one per resource.
        synced: () => apply(() => {
          ready = true;
          rebuild();
          log.info('ContainerNetworkLogs synced', { resources: byName.size, active: current.active });
        }),
      });
      // Informers made after the factory started start at once; one made before starts with it.
      factory.start();
    },
    [Symbol.dispose]() {
      subscription?.[Symbol.dispose]();
      subscription = undefined;
      listeners.clear();
    },
  };
}
