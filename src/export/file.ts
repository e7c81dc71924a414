/**
 * The file sink: flow-log records as JSON lines (one `hubble observe -o json` line each) appended to a
 * host file, rotated by size as Cilium's Hubble exporter does (lumberjack's scheme: the full file
 * becomes `<name>-<UTC time>.<ext>`, optionally gzipped to `.<ext>.gz`, and only the newest
 * `maxBackups` backups are kept; 0 keeps them all, as lumberjack does).
 *
 * Never blocks the drain: `write` encodes the records and queues the lines in memory (at most
 * `maxBufferedBytes`; a line that does not fit is dropped, reason `queue_full`) and returns; one
 * asynchronous writer appends the queue to the file. A write that fails drops its lines with the
 * reason (`disk_full` for ENOSPC/EDQUOT, `unwritable` for everything else: permissions, a read-only
 * file system, a missing directory that cannot be made) and the file is cut back to its last whole
 * line, so a full disk leaves no half line behind. Nothing is retried: lines after a failure are
 * tried afresh, so writing resumes by itself when the path becomes writable again (space freed,
 * permissions fixed). Every record handed in ends as exactly one written or dropped count.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, readdir, rename, unlink, type FileHandle } from 'node:fs/promises';
import { basename, dirname, extname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { errorFields, type Logger } from '../log/index.js';
import type { DropReason, SinkCounts } from './counts.js';
import { recordsJson } from './records-json.js';
import type { FlowLogSink } from './types.js';

export interface FileSinkOptions {
  readonly path: string;
  /** Rotate when the file would grow past this many bytes. */
  readonly maxSizeBytes: number;
  /** Rotated files kept (0: all, as lumberjack). */
  readonly maxBackups: number;
  /** Gzip rotated files. */
  readonly compress: boolean;
  /** Encoded lines queued for the writer at most (bytes); default 8 MiB. */
  readonly maxBufferedBytes?: number;
  readonly counts: SinkCounts;
  readonly log: Logger;
  /** The `sink` label; default `file`. */
  readonly name?: string;
  /** For tests: the clock of backup names. */
  readonly now?: () => Date;
}

export interface FileSink extends FlowLogSink {
  /** Resolves when everything queued so far has been written or dropped. */
  flushed(): Promise<void>;
}

const DEFAULT_BUFFER = 8 << 20;

/** Why a write failed, as flow_log_records_total's reason. */
export function dropReasonOf(e: unknown): DropReason {
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOSPC' || code === 'EDQUOT' ? 'disk_full' : 'unwritable';
}

const pad = (n: number, w = 2): string => String(n).padStart(w, '0');

/** lumberjack's backup name: `<name>-2006-01-02T15-04-05.000<ext>` in UTC, beside the file. */
export function backupName(path: string, t: Date): string {
  const ext = extname(path);
  const base = basename(path, ext);
  const stamp = `${t.getUTCFullYear()}-${pad(t.getUTCMonth() + 1)}-${pad(t.getUTCDate())}T${pad(t.getUTCHours())}-${pad(t.getUTCMinutes())}-${pad(t.getUTCSeconds())}.${pad(t.getUTCMilliseconds(), 3)}`;
  return join(dirname(path), `${base}-${stamp}${ext}`);
}

const STAMP = /^(\d{4})-(\d\d)-(\d\d)T(\d\d)-(\d\d)-(\d\d)\.(\d{3})/;

/** The rotation time a backup's name holds (ms since the epoch, UTC), or undefined when `name` is not a backup of `path`. */
export function backupTimeMs(path: string, name: string): number | undefined {
  const ext = extname(path);
  const prefix = `${basename(path, ext)}-`;
  if (!name.startsWith(prefix) || !(name.endsWith(ext) || name.endsWith(`${ext}.gz`))) return undefined;
  const m = STAMP.exec(name.slice(prefix.length));
  if (m === null) return undefined;
  return Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]), Number(m[7]));
}

/** The backups of the file at `path` (names in its directory, plain and gzipped), oldest first: the UTC stamp sorts as text. */
export async function listBackups(path: string): Promise<string[]> {
  const names = await readdir(dirname(path)).catch(() => [] as string[]);
  return names.filter((n) => backupTimeMs(path, n) !== undefined).sort();
}

export function createFileSink(o: FileSinkOptions): FileSink {
  const name = o.name ?? 'file';
  const log = o.log.child({ sink: name, path: o.path });
  const maxBuffered = o.maxBufferedBytes ?? DEFAULT_BUFFER;
  const now = o.now ?? (() => new Date());
  const dir = dirname(o.path);

  let queue: string[] = [];
  let queuedBytes = 0;
  let fh: FileHandle | undefined;
  let size = 0;
  let running: Promise<void> | undefined;
  let closed = false;
  /** Set while writes fail: what failed, and how many lines were dropped meanwhile (logged on recovery). */
  let failing: { reason: DropReason; dropped: number } | undefined;
  const compressions = new Set<Promise<void>>();

  const fail = (e: unknown, lines: number): void => {
    const reason = dropReasonOf(e);
    o.counts.dropped(reason, lines);
    if (failing === undefined || failing.reason !== reason) {
      log.warn('flow-log file cannot be written; its lines are dropped and counted until it can', { reason, error: errorFields(e as Error) });
      failing = { reason, dropped: 0 };
    }
    failing.dropped += lines;
  };

  const openFile = async (): Promise<FileHandle> => {
    if (fh) return fh;
    await mkdir(dir, { recursive: true });
    const h = await open(o.path, 'a');
    try {
      size = (await h.stat()).size;
    } catch (e) {
      await h.close().catch(() => undefined);
      throw e;
    }
    fh = h;
    return h;
  };

  const closeFile = async (): Promise<void> => {
    const h = fh;
    fh = undefined;
    await h?.close().catch(() => undefined);
  };

  /** Backups of this file, oldest first. */
  const backups = (): Promise<string[]> => listBackups(o.path);

  const prune = async (): Promise<void> => {
    if (o.maxBackups <= 0) return;
    const all = await backups();
    for (const n of all.slice(0, Math.max(0, all.length - o.maxBackups))) await unlink(join(dir, n)).catch(() => undefined);
  };

  const compress = (file: string): void => {
    const p = (async () => {
      try {
        await pipeline(createReadStream(file), createGzip(), createWriteStream(`${file}.gz`));
        await unlink(file);
      } catch (e) {
        // A full disk: keep the plain backup, drop the partial .gz.
        await unlink(`${file}.gz`).catch(() => undefined);
        log.warn('could not compress a rotated flow-log file; it stays uncompressed', { file, error: errorFields(e as Error) });
      }
      await prune();
    })();
    compressions.add(p);
    void p.finally(() => compressions.delete(p));
  };

  const rotate = async (): Promise<void> => {
    await closeFile();
    let target = backupName(o.path, now());
    // Two rotations in one millisecond: the next free name.
    for (let i = 1; (await backups()).includes(basename(target)); i++) target = backupName(o.path, new Date(now().getTime() + i));
    await rename(o.path, target);
    size = 0;
    if (o.compress) compress(target);
    else await prune();
  };

  /** Appends one chunk of whole lines; on failure cuts the file back to its last whole line. */
  const append = async (text: string, lines: number): Promise<void> => {
    const buf = Buffer.from(text, 'utf8');
    let h: FileHandle;
    try {
      h = await openFile();
      if (size > 0 && size + buf.length > o.maxSizeBytes) {
        await rotate();
        h = await openFile();
      }
    } catch (e) {
      await closeFile();
      fail(e, lines);
      return;
    }
    const start = size;
    let done = 0;
    try {
      while (done < buf.length) {
        const { bytesWritten } = await h.write(buf, done, buf.length - done);
        if (bytesWritten === 0) throw Object.assign(new Error('no bytes written'), { code: 'ENOSPC' });
        done += bytesWritten;
      }
      size = start + done;
      o.counts.written(lines);
      if (failing) {
        log.info('flow-log file writable again', { reason: failing.reason, droppedMeanwhile: failing.dropped });
        failing = undefined;
      }
    } catch (e) {
      if (done > 0) await h.truncate(start).catch(() => undefined);
      await closeFile();
      fail(e, lines);
    }
  };

  /** Chunks of at most this many bytes per write. */
  const CHUNK = 1 << 20;

  const run = async (): Promise<void> => {
    while (queue.length) {
      let text = '';
      let lines = 0;
      let i = 0;
      for (; i < queue.length && (i === 0 || text.length < CHUNK); i++) {
        text += queue[i];
        lines++;
      }
      queue = queue.slice(i);
      queuedBytes -= text.length;
      await append(text, lines);
    }
  };

  const kick = (): void => {
    if (running || queue.length === 0) return;
    running = run().finally(() => {
      running = undefined;
      kick();
    });
  };

  return {
    name,
    write(records, json = recordsJson(records)) {
      if (closed) {
        o.counts.dropped('closed', records.length);
        return;
      }
      let full = 0;
      let bad = 0;
      for (let i = 0; i < records.length; i++) {
        const text = json.at(i);
        if (text === undefined) {
          bad++;
          continue;
        }
        const line = text + '\n';
        if (queuedBytes + line.length > maxBuffered) {
          full++;
          continue;
        }
        queue.push(line);
        queuedBytes += line.length;
      }
      if (full) o.counts.dropped('queue_full', full);
      if (bad) o.counts.dropped('encode', bad);
      kick();
    },
    async flushed() {
      while (running) await running;
    },
    async [Symbol.asyncDispose]() {
      if (closed) return;
      closed = true;
      const deadline = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), 5000).unref());
      const drained = (async () => {
        while (running) await running;
      })();
      if ((await Promise.race([drained, deadline])) === 'timeout') {
        const left = queue.length;
        queue = [];
        queuedBytes = 0;
        o.counts.dropped('closed', left);
        log.warn('flow-log file: lines still queued at shutdown were dropped', { dropped: left });
        await Promise.race([drained, new Promise((r) => setTimeout(r, 1000).unref())]);
      }
      await Promise.race([Promise.allSettled([...compressions]), new Promise((r) => setTimeout(r, 5000).unref())]);
      await closeFile();
    },
  };
}
