/**
 * Reading stored flow-log files back: the file sink's own rotation (plain and gzipped backups in name
 * order, then the live file), a partial last line, a gzip cut short, a file rotated (and gzipped)
 * while it is read, a backup pruned before it is opened, backups skipped by their rotation time.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { after, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { createLogger } from '../log/index.js';
import { backupName, createFileSink } from './file.js';
import { readRotatedLines } from './history.js';

const dir = mkdtempSync(join(tmpdir(), 'flow-history-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const log = createLogger({ level: 'error', stream: new PassThrough() });
const counts = { written: () => undefined, dropped: () => undefined };

async function all(gen: AsyncGenerator<string[]>): Promise<string[]> {
  const out: string[] = [];
  for await (const batch of gen) out.push(...batch);
  return out;
}

const rec = (i: number): Record<string, unknown> => ({ flow: { time: '2026-01-01T00:00:00Z', Summary: `flow ${i} ${'x'.repeat(40)}` }, node_name: 'n', i });

for (const compress of [false, true]) {
  test(`what the file sink wrote, rotated${compress ? ' and gzipped' : ''}, read back in order, each line once`, async () => {
    const d = join(dir, `sink-${compress}`);
    let t = Date.UTC(2026, 0, 1);
    const path = join(d, 'events.log');
    const sink = createFileSink({ path, maxSizeBytes: 2048, maxBackups: 0, compress, counts, log, now: () => new Date((t += 1000)) });
    for (let b = 0; b < 30; b++) {
      sink.write(Array.from({ length: 10 }, (_, i) => rec(b * 10 + i)));
      await sink.flushed();
    }
    await sink[Symbol.asyncDispose]();
    const files = readdirSync(d);
    assert.ok(files.filter((f) => f !== 'events.log').length >= 10, files.join(' '));
    if (compress) assert.ok(files.every((f) => f === 'events.log' || f.endsWith('.log.gz')), files.join(' '));
    const lines = await all(readRotatedLines(path, { chunkBytes: 1000 }));
    assert.deepEqual(lines.map((l) => (JSON.parse(l) as { i: number }).i), Array.from({ length: 300 }, (_, i) => i));
  });
}

test('a partial last line is not handed out; a gzip cut short ends at its last whole line; reading goes on with the next file', async () => {
  const d = join(dir, 'partial');
  mkdirSync(d);
  const path = join(d, 'events.log');
  writeFileSync(backupName(path, new Date(Date.UTC(2026, 0, 1, 0, 0, 1))), 'a\nb\n{"partial');
  writeFileSync(`${backupName(path, new Date(Date.UTC(2026, 0, 1, 0, 0, 2)))}.gz`, gzipSync('c\nd\n'));
  const cut = gzipSync(Array.from({ length: 2000 }, (_, i) => `e${i}`).join('\n') + '\n');
  writeFileSync(`${backupName(path, new Date(Date.UTC(2026, 0, 1, 0, 0, 3)))}.gz`, cut.subarray(0, cut.length >> 1));
  writeFileSync(path, 'f\ng\n{"being written');
  const lines = await all(readRotatedLines(path, { chunkBytes: 64 }));
  const es = lines.filter((l) => l.startsWith('e'));
  assert.ok(es.length > 0 && es.length < 2000, `part of the cut gzip: ${es.length}`);
  assert.deepEqual(es, Array.from({ length: es.length }, (_, i) => `e${i}`), 'its whole lines, in order');
  assert.deepEqual(lines.filter((l) => !l.startsWith('e')), ['a', 'b', 'c', 'd', 'f', 'g']);
});

test('a file rotated (and then gzipped) while it is read: read to its end once, then the new live file', async () => {
  const d = join(dir, 'rotating');
  mkdirSync(d);
  const path = join(d, 'events.log');
  writeFileSync(backupName(path, new Date(Date.UTC(2026, 0, 1, 0, 0, 1))), 'old1\nold2\n');
  const live = Array.from({ length: 50 }, (_, i) => `live${i}`);
  writeFileSync(path, live.slice(0, 40).join('\n') + '\n');
  const gen = readRotatedLines(path, { chunkBytes: 32 });
  const got: string[] = [];
  let rotated = false;
  for await (const batch of gen) {
    got.push(...batch);
    if (!rotated && got.includes('live3')) {
      rotated = true;
      // The writer appends its last lines, closes, renames; a new live file follows; the backup is gzipped and the plain unlinked.
      writeFileSync(path, live.slice(40).join('\n') + '\n', { flag: 'a' });
      const backup = backupName(path, new Date(Date.UTC(2026, 0, 1, 0, 0, 2)));
      renameSync(path, backup);
      writeFileSync(path, 'new1\nnew2\n');
      writeFileSync(`${backup}.gz`, gzipSync(live.join('\n') + '\n'));
      unlinkSync(backup);
    }
  }
  assert.ok(rotated);
  assert.deepEqual(got, ['old1', 'old2', ...live, 'new1', 'new2']);
});

test('a backup pruned before it is opened is passed over; with sinceMs, backups rotated before it (by more than the slack) are not read', async () => {
  const d = join(dir, 'pruned');
  mkdirSync(d);
  const path = join(d, 'events.log');
  const at = (s: number): string => backupName(path, new Date(Date.UTC(2026, 0, 1, 0, 0, s)));
  writeFileSync(at(1), Array.from({ length: 20 }, (_, i) => `one${i}`).join('\n') + '\n');
  writeFileSync(at(2), 'two\n');
  writeFileSync(at(3), 'three\n');
  writeFileSync(path, 'live\n');
  const got: string[] = [];
  for await (const batch of readRotatedLines(path, { chunkBytes: 16 })) {
    if (got.length === 0) unlinkSync(at(2));
    got.push(...batch);
  }
  assert.deepEqual(got, [...Array.from({ length: 20 }, (_, i) => `one${i}`), 'three', 'live']);
  // Rotated at 00:00:01 and 00:00:03; asked from 00:01:02.500 with a 60 s slack: the first is skipped, the second read.
  const since = await all(readRotatedLines(path, { sinceMs: Date.UTC(2026, 0, 1, 0, 1, 2, 500), slackMs: 60_000 }));
  assert.deepEqual(since, ['three', 'live']);
  assert.deepEqual(await all(readRotatedLines(join(d, 'none.log'))), [], 'no file: nothing');
});
