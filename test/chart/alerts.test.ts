/**
 * The chart's alert rules: the rule file parses (promtool check rules), every alert has a
 * `promtool test rules` case that fires and, in the same case, a series that must not fire, and
 * the tests pass. Every metric the rules read is in the catalog.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { parse } from 'yaml';
import { allMetrics } from '../../src/metrics/catalog.js';
import { ALERTS_FILE, RULES_TEST_FILE, metricNames } from './dashboards.js';

interface RuleFile { groups: { name: string; rules: { alert?: string; expr: string }[] }[] }
interface RulesTest { tests: { name: string; input_series: { series: string }[]; alert_rule_test: { alertname: string; exp_alerts: { exp_labels: Record<string, string> }[] }[] }[] }

const rules = parse(readFileSync(ALERTS_FILE, 'utf8')) as RuleFile;
const cases = parse(readFileSync(RULES_TEST_FILE, 'utf8')) as RulesTest;
const alerts = rules.groups.flatMap((g) => g.rules.map((r) => r.alert).filter((a) => a !== undefined));

test('the rule file parses and has the alerts the chart documents', () => {
  assert.match(execFileSync('promtool', ['check', 'rules', ALERTS_FILE], { encoding: 'utf8' }), /SUCCESS: 12 rules found/);
  assert.deepEqual(alerts.sort(), [
    'RetinaAPIServerLatencyHigh', 'RetinaAPIServerNoResponse', 'RetinaConntrackTableFull', 'RetinaDNSErrors', 'RetinaDNSMissingResponses', 'RetinaInterfaceAttachFailed',
    'RetinaLostEvents', 'RetinaNetfilterDrops', 'RetinaNodePacketDrops', 'RetinaPluginDown', 'RetinaPluginReconcileFailures', 'RetinaSeriesOverflow',
  ]);
});

test('every alert has a positive case and, beside it, input that must stay silent', () => {
  for (const alert of alerts) {
    const tc = cases.tests.find((t) => t.alert_rule_test.some((a) => a.alertname === alert && a.exp_alerts.length > 0));
    assert.ok(tc, `${alert}: a case where it fires`);
    const firing = new Set(tc.alert_rule_test.filter((a) => a.alertname === alert).flatMap((a) => a.exp_alerts.map((e) => e.exp_labels['instance'])));
    const fed = new Set(tc.input_series.map((s) => /instance="([^"]+)"/.exec(s.series)?.[1]));
    assert.ok([...fed].some((i) => !firing.has(i)), `${alert}: case "${tc.name}" also feeds a node that must not fire`);
  }
});

test('promtool test rules: every case passes', () => {
  let out: string;
  try {
    out = execFileSync('promtool', ['test', 'rules', RULES_TEST_FILE], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    const x = e as { stdout?: string; stderr?: string };
    assert.fail(`promtool test rules failed:\n${x.stdout ?? ''}${x.stderr ?? ''}`);
  }
  assert.match(out, /SUCCESS/);
});

test('every metric the rules read is in the catalog', () => {
  const known = new Set(allMetrics.flatMap((m) => (m.type === 'histogram' ? [`${m.name}_bucket`, `${m.name}_count`, `${m.name}_sum`] : [m.name])));
  for (const r of rules.groups.flatMap((g) => g.rules)) {
    for (const n of metricNames(r.expr)) assert.ok(known.has(n), `${r.alert ?? '?'} reads ${n}`);
  }
});
