/**
 * What ContainerNetworkLog filters cost the flow-log export per flow (src/export/cnl.ts translated by
 * the real selection, matched by the Observer's compiler), on one core, over 4 096 synthetic Hubble
 * flows (20 namespaces, 100 pods with Cilium-style labels and the namespace label, 10% DROPPED,
 * TCP/UDP and DNS records), side by side in one run:
 * - `inactive`: no ContainerNetworkLog (the exporter skips matching: the loop only);
 * - `acns-template`: ACNS's documented template (namespacedPod, labelSelector with k8s.io/namespace
 *   and matchExpressions, IPs, protocol, verdict on both sides), one filter;
 * - `namespace-drops`: `from.labelSelector k8s.io/namespace: ns-3, verdict: dropped`, the common case;
 * - `64-filters`: 8 resources of 8 filters each (namespacedPod prefixes and verdict), the union.
 * Also the time to rebuild the selection when one of 64 resources changes (a watch event).
 * Prints one JSON line: M flows/s, ns/flow and selected share per case. BENCH_ROUNDS, BENCH_ROUND_MS tune it.
 */
import { fileURLToPath } from 'node:url';
import { rng } from '../random.js';
import { createContainerNetworkLogSelection, selectResource } from '../../src/export/index.js';
import { compileFlowFilters, loadFlowEnums, type HubbleFlow } from '../../src/flow/hubble/index.js';
import type { InformerFactory, ReflectorHandler } from '../../src/k8s/index.js';
import { silentLogger } from '../../src/log/index.js';

const ENUMS = loadFlowEnums(fileURLToPath(new URL('../../../proto/hubble', import.meta.url)));
const envNum = (k: string, d: number): number => (process.env[k] ? Number(process.env[k]) : d);
const ROUNDS = envNum('BENCH_ROUNDS', 5);
const ROUND_MS = envNum('BENCH_ROUND_MS', 300);

function buildFlows(n: number): HubbleFlow[] {
  const r = rng(7);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;
  const namespaces = Array.from({ length: 20 }, (_, i) => `ns-${i}`);
  const apps = ['web', 'api', 'db', 'cache', 'worker'];
  const endpoint = (): Record<string, unknown> => {
    const namespace = pick(namespaces);
    const app = pick(apps);
    return { namespace, pod_name: `${app}-${Math.floor(r() * 20)}`, labels: [`k8s:app=${app}`, `k8s:io.kubernetes.pod.namespace=${namespace}`, `k8s:tier=${pick(['prod', 'dev'])}`] };
  };
  return Array.from({ length: n }, () => {
    const dns = r() < 0.02;
    const udp = dns || r() < 0.3;
    const f: Record<string, unknown> = {
      verdict: r() < 0.1 ? 'DROPPED' : 'FORWARDED',
      IP: { source: `10.${Math.floor(r() * 4)}.${Math.floor(r() * 256)}.${Math.floor(r() * 256)}`, destination: `10.${Math.floor(r() * 4)}.0.${Math.floor(r() * 256)}`, ipVersion: 'IPv4' },
      l4: udp ? { UDP: { source_port: 40000, destination_port: dns ? 53 : 8080 } } : { TCP: { source_port: 40000, destination_port: 80 } },
      source: endpoint(), destination: endpoint(), node_name: 'node-0',
    };
    if (dns) f['l7'] = { type: 'REQUEST', dns: { query: 'kube.local.' } };
    return f;
  });
}

const CASES: Record<string, unknown[]> = {
  'acns-template': [{
    includefilters: [{
      name: 'sample-filter',
      from: {
        namespacedPod: ['ns-1/web-'],
        labelSelector: { matchLabels: { app: 'web', 'k8s.io/namespace': 'ns-1' }, matchExpressions: [{ key: 'tier', operator: 'In', values: ['prod', 'dev'] }] },
        ip: ['10.0.0.0/16', '10.1.0.0/16'],
      },
      to: { namespacedPod: ['ns-2/api-'], labelSelector: { matchLabels: { app: 'api' }, matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['dev'] }] }, ip: ['10.0.0.0/8'] },
      protocol: ['tcp', 'udp', 'dns'],
      verdict: ['forwarded', 'dropped'],
    }],
  }],
  'namespace-drops': [{ includefilters: [{ from: { labelSelector: { matchLabels: { 'k8s.io/namespace': 'ns-3' } } }, verdict: ['dropped'] }] }],
  '64-filters': Array.from({ length: 8 }, (_, r) => ({
    includefilters: Array.from({ length: 8 }, (_, i) => ({ from: { namespacedPod: [`ns-${(r * 8 + i) % 20}/web-${i}`] }, verdict: [i % 2 ? 'dropped' : 'forwarded'] })),
  })),
};

function measure(match: (f: HubbleFlow) => boolean, flows: readonly HubbleFlow[]): { mps: number; selected: number } {
  const rates: number[] = [];
  let selected = 0;
  for (let round = 0; round < ROUNDS; round++) {
    let n = 0;
    const t0 = performance.now();
    let sel = 0;
    while (performance.now() - t0 < ROUND_MS) {
      for (const f of flows) if (match(f)) sel++;
      n += flows.length;
    }
    rates.push(n / ((performance.now() - t0) / 1000));
    selected = sel / n;
  }
  rates.sort((a, b) => a - b);
  return { mps: (rates[Math.floor(rates.length / 2)] as number) / 1e6, selected };
}

/** A factory with one hand-fed informer (the bench needs no API server). */
function feeder(): { factory: InformerFactory; set(name: string, spec: unknown): void; synced(): void } {
  const handlers = new Set<ReflectorHandler<unknown>>();
  const items = new Map<string, unknown>();
  const informer = {
    subscribe: (h: ReflectorHandler<unknown>) => { handlers.add(h); return { [Symbol.dispose]: () => handlers.delete(h) }; },
  };
  return {
    factory: { informer: () => informer, start: () => undefined, stats: () => [] } as unknown as InformerFactory,
    set(name, spec) {
      const v = { name, generation: 1, spec };
      const old = items.get(name);
      items.set(name, v);
      for (const h of handlers) {
        if (old) h.updated?.(name, v, old);
        else h.added?.(name, v);
      }
    },
    synced: () => handlers.forEach((h) => h.synced?.()),
  };
}

const flows = buildFlows(4096);
const out: Record<string, unknown> = { bench: 'export/cnl', flows: flows.length };
const inactive = measure(() => false, flows);
out['inactive'] = { mflowsPerS: +inactive.mps.toFixed(2), nsPerFlow: +(1000 / inactive.mps).toFixed(1) };
for (const [name, specs] of Object.entries(CASES)) {
  const filters = specs.flatMap((s, i) => {
    const r = selectResource(`r${i}`, s, ENUMS);
    if (!r.ok) throw new Error(`${name}: ${r.problems.join('; ')}`);
    return [...r.filters];
  });
  const m = compileFlowFilters(filters, undefined, ENUMS);
  const res = measure((f) => m.match(f), flows);
  out[name] = { filters: filters.length, mflowsPerS: +res.mps.toFixed(2), nsPerFlow: +(1000 / res.mps).toFixed(1), selectedShare: +res.selected.toFixed(4) };
}

// A watch event on one of 64 resources: validate, translate, rebuild the union, tell the exporter.
const feed = feeder();
const selection = createContainerNetworkLogSelection({ log: silentLogger, enums: ENUMS });
let recompiles = 0;
selection.onChange(() => {
  compileFlowFilters(selection.current().allow, selection.current().deny, ENUMS);
  recompiles++;
});
selection.watch(feed.factory);
const spec = CASES['64-filters']?.[0];
for (let i = 0; i < 64; i++) feed.set(`cnl-${i}`, spec);
feed.synced();
const t0 = performance.now();
const EVENTS = 200;
for (let i = 0; i < EVENTS; i++) feed.set(`cnl-${i % 64}`, { includefilters: [{ from: { namespacedPod: [`ns-${i % 20}/`] } }, { verdict: ['dropped'] }] });
out['watchEvent64Resources'] = { msPerEvent: +((performance.now() - t0) / EVENTS).toFixed(3), filtersInForce: selection.current().allow.length, recompiles };
console.log(JSON.stringify(out));
