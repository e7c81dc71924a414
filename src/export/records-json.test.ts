/**
 * A record's JSON is made once for all the sinks of its batch: recordsJson is lazy and stringifies a
 * record at most once; the exporter hands one RecordsJson to every sink; the file sink's line and the
 * OTLP sink's log body are then the same text, made once (counted through the records' toJSON), and
 * a record that cannot be written is dropped{encode} by each sink alone, the others kept.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createFlow } from '../flow/index.js';
import { loadFlowProtos } from '../flow/hubble/index.js';
import { createLogger } from '../log/index.js';
import { createMetricsRegistry } from '../metrics/index.js';
import { createFlowExporter } from './exporter.js';
import { createFileSink } from './file.js';
import { createOtlpSink } from './otlp/sink.js';
import type { OtlpLogRecord } from './otlp/encode.js';
import { recordsJson } from './records-json.js';
import { staticSelection } from './selection.js';
import type { FlowLogRecord, FlowLogSink, RecordsJson } from './types.js';

const log = createLogger({ level: 'error', stream: new PassThrough() });

/** Counts written/dropped by reason. */
function counter(): { c: { written: number; dropped: Record<string, number> }; counts: { written(n: number): void; dropped(r: string, n: number): void } } {
  const c = { written: 0, dropped: {} as Record<string, number> };
  return {
    c,
    counts: {
      written: (n) => {
        c.written += n;
      },
      dropped: (r, n) => {
        if (n > 0) c.dropped[r] = (c.dropped[r] ?? 0) + n;
      },
    },
  };
}

/** Records whose JSON says how often it was made (toJSON runs once per JSON.stringify). */
function records(n: number): { recs: FlowLogRecord[]; made: number[] } {
  const made = new Array<number>(n).fill(0);
  const recs = Array.from({ length: n }, (_, i) => ({
    toJSON: () => {
      made[i] = (made[i] ?? 0) + 1;
      return { flow: { verdict: 'FORWARDED', IP: { source: `10.0.0.${i}` }, source: { pod_name: `pöd-${i}` } }, node_name: 'n', time: '2026-11-27T01:00:00.5Z' };
    },
  }));
  return { recs, made };
}

test('recordsJson stringifies a record only when asked, and once', () => {
  const { recs, made } = records(3);
  const cyclic: Record<string, unknown> = {};
  cyclic['self'] = cyclic;
  const json = recordsJson([...recs, cyclic, { n: 1n }]);
  assert.deepEqual(made, [0, 0, 0]);
  const first = json.at(1);
  assert.equal(json.at(1), first);
  assert.deepEqual(made, [0, 1, 0]);
  assert.match(first ?? '', /"pöd-1"/);
  assert.equal(json.at(3), undefined);
  assert.equal(json.at(4), undefined);
  assert.equal(json.at(3), undefined);
});

test('the exporter hands every sink the same RecordsJson', () => {
  const metrics = createMetricsRegistry({ processMetrics: false });
  const seen: Array<RecordsJson | undefined> = [];
  const sink = (name: string): FlowLogSink => ({ name, write: (_r, json) => void seen.push(json), [Symbol.asyncDispose]: async () => undefined });
  const protos = loadFlowProtos(fileURLToPath(new URL('../../../proto/hubble', import.meta.url)));
  const e = createFlowExporter({ name: 't', selection: staticSelection([], []), sinks: [sink('a'), sink('b')], nodeName: 'n', protos, metrics, log });
  e.consume({ source: 't', flows: [createFlow({ srcIp: '10.0.0.1', dstIp: '10.0.0.2', verdict: 'FORWARDED' })] });
  assert.equal(seen.length, 2);
  assert.ok(seen[0] !== undefined && seen[0] === seen[1]);
});

test('file and OTLP sinks share each record\'s JSON: the line is the body, made once; a bad record is dropped alone', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'records-json-'));
  try {
    const fileCounts = counter();
    const otlpCounts = counter();
    const file = createFileSink({ path: join(dir, 'events.log'), maxSizeBytes: 1 << 20, maxBackups: 1, compress: false, counts: fileCounts.counts, log });
    const sent: OtlpLogRecord[] = [];
    const otlp = createOtlpSink({
      transport: { send: async (r) => (sent.push(...r), { kind: 'ok', rejected: 0 }), [Symbol.dispose]: () => undefined },
      counts: otlpCounts.counts, log, queueSize: 100, batchSize: 10, flushIntervalMs: 10,
    });
    const { recs, made } = records(5);
    const cyclic: Record<string, unknown> = {};
    cyclic['self'] = cyclic;
    const batch = [...recs.slice(0, 2), cyclic, ...recs.slice(2)];
    const json = recordsJson(batch);
    file.write(batch, json);
    otlp.write(batch, json);
    await file.flushed();
    await otlp.idle();
    assert.deepEqual(made, [1, 1, 1, 1, 1]);
    const lines = readFileSync(join(dir, 'events.log'), 'utf8').split('\n').filter(Boolean);
    assert.equal(lines.length, 5);
    assert.deepEqual(sent.map((r) => r.body), lines);
    assert.deepEqual(lines.map((l) => (JSON.parse(l) as { flow: { IP: { source: string } } }).flow.IP.source), ['10.0.0.0', '10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.4']);
    for (const { c } of [fileCounts, otlpCounts]) {
      assert.equal(c.written, 5);
      assert.deepEqual(c.dropped, { encode: 1 });
    }
    // Without a shared RecordsJson, each sink makes its own (the same text).
    const alone = records(1);
    file.write(alone.recs);
    otlp.write(alone.recs);
    await file.flushed();
    await otlp.idle();
    assert.deepEqual(alone.made, [2]);
    assert.equal(sent.at(-1)?.body, readFileSync(join(dir, 'events.log'), 'utf8').split('\n').filter(Boolean).at(-1));
    await file[Symbol.asyncDispose]();
    await otlp[Symbol.asyncDispose]();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
