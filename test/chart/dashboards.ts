/**
 * The chart's Grafana dashboards as the tests see them: each panel's queries with Grafana's
 * variables filled in (every cluster, every node, every pod), ready for promtool and Prometheus.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../e2e/agent-process.js';

export const DASHBOARDS_DIR = `${ROOT}charts/retina/dashboards/`;
export const ALERTS_FILE = `${ROOT}charts/retina/alerts/retina-ts.rules.yaml`;
export const RULES_TEST_FILE = `${ROOT}test/chart/retina-ts.rules-test.yaml`;

export interface Target {
  readonly refId: string;
  readonly expr: string;
  readonly datasource?: { readonly uid?: string };
}
export interface Panel {
  readonly id: number;
  readonly type: string;
  readonly title: string;
  readonly datasource?: { readonly uid?: string };
  readonly targets?: readonly Target[];
}
export interface Variable {
  readonly name: string;
  readonly type: string;
  readonly query: string | { readonly query: string };
  readonly datasource?: { readonly uid?: string };
}
export interface Dashboard {
  readonly file: string;
  readonly uid: string;
  readonly title: string;
  readonly schemaVersion: number;
  readonly panels: readonly Panel[];
  readonly templating: { readonly list: readonly Variable[] };
}

export function loadDashboards(): Dashboard[] {
  return readdirSync(DASHBOARDS_DIR).filter((f) => f.endsWith('.json')).sort().map((file) => {
    const d = JSON.parse(readFileSync(DASHBOARDS_DIR + file, 'utf8')) as Omit<Dashboard, 'file'>;
    return { ...d, file };
  });
}

/** Grafana's variables as a query sees them with "All" picked: regex matchers that match everything. */
export function fillVariables(expr: string, rateInterval = '1m'): string {
  return expr.replaceAll('$__rate_interval', rateInterval).replaceAll('$__interval', rateInterval).replace(/\$\{?(cluster|node|pod)\}?/g, '.*');
}

/** The PromQL inside a query variable (`label_values(EXPR, label)`), or undefined when it has none. */
export function variableExpr(v: Variable): string | undefined {
  const q = typeof v.query === 'string' ? v.query : v.query.query;
  const m = /^label_values\((.+),\s*[a-z_]+\)$/.exec(q);
  return v.type === 'query' ? (m?.[1] ?? q) : undefined;
}

/** Every panel query of every dashboard, variables filled in. */
export function panelQueries(ds: readonly Dashboard[]): { dashboard: string; panel: string; expr: string }[] {
  return ds.flatMap((d) => d.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ dashboard: d.uid, panel: p.title, expr: fillVariables(t.expr) }))));
}

/** Metric names a query reads (ours all start with one of the two prefixes), as written (`_bucket` kept). */
export function metricNames(expr: string): string[] {
  return [...new Set(expr.match(/\b(?:controlplane_)?networkobservability_[a-z0-9_]+\b/g) ?? [])];
}

/** Runs `promtool check rules` on the expressions (one recording rule each); returns promtool's output, throws with it on a parse error. */
export function promtoolParse(exprs: readonly string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'rt-dash-'));
  try {
    const rules = exprs.map((e, i) => ({ record: `dashboard:query_${i}`, expr: e }));
    writeFileSync(join(dir, 'queries.rules.json'), JSON.stringify({ groups: [{ name: 'dashboards', rules }] }));
    return execFileSync('promtool', ['check', 'rules', join(dir, 'queries.rules.json')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
