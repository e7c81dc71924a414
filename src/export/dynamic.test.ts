/**
 * The dynamic exporters: Cilium's flowlogs.yaml (its own test file's entries), validation naming the
 * field, reload on change (a watched rename as a ConfigMap mount does it, and plain rewrites), the
 * last good config kept on bad content, and `end`.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createFlow, type Flow } from '../flow/index.js';
import { loadFlowProtos } from '../flow/hubble/index.js';
import { createLogger } from '../log/index.js';
import { createMetricsRegistry } from '../metrics/index.js';
import { ExportConfigError } from './check.js';
import { parseDynamicConfig, startDynamicExporters } from './dynamic.js';

const protos = loadFlowProtos(fileURLToPath(new URL('../../../proto/hubble', import.meta.url)));
const dir = mkdtempSync(join(tmpdir(), 'dynamic-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const logs = new PassThrough();
let logText = '';
logs.on('data', (d: Buffer) => (logText += d.toString()));
const log = createLogger({ level: 'info', stream: logs });
const defaults = { maxSizeMb: 10, maxBackups: 5, compress: false };

// cilium/cilium pkg/hubble/exporter/testdata/valid-flowlogs-config.yaml (its test002 entry).
const CILIUM_SAMPLE = `flowLogs:
- name: "test002"
  filePath: "/var/log/network/flow-log/pa/test002.log"
  fieldMask: ["source.namespace", "source.pod_name", "destination.namespace", "destination.pod_name", "verdict"]
  fieldAggregate: []
  aggregationInterval: 0s
  includeFilters:
  - source_pod: ["default/"]
    source_label: ["networking.example.com/flow-logs=enabled"]
    event_type:
    - type: 1
  - destination_pod: ["frontend/nginx-975996d4c-7hhgt"]
  excludeFilters: []
  fileMaxSizeMb: 10
  fileMaxBackups: 3
  fileCompress: true
  end: "2023-10-09T23:59:59-07:00"
`;

test('Cilium\'s own sample parses; errors name the entry and field', () => {
  const [e] = parseDynamicConfig(CILIUM_SAMPLE, defaults, protos);
  assert.equal(e?.name, 'test002');
  assert.deepEqual(e?.file, { path: '/var/log/network/flow-log/pa/test002.log', maxSizeMb: 10, maxBackups: 3, compress: true });
  assert.equal(e?.includeFilters.length, 2);
  assert.equal(e?.endMs, Date.parse('2023-10-09T23:59:59-07:00'));
  const bad = (text: string, field: RegExp): void => {
    assert.throws(() => parseDynamicConfig(text, defaults, protos), (err: unknown) => err instanceof ExportConfigError && field.test(err.field), text);
  };
  bad('flowLogs:\n- filePath: /a\n', /^flowLogs\[0\]\.name$/);
  bad('flowLogs:\n- {name: a, filePath: /a}\n- {name: a, filePath: /b}\n', /^flowLogs\[1\]\.name$/);
  bad('flowLogs:\n- {name: a, filePath: /a}\n- {name: b, filePath: /a}\n', /^flowLogs\[1\]\.filePath$/);
  bad('flowLogs:\n- {name: a, filePath: /a, includeFilters: [{source_pod: [x]}, {nope: [1]}]}\n', /^flowLogs\[0\]\.includeFilters\[1\]\.nope$/);
  bad('flowLogs:\n- {name: a, filePath: /a, excludeFilters: [{verdict: [MAYBE]}]}\n', /^flowLogs\[0\]\.excludeFilters\[0\]\.verdict/);
  bad('flowLogs:\n- {name: a, filePath: /a, fieldMask: [source.nope]}\n', /^flowLogs\[0\]\.fieldMask: source\.nope$/);
  bad('flowLogs:\n- {name: a, filePath: /a, end: soon}\n', /^flowLogs\[0\]\.end$/);
  bad('flowLogs:\n- {name: a, filePath: /a, bogus: 1}\n', /^flowLogs\[0\]\.bogus$/);
  bad('flowLogs: [', /\(file\)/);
});

const flows = (): Flow[] => [
  createFlow({ srcIp: '10.0.0.1', dstIp: '10.0.0.2', verdict: 'FORWARDED', proto: 6, srcPort: 1, dstPort: 80, timeMs: 1_700_000_000_000 }),
  createFlow({ srcIp: '10.0.0.1', dstIp: '10.0.0.3', verdict: 'DROPPED', proto: 17, srcPort: 1, dstPort: 53, timeMs: 1_700_000_000_000 }),
];

const lines = (p: string): Record<string, unknown>[] => (existsSync(p) ? readFileSync(p, 'utf8').split('\n').filter((l) => l).map((l) => JSON.parse(l) as Record<string, unknown>) : []);

async function until(what: string, ok: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('followed while running: added, changed, removed entries; bad content keeps the last good; end stops one', async () => {
  const cfgDir = join(dir, 'cfg');
  mkdirSync(cfgDir);
  const path = join(cfgDir, 'flowlogs.yaml');
  const a = join(dir, 'a.log');
  const b = join(dir, 'b.log');
  const write = (text: string): void => {
    // As a ConfigMap mount updates: a new file renamed over the old one.
    writeFileSync(`${path}.tmp`, text);
    renameSync(`${path}.tmp`, path);
  };
  write(`flowLogs:\n- {name: a, filePath: ${a}, includeFilters: [{verdict: [DROPPED]}]}\n`);
  const metrics = createMetricsRegistry({ processMetrics: false });
  const dyn = startDynamicExporters({ path, defaults, aggregationMaxKeys: 100, nodeName: 'n', protos, metrics, log, pollMs: 60_000 });
  await until('the first read', () => dyn.names().length === 1);
  dyn.consume({ source: 't', flows: flows() });
  await until('a written', () => lines(a).length === 1);
  assert.equal((lines(a)[0]?.['flow'] as Record<string, unknown>)['verdict'], 'DROPPED');

  // Changed filter and a second entry with a field mask: picked up by the watch, not the (1 min) poll.
  write(`flowLogs:\n- {name: a, filePath: ${a}, includeFilters: [{verdict: [FORWARDED]}]}\n- {name: b, filePath: ${b}, fieldMask: [verdict]}\n`);
  await until('two entries', () => dyn.names().length === 2 && readFileSync(path, 'utf8').includes('FORWARDED'));
  await new Promise((r) => setTimeout(r, 50));
  dyn.consume({ source: 't', flows: flows() });
  await until('b written', () => lines(b).length === 2 && lines(a).length === 2);
  assert.equal((lines(a)[1]?.['flow'] as Record<string, unknown>)['verdict'], 'FORWARDED');
  assert.deepEqual(lines(b).map((l) => l['flow']), [{ verdict: 'FORWARDED' }, { verdict: 'DROPPED' }]);

  // Bad content: rejected with the field named, the two exporters keep running.
  write(`flowLogs:\n- {name: a, filePath: ${a}, includeFilters: [{verdict: [NOPE]}]}\n`);
  await until('the rejection logged', () => /flowLogs\[0\]\.includeFilters\[0\]\.verdict/.test(logText));
  assert.deepEqual(dyn.names(), ['a', 'b']);

  // b removed; a ends in the past: nothing more is written to either.
  write(`flowLogs:\n- {name: a, filePath: ${a}, end: "2020-01-01T00:00:00Z"}\n`);
  await until('b removed', () => dyn.names().length === 1);
  dyn.consume({ source: 't', flows: flows() });
  await dyn[Symbol.asyncDispose]();
  assert.equal(lines(a).length, 2);
  assert.equal(lines(b).length, 2);
});
