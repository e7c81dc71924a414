/**
 * A small reader of the Prometheus text exposition (format 0.0.4) for assertions, and the promtool
 * lint with the allowlist of names the user-facing contract forces on us.
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface Exposition {
  /** Family name → TYPE. */
  readonly types: ReadonlyMap<string, string>;
  readonly samples: readonly Sample[];
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)(?:\s+-?\d+)?$/;
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(,|$)/y;

export function parseExposition(text: string): Exposition {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const [i, line] of text.split('\n').entries()) {
    if (line === '') continue;
    if (line.startsWith('#')) {
      const m = /^# TYPE (\S+) (\S+)$/.exec(line);
      if (m) types.set(m[1] as string, m[2] as string);
      continue;
    }
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`exposition line ${i + 1} is not a sample: ${line}`);
    samples.push({ name: m[1] as string, labels: parseLabels(m[2] ?? '', line), value: parseValue(m[3] as string, line) });
  }
  return { types, samples };
}

function parseLabels(block: string, line: string): Record<string, string> {
  const out: Record<string, string> = {};
  const inner = block.slice(1, -1);
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < inner.length) {
    const m = LABEL.exec(inner);
    if (!m) throw new Error(`cannot parse labels of: ${line}`);
    out[m[1] as string] = (m[2] as string).replace(/\\(["\\n])/g, (_, c: string) => (c === 'n' ? '\n' : c));
  }
  return out;
}

function parseValue(s: string, line: string): number {
  if (s === '+Inf') return Infinity;
  if (s === '-Inf') return -Infinity;
  const v = Number(s);
  if (Number.isNaN(v) && s !== 'NaN') throw new Error(`bad sample value in: ${line}`);
  return v;
}

/** Samples of the family or sample name `name`, optionally with these label values. */
export function series(e: Exposition, name: string, labels: Record<string, string> = {}): Sample[] {
  return e.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}

export const PROMTOOL = '/usr/bin/promtool';

/** promtool's findings (v2.42), as it prints them after the metric name. */
const TOTAL_SUFFIX = 'counter metrics should have "_total" suffix';
const COUNT_SUFFIX = 'non-histogram and non-summary metrics should not have "_count" suffix';
const COUNTER_IN_NAME = "metric name should not include type 'counter'";

/**
 * promtool findings allowed for names the project's user contract ("Metrics") takes from
 * Microsoft Retina so dashboards and alerts carry over. Retina exports these counters without
 * `_total`, and counters and gauges with `_count`/`_counter` in the name; renaming them would break
 * its users' queries. Families that are ours (not in the contract) get no entry: name them right. Each entry
 * allows only the listed findings for that exact name: any other finding, or any finding on a name not
 * listed here, fails the lint.
 */
export const CONTRACT_LINT_ALLOWLIST: ReadonlyMap<string, readonly string[]> = new Map([
  // Self metrics (controlplane_networkobservability_*), counters named as Retina names them.
  ['controlplane_networkobservability_plugin_manager_failed_to_reconcile', [TOTAL_SUFFIX]],
  ['controlplane_networkobservability_lost_events_counter', [TOTAL_SUFFIX, COUNTER_IN_NAME]],
  ['controlplane_networkobservability_parsed_packets_counter', [TOTAL_SUFFIX, COUNTER_IN_NAME]],
  ['controlplane_networkobservability_expired_metrics_counter', [TOTAL_SUFFIX, COUNTER_IN_NAME]],
  // Basic (node) counters.
  ['networkobservability_dns_request_count', [TOTAL_SUFFIX, COUNT_SUFFIX]],
  ['networkobservability_dns_response_count', [TOTAL_SUFFIX, COUNT_SUFFIX]],
  ['networkobservability_tcp_retransmission_count', [TOTAL_SUFFIX, COUNT_SUFFIX]],
  // Basic (node) gauges that Retina names *_count.
  ['networkobservability_forward_count', [COUNT_SUFFIX]],
  ['networkobservability_drop_count', [COUNT_SUFFIX]],
  // Advanced (pod-level) families: counters without _total, gauges named *_count.
  ['networkobservability_adv_dns_request_count', [TOTAL_SUFFIX, COUNT_SUFFIX]],
  ['networkobservability_adv_dns_response_count', [TOTAL_SUFFIX, COUNT_SUFFIX]],
  ['networkobservability_adv_forward_count', [COUNT_SUFFIX]],
  ['networkobservability_adv_drop_count', [COUNT_SUFFIX]],
  ['networkobservability_adv_tcpflags_count', [COUNT_SUFFIX]],
  ['networkobservability_adv_tcpretrans_count', [COUNT_SUFFIX]],
]);

export interface LintResult {
  /** Every finding promtool printed, one per line. */
  readonly findings: readonly string[];
  /** Findings the allowlist does not cover. */
  readonly disallowed: readonly string[];
  readonly exitCode: number | null;
}

/** Throws (never skips) when promtool is missing: the lint is part of the suite. */
export function assertPromtool(): void {
  try {
    accessSync(PROMTOOL, constants.X_OK);
  } catch {
    throw new Error(`${PROMTOOL} is missing: install Debian's "prometheus" package (make system-deps) to run the exposition lint`);
  }
}

/** Runs `promtool check metrics` on `text` (stdin) and sorts its findings against the allowlist. */
export function lintExposition(text: string, allow: ReadonlyMap<string, readonly string[]> = CONTRACT_LINT_ALLOWLIST): LintResult {
  assertPromtool();
  const r = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8', timeout: 30_000 });
  if (r.error) throw r.error;
  const findings = `${r.stdout}\n${r.stderr}`.split('\n').map((l) => l.trim()).filter((l) => l !== '');
  const disallowed = findings.filter((f) => {
    const sp = f.indexOf(' ');
    const allowed = allow.get(f.slice(0, sp));
    return !(sp > 0 && allowed?.includes(f.slice(sp + 1)));
  });
  return { findings, disallowed, exitCode: r.status };
}
