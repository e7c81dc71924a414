/**
 * Chaos: the flow-log file sink on a real full disk: a 256 KiB tmpfs the test mounts (root). Batches
 * go in until the disk is full: every record ends as exactly one written or disk_full count, the
 * file holds exactly the written lines and no half line (a failed batch is cut back), write() never
 * throws or blocks; once space is freed the next lines are written again.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statfsSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { after, before, test } from 'node:test';
import { createFileSink, type DropReason, type SinkCounts } from '../../src/export/index.js';
import { createLogger } from '../../src/log/index.js';

const dir = mkdtempSync(join(tmpdir(), 'chaos-flowlog-'));
let mounted = false;

before(() => {
  if (process.getuid?.() !== 0) throw new Error('the chaos tests need root (mount)');
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=256k', 'chaosflowlog', dir]);
  mounted = true;
});

after(() => {
  if (mounted) execFileSync('umount', ['-l', dir]);
  rmSync(dir, { recursive: true, force: true });
});

test('a full disk: exact written + disk_full counts, no half line, writing resumes when space is freed', { timeout: 60_000 }, async () => {
  let logText = '';
  const stream = new PassThrough();
  stream.on('data', (d: Buffer) => (logText += d.toString()));
  const counts = { written: 0, dropped: {} as Record<string, number> };
  const sc: SinkCounts = {
    written: (n) => void (counts.written += n),
    dropped: (r: DropReason, n) => void (counts.dropped[r] = (counts.dropped[r] ?? 0) + n),
  };
  // A filler the test frees later.
  writeFileSync(join(dir, 'filler'), Buffer.alloc(64 * 1024, 1));
  const path = join(dir, 'events.log');
  const sink = createFileSink({ path, maxSizeBytes: 64 << 20, maxBackups: 1, compress: false, counts: sc, log: createLogger({ level: 'info', stream }) });
  const rec = (i: number): Record<string, unknown> => ({ flow: { time: '2026-01-01T00:00:00Z', verdict: 'FORWARDED', Summary: 'y'.repeat(300) }, node_name: 'n', time: '2026-01-01T00:00:00Z', i });
  let sent = 0;
  for (let b = 0; b < 200; b++) {
    const batch = Array.from({ length: 10 }, () => rec(sent++));
    const t0 = process.hrtime.bigint();
    sink.write(batch);
    assert.ok(Number(process.hrtime.bigint() - t0) < 50e6, 'write() returns at once');
    await sink.flushed();
  }
  assert.ok(statfsSync(dir).bavail === 0 || (counts.dropped['disk_full'] ?? 0) > 0, 'the disk filled');
  assert.ok((counts.dropped['disk_full'] ?? 0) > 0, `disk_full counted: ${JSON.stringify(counts)}`);
  assert.equal(counts.written + (counts.dropped['disk_full'] ?? 0), sent, 'every record counted once');
  const text = readFileSync(path, 'utf8');
  assert.ok(text === '' || text.endsWith('\n'), 'no half line at the end');
  const lines = text.split('\n').filter((l) => l !== '');
  assert.equal(lines.length, counts.written, 'the file holds exactly the written lines');
  for (const l of lines) JSON.parse(l);
  assert.match(logText, /flow-log file cannot be written/);

  // Space again: the next batch is written.
  unlinkSync(join(dir, 'filler'));
  const before = counts.written;
  sink.write([rec(sent++), rec(sent++)]);
  await sink.flushed();
  assert.equal(counts.written, before + 2);
  assert.match(logText, /flow-log file writable again/);
  await sink[Symbol.asyncDispose]();
  const after = readFileSync(path, 'utf8').split('\n').filter((l) => l !== '');
  assert.equal(after.length, counts.written);
  assert.deepEqual(after.slice(-2).map((l) => (JSON.parse(l) as { i: number }).i), [sent - 2, sent - 1]);
});
