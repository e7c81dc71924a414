/**
 * The file sink: JSON lines, size rotation with lumberjack's names, the backup count, gzip of rotated
 * files, and drops counted by reason (queue full, a full device, an unwritable path) with recovery
 * once the path can be written. A real full tmpfs is in test/chaos/flow-log-disk.test.ts.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, mkdirSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { after, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { createLogger } from '../log/index.js';
import type { DropReason, SinkCounts } from './counts.js';
import { backupName, createFileSink } from './file.js';

const dir = mkdtempSync(join(tmpdir(), 'file-sink-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const log = createLogger({ level: 'error', stream: new PassThrough() });

function tally(): SinkCounts & { written_: number; dropped_: Record<string, number> } {
  const t = {
    written_: 0, dropped_: {} as Record<string, number>,
    written(n: number) { t.written_ += n; },
    dropped(reason: DropReason, n: number) { t.dropped_[reason] = (t.dropped_[reason] ?? 0) + n; },
  };
  return t;
}

const rec = (i: number): Record<string, unknown> => ({ flow: { time: '2026-01-01T00:00:00Z', verdict: 'FORWARDED', IP: { source: `10.0.0.${i % 250}` }, Summary: 'x'.repeat(40) }, node_name: 'n', time: '2026-01-01T00:00:00Z', i });

/** Every line of the live file and its backups (gunzipped), as parsed records, oldest file first. */
function allLines(d: string, stem: string): Record<string, unknown>[] {
  const files = readdirSync(d).filter((n) => n.startsWith(stem)).sort((a, b) => (a === `${stem}.log` ? 1 : b === `${stem}.log` ? -1 : a.localeCompare(b)));
  return files.flatMap((n) => {
    const raw = readFileSync(join(d, n));
    const text = n.endsWith('.gz') ? gunzipSync(raw).toString('utf8') : raw.toString('utf8');
    return text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown>);
  });
}

test('lumberjack backup names: <name>-<UTC stamp><ext> beside the file', () => {
  assert.equal(backupName('/var/log/acns/hubble/events.log', new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 6))), '/var/log/acns/hubble/events-2026-01-02T03-04-05.006.log');
});

test('JSON lines, rotated by size, the newest backups kept, every record counted written', async () => {
  const d = join(dir, 'rotate');
  let t = Date.UTC(2026, 0, 1);
  const counts = tally();
  const sink = createFileSink({ path: join(d, 'events.log'), maxSizeBytes: 4096, maxBackups: 3, compress: false, counts, log, now: () => new Date((t += 1000)) });
  for (let b = 0; b < 20; b++) {
    sink.write(Array.from({ length: 10 }, (_, i) => rec(b * 10 + i)));
    await sink.flushed();
  }
  await sink[Symbol.asyncDispose]();
  const files = readdirSync(d).sort();
  assert.equal(files.length, 4, `3 backups and the live file: ${files.join(' ')}`);
  assert.ok(files.includes('events.log'));
  for (const f of files) assert.ok(readFileSync(join(d, f)).length <= 4096, `${f} within the size`);
  const lines = allLines(d, 'events');
  // The oldest backups were removed; what is left is the newest records, in order, with no gap.
  const ids = lines.map((l) => l['i'] as number);
  assert.deepEqual(ids, Array.from({ length: ids.length }, (_, k) => 200 - ids.length + k));
  assert.deepEqual(lines[0], rec(ids[0]!));
  assert.equal(counts.written_, 200);
  assert.deepEqual(counts.dropped_, {});
});

test('rotated files are gzipped (.log.gz) and the live file stays plain', async () => {
  const d = join(dir, 'gzip');
  let t = Date.UTC(2026, 0, 1);
  const counts = tally();
  const sink = createFileSink({ path: join(d, 'events.log'), maxSizeBytes: 2048, maxBackups: 0, compress: true, counts, log, now: () => new Date((t += 1000)) });
  for (let b = 0; b < 10; b++) {
    sink.write(Array.from({ length: 10 }, (_, i) => rec(b * 10 + i)));
    await sink.flushed();
  }
  await sink[Symbol.asyncDispose]();
  const files = readdirSync(d).sort();
  assert.ok(files.filter((f) => f.endsWith('.log.gz')).length >= 5, files.join(' '));
  assert.deepEqual(files.filter((f) => f !== 'events.log' && !f.endsWith('.gz')), [], 'no uncompressed backup left');
  // maxBackups 0 keeps every backup: all 100 records are there.
  assert.deepEqual(allLines(d, 'events').map((l) => l['i']), Array.from({ length: 100 }, (_, k) => k));
  assert.equal(counts.written_, 100);
});

test('a full queue drops the lines that do not fit, counted queue_full; the rest is written', async () => {
  const d = join(dir, 'queue');
  const counts = tally();
  const line = JSON.stringify(rec(0)).length + 1;
  const sink = createFileSink({ path: join(d, 'events.log'), maxSizeBytes: 1 << 20, maxBackups: 1, compress: false, maxBufferedBytes: line * 5, counts, log });
  sink.write(Array.from({ length: 12 }, (_, i) => rec(i)));
  await sink.flushed();
  await sink[Symbol.asyncDispose]();
  assert.equal(counts.written_, 5);
  assert.deepEqual(counts.dropped_, { queue_full: 7 });
  assert.equal(allLines(d, 'events').length, 5);
});

test('a full device (/dev/full: ENOSPC) drops and counts disk_full; write() never throws', async () => {
  const counts = tally();
  const sink = createFileSink({ path: '/dev/full', maxSizeBytes: 1 << 30, maxBackups: 1, compress: false, counts, log });
  sink.write([rec(1), rec(2)]);
  sink.write([rec(3)]);
  await sink.flushed();
  await sink[Symbol.asyncDispose]();
  assert.equal(counts.written_, 0);
  assert.deepEqual(counts.dropped_, { disk_full: 3 });
});

test('an unwritable path drops and counts unwritable, and writing resumes once the path is fixed', async () => {
  const d = join(dir, 'unwritable');
  mkdirSync(d);
  writeFileSync(join(d, 'sub'), 'a file where the directory should be');
  const counts = tally();
  const sink = createFileSink({ path: join(d, 'sub', 'events.log'), maxSizeBytes: 1 << 20, maxBackups: 1, compress: false, counts, log });
  sink.write([rec(1), rec(2)]);
  await sink.flushed();
  assert.deepEqual(counts.dropped_, { unwritable: 2 });
  rmSync(join(d, 'sub'));
  sink.write([rec(3)]);
  await sink.flushed();
  await sink[Symbol.asyncDispose]();
  assert.equal(counts.written_, 1);
  assert.ok(existsSync(join(d, 'sub', 'events.log')), 'the directory was made');
  assert.deepEqual(allLines(join(d, 'sub'), 'events').map((l) => l['i']), [3]);
  sink.write([rec(4)]);
  assert.deepEqual(counts.dropped_, { unwritable: 2, closed: 1 }, 'after close: counted, not written');
});

test('records that cannot be encoded count as encode drops', async () => {
  const d = join(dir, 'encode');
  const counts = tally();
  const sink = createFileSink({ path: join(d, 'events.log'), maxSizeBytes: 1 << 20, maxBackups: 1, compress: false, counts, log });
  const cyclic: Record<string, unknown> = {};
  cyclic['self'] = cyclic;
  sink.write([rec(1), cyclic, { n: 1n }]);
  await sink[Symbol.asyncDispose]();
  assert.equal(counts.written_, 1);
  assert.deepEqual(counts.dropped_, { encode: 2 });
});
