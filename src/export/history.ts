/**
 * The stored flow-log files read back (issue 42: Hubble history beyond the ring): the lines of a
 * file sink's file and its rotated backups (file.ts: lumberjack's `<name>-<UTC time>.<ext>[.gz]`),
 * oldest first, streamed in chunks (never a whole file in memory), and the static exporter's files as
 * the Hubble server's stored history (`hubble.history.fromExport`).
 *
 * Order: the backups in name order (their UTC stamps sort as text), then the live file. Rotation while
 * reading: the live file is read through its open descriptor; when a newer backup has appeared by its
 * end, that backup is the file being read (renamed, closed by the writer before the rename, so its
 * content is final): the descriptor is read on to its end and reading goes on with the backups after
 * it and the new live file. A backup listed plain may be gzipped meanwhile (the plain is read when it
 * is still there, else the `.gz`), and one pruned before it is opened is passed over. A `.gz` is
 * decompressed as a stream; one cut short (a crash while compressing) ends at its last whole line.
 * A last line without its newline (a write in progress, or cut by a crash) is not handed out.
 *
 * With `sinceMs`, a backup rotated more than `slackMs` before it is skipped unread: every line of a
 * backup was written before its rotation, and a flow is written after its time (by the drain's
 * latency; the slack covers that and clock steps).
 */
import { createReadStream } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { createGunzip } from 'node:zlib';
import type { StaticExportConfig } from '../config/index.js';
import type { Flow } from '../flow/index.js';
import { compileFlowFilters, toHubbleFlow } from '../flow/hubble/index.js';
import { flowRecord, type ExportProtos } from './exporter.js';
import { backupTimeMs, listBackups } from './file.js';
import type { FlowFilterObject } from './types.js';

export interface RotatedReadOptions {
  /** Skip backups rotated more than `slackMs` before this time (ms since the epoch). */
  readonly sinceMs?: number | undefined;
  /** Default 60 s. */
  readonly slackMs?: number;
  /** Bytes read at a time (default 256 KiB). */
  readonly chunkBytes?: number;
}

const isMissing = (e: unknown): boolean => (e as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';

/** Splits chunks into whole lines (without their newline); the bytes after the last newline wait for the next chunk. */
function lineSplitter(): (chunk: Buffer, copyCarry: boolean) => string[] {
  let carry: Buffer | undefined;
  return (chunk, copyCarry) => {
    const lines: string[] = [];
    let start = 0;
    for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
      if (carry !== undefined) {
        lines.push(Buffer.concat([carry, chunk.subarray(start, nl)]).toString('utf8'));
        carry = undefined;
      } else if (nl > start) {
        lines.push(chunk.toString('utf8', start, nl));
      }
      start = nl + 1;
    }
    if (start < chunk.length) {
      const rest = copyCarry ? Buffer.from(chunk.subarray(start)) : chunk.subarray(start);
      carry = carry === undefined ? rest : Buffer.concat([carry, rest]);
    }
    return lines;
  };
}

/** An open file read in chunks from where it was left: `batches()` runs to the current end, and again later from there. */
function fileBatches(fh: FileHandle, chunkBytes: number): () => AsyncGenerator<string[]> {
  const buf = Buffer.allocUnsafe(chunkBytes);
  const split = lineSplitter();
  let pos = 0;
  return async function* batches() {
    for (;;) {
      const { bytesRead } = await fh.read(buf, 0, buf.length, pos);
      if (bytesRead === 0) return;
      pos += bytesRead;
      const lines = split(buf.subarray(0, bytesRead), true);
      if (lines.length) yield lines;
    }
  };
}

/** A gzipped backup's lines, decompressed as a stream; a stream cut short ends at its last whole line. */
async function* gzipBatches(path: string, chunkBytes: number): AsyncGenerator<string[]> {
  const file = createReadStream(path, { highWaterMark: chunkBytes });
  const gunzip = file.pipe(createGunzip({ chunkSize: chunkBytes }));
  file.on('error', (e) => gunzip.destroy(e));
  const split = lineSplitter();
  try {
    for await (const chunk of gunzip) {
      const lines = split(chunk as Buffer, false);
      if (lines.length) yield lines;
    }
  } catch (e) {
    if (isMissing(e)) return;
    if ((e as NodeJS.ErrnoException).code !== 'Z_BUF_ERROR' && (e as NodeJS.ErrnoException).code !== 'Z_DATA_ERROR') throw e;
  } finally {
    gunzip.destroy();
    file.destroy();
  }
}

/** One backup (by its name without `.gz`): the plain file while it is there, else its `.gz`; nothing when pruned. */
async function* backupBatches(path: string, chunkBytes: number): AsyncGenerator<string[]> {
  let fh: FileHandle;
  try {
    fh = await open(path, 'r');
  } catch (e) {
    if (!isMissing(e)) throw e;
    yield* gzipBatches(`${path}.gz`, chunkBytes);
    return;
  }
  try {
    yield* fileBatches(fh, chunkBytes)();
  } finally {
    await fh.close().catch(() => undefined);
  }
}

/**
 * The whole lines of `path` and its backups, oldest first, in batches (one chunk's lines); stopping
 * early (`return()`) closes what is open.
 */
export async function* readRotatedLines(path: string, o: RotatedReadOptions = {}): AsyncGenerator<string[], void, undefined> {
  const slack = o.slackMs ?? 60_000;
  const chunk = o.chunkBytes ?? 256 * 1024;
  const dir = dirname(path);
  const stem = (n: string): string => (n.endsWith('.gz') ? n.slice(0, -3) : n);
  /** Backups (names without .gz) after `done`, oldest first. */
  const newer = async (done: string): Promise<string[]> => [...new Set((await listBackups(path)).map(stem))].filter((s) => s > done).sort();
  let done = '';
  for (;;) {
    const pending = await newer(done);
    const next = pending[0];
    if (next !== undefined) {
      done = next;
      const rotated = backupTimeMs(path, next);
      if (o.sinceMs !== undefined && rotated !== undefined && rotated < o.sinceMs - slack) continue;
      yield* backupBatches(join(dir, next), chunk);
      continue;
    }
    let fh: FileHandle;
    try {
      fh = await open(path, 'r');
    } catch (e) {
      if (isMissing(e)) return;
      throw e;
    }
    try {
      // Rotated between the listing and the open: that backup (the file that was live) first.
      if ((await newer(done)).length > 0) continue;
      const batches = fileBatches(fh, chunk);
      yield* batches();
      const after = (await newer(done))[0];
      if (after === undefined) return; // still the live file: what is appended now is newer than the request
      // Rotated while read: it is the first newer backup, now final; read on to its end.
      yield* batches();
      done = after;
    } finally {
      await fh.close().catch(() => undefined);
    }
  }
}

/** The Hubble server's stored history (src/server/hubble/history.ts `StoredFlowSource`), from the static exporter's files. */
export interface ExportHistory {
  readonly name: string;
  readonly allow: readonly FlowFilterObject[];
  readonly deny: readonly FlowFilterObject[];
  lines(sinceMs: number | undefined): AsyncGenerator<string[], void, undefined>;
  lineOf(flow: Readonly<Flow>): string | undefined;
}

export interface ExportHistoryOptions {
  readonly config: StaticExportConfig;
  /** The exporter's node name (what it writes for flows that carry none). */
  readonly nodeName: string;
  readonly protos: ExportProtos;
}

/**
 * hubble.export.static's files as stored history. Its records must be whole flows, one per line
 * (no field mask, no aggregation: the configuration refuses both with hubble.history.fromExport).
 * `lineOf` is the line the exporter writes for a flow (or undefined when its lists do not select it),
 * with which the server finds where the files meet its ring.
 */
export function createExportHistory(o: ExportHistoryOptions): ExportHistory {
  const s = o.config;
  if (s.fieldMask.length > 0 || s.aggregationIntervalMs > 0) throw new Error('hubble.export.static writes masked or aggregated records: they cannot be read back as flows');
  const matcher = compileFlowFilters(s.allowList, s.denyList, o.protos.enums);
  return {
    name: `hubble.export.static (${s.file.path})`,
    allow: s.allowList,
    deny: s.denyList,
    lines: (sinceMs) => readRotatedLines(s.file.path, { sinceMs }),
    lineOf(flow) {
      const h = toHubbleFlow(flow, o.nodeName);
      return matcher.match(h) ? JSON.stringify(flowRecord(h, o.protos.json, undefined)) : undefined;
    },
  };
}
