/**
 * What the Metrics Module applies, and which IPs are of interest, decided from the API server:
 * - MetricsConfiguration mode: the one Accepted MetricsConfiguration (parsed here; a spec that does
 *   not validate is logged with the fields and the previous spec stays; parts it ignores are logged
 *   once as a warning), none Accepted ⇒ no advanced metrics;
 * - annotation mode (enableAnnotations): Retina's default spec for the namespaces annotated
 *   `retina.sh: observe`, plus the namespaces of pods annotated so (see README: pod-level mode).
 * Changes are applied at most once per `debounceMs` (Retina: 1 s), so churn does not rebuild
 * families; an unchanged spec is a no-op in the module. Deleted pods' series: pod-level-forget.ts.
 */
import type { IpCache, PodEndpoint } from '../cache/index.js';
import {
  acceptedMetricsConfiguration, podAnnotated, watchAnnotatedNamespaces, watchMetricsConfigurations,
  type Informer, type InformerFactory, type InterestSelection, type InterestSet,
} from '../k8s/index.js';
import type { Logger } from '../log/index.js';
import { annotationSpec, describeIssues, sameSpec, validateMetricsSpec, type MetricsModule, type MetricsSpec } from '../metrics/module/index.js';

export interface SpecControllerOptions {
  readonly annotations: boolean;
  readonly remoteContext: boolean;
  readonly factory: InformerFactory;
  readonly pods: Informer<PodEndpoint>;
  readonly cache: IpCache;
  readonly module: MetricsModule;
  readonly interest: InterestSet;
  readonly log: Logger;
  readonly debounceMs?: number;
}

export interface SpecController extends Disposable {
  /** The spec applied now (undefined: advanced metrics off). */
  spec(): MetricsSpec | undefined;
  /** Applies what the watches say now, without waiting for the debounce. */
  reconcile(): void;
}

/** The pods of interest a spec selects. */
export function selectionOf(spec: MetricsSpec | undefined): InterestSelection {
  if (!spec) return { kind: 'none' };
  const ns = spec.namespaces;
  if (!ns) return { kind: 'all' };
  return 'include' in ns ? { kind: 'include', namespaces: ns.include } : { kind: 'exclude', namespaces: ns.exclude };
}

/** Annotation mode: annotated namespaces, and the namespaces of annotated pods elsewhere. */
export function annotationSelection(annotatedNamespaces: readonly string[], pods: Iterable<PodEndpoint>): { spec: MetricsSpec; selection: InterestSelection } {
  const ns = [...new Set(annotatedNamespaces)].sort();
  const podNs = new Set<string>();
  for (const p of pods) if (podAnnotated(p) && !ns.includes(p.namespace)) podNs.add(p.namespace);
  return { spec: annotationSpec([...ns, ...[...podNs].sort()]), selection: { kind: 'annotations', namespaces: ns } };
}

export function startSpecController(o: SpecControllerOptions): SpecController {
  const log = o.log.child({ component: 'pod-level' });
  const debounceMs = o.debounceMs ?? 1000;
  const subs: Disposable[] = [];
  let pending: NodeJS.Timeout | undefined;
  let applied: MetricsSpec | undefined;
  let source = '';
  let reported = '';
  let disposed = false;

  const mcs = o.annotations ? undefined : watchMetricsConfigurations(o.factory);
  const namespaces = o.annotations ? watchAnnotatedNamespaces(o.factory) : undefined;

  function desired(): { spec: MetricsSpec | undefined; selection: InterestSelection; source: string } | undefined {
    if (namespaces) {
      const a = annotationSelection(namespaces.keys(), o.cache.pods());
      return { ...a, source: 'annotations' };
    }
    const mc = acceptedMetricsConfiguration((mcs as Informer<never>).list());
    if (!mc) return { spec: undefined, selection: { kind: 'none' }, source: 'no Accepted MetricsConfiguration' };
    // The operator's validator, so an Accepted spec parses here; warnings name what is ignored.
    const check = validateMetricsSpec(mc.spec);
    const key = `${mc.name}:${JSON.stringify(mc.spec)}`;
    const first = key !== reported;
    reported = key;
    if (!check.spec) {
      if (first) log.error('MetricsConfiguration not applied; keeping the previous spec', { name: mc.name, field: check.errors[0]?.field, errors: describeIssues(check.errors) });
      return undefined;
    }
    if (first && check.warnings.length) log.warn('MetricsConfiguration applied; parts of it are ignored', { name: mc.name, ignored: describeIssues(check.warnings) });
    return { spec: check.spec, selection: selectionOf(check.spec), source: `MetricsConfiguration ${mc.name}` };
  }

  function reconcile(): void {
    if (pending) clearTimeout(pending);
    pending = undefined;
    if (disposed) return;
    const d = desired();
    if (!d) return;
    o.interest.select(d.selection);
    if (sameSpec(applied, d.spec)) return;
    applied = d.spec;
    o.module.apply(d.spec);
    source = d.source;
    log.info('advanced metrics spec applied', {
      source, context: o.remoteContext ? 'remote' : 'local', families: o.module.families(),
      namespaces: d.spec?.namespaces ?? 'all', selection: d.selection.kind,
    });
  }

  function schedule(): void {
    if (pending || disposed) return;
    pending = setTimeout(reconcile, debounceMs);
    pending.unref();
  }

  const source$ = mcs ?? namespaces;
  if (source$) subs.push((source$ as Informer<unknown>).subscribe({ added: schedule, updated: schedule, deleted: schedule, synced: schedule }));
  subs.push(o.pods.subscribe({
    added: (_k, p) => {
      o.interest.podChanged(undefined, p);
      if (namespaces && podAnnotated(p)) schedule();
    },
    updated: (_k, p, old) => {
      o.interest.podChanged(old, p);
      if (namespaces && (podAnnotated(p) || podAnnotated(old))) schedule();
    },
    deleted: (_k, old) => {
      o.interest.podChanged(old, undefined);
      if (namespaces && podAnnotated(old)) schedule();
    },
  }));

  return {
    spec: () => applied,
    reconcile,
    [Symbol.dispose]() {
      disposed = true;
      if (pending) clearTimeout(pending);
      for (const s of subs) s[Symbol.dispose]();
    },
  };
}
