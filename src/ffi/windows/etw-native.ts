/**
 * The native ETW consumer (native-windows/retina-etw.dll, built from native-windows/retina_etw.c):
 * ProcessTrace runs on the library's own thread and its C callback copies each event of one
 * provider into a bounded ring in native memory (an event that does not fit is counted, never
 * waited for). `drain()` takes a batch with ONE koffi call into a Buffer allocated once, then
 * copies the bytes it got into one Buffer of their own, so the records a drain returns stay valid
 * for as long as the caller holds them (a packet's appearances may straddle two drains). Each record
 * is the same `EtwEvent` the callback path (etw.ts) queues: event id, version, timestamp, user data.
 *
 * Record layout (retina_etw.c, RecordHead): u16 dataLength | u16 id | u8 version | u8 kind | u16
 * processor | i64 timestamp, then the user data, padded to 16 bytes.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import koffi from '../koffi.js';
import { WindowsCallError } from './errors.js';
import { writeGuid, type EtwEvent } from './etw-layout.js';
import { dllPath } from './libraries.js';

/** Where the library sits under the package (checkout, bundle and HostProcess package alike). */
export const NATIVE_ETW_FILE = join('native-windows', 'retina-etw.dll');
/** Overrides the library's path (tests: a missing file, to see the fallback). */
export const NATIVE_ETW_ENV = 'RETINATS_NATIVE_ETW';
const RECORD_HEAD = 16;
/** RETINA_ETW_VERSION of retina_etw.c: the record and stats layouts below. */
const NATIVE_ETW_VERSION = 1;
/** RetinaEtwStats: eight u64 counters, then done and processRc (u32). */
const STATS_BYTES = 8 * 8 + 8;
const WAIT_TIMEOUT = 258;
const OPEN_STEPS = ['', 'LoadLibraryW', 'GetProcAddress', 'VirtualAlloc', 'OpenTraceW', 'CreateThread'] as const;

/** The consumer's counters (RetinaEtwStats). */
export interface NativeEtwStats {
  /** Events of the provider ETW handed over: ringed + overflow. */
  readonly received: number;
  readonly ringed: number;
  /** Events that did not fit in the ring (dropped and counted, ETW never held up). */
  readonly overflow: number;
  /** Records taken by drains. */
  readonly drained: number;
  /** Events of other providers (not ringed). */
  readonly other: number;
  /** RT_LostEvent notices (RTLostEvent / RTLostBuffer / RTLostFile) ETW delivered. */
  readonly lostNotices: number;
  /** Buffers ETW delivered, and the events they held (BufferCallback): events per buffer. */
  readonly buffers: number;
  readonly bufferEvents: number;
  /** ProcessTrace has returned (the session ended or the consumer closed), with its return code. */
  readonly done: boolean;
  readonly processRc: number;
}

export interface NativeEtwConsumer {
  /** Takes up to `max` events (oldest first) in one native call. */
  drain(max: number): EtwEvent[];
  stats(): NativeEtwStats;
  /** The library file in use. */
  readonly path: string;
  /**
   * CloseTrace, then joins the ProcessTrace thread (up to `timeoutMs`) and frees the ring; safe
   * twice. Returns the final counters, or throws when the thread did not return in time.
   */
  close(timeoutMs?: number): NativeEtwStats;
}

type Fn = (...args: unknown[]) => unknown;
interface Lib {
  path: string;
  open: Fn;
  drain: Fn;
  stats: Fn;
  close: Fn;
}
let lib: Lib | undefined;

/** The library's path: $RETINATS_NATIVE_ETW, else native-windows/retina-etw.dll in the first folder above this module that has it. */
export function nativeEtwPath(env: NodeJS.ProcessEnv = process.env, from = dirname(fileURLToPath(import.meta.url))): string | undefined {
  const override = env[NATIVE_ETW_ENV];
  if (override) return existsSync(override) ? override : undefined;
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, NATIVE_ETW_FILE))) return join(dir, NATIVE_ETW_FILE);
    if (dirname(dir) === dir) return undefined;
  }
}

/** Loads the library once; throws naming the file when it is missing or does not load. */
function bind(): Lib {
  const path = nativeEtwPath();
  if (lib && lib.path === path) return lib;
  if (!path) throw new Error(`the native ETW consumer ${NATIVE_ETW_FILE} is not in the package${process.env[NATIVE_ETW_ENV] ? ` (${NATIVE_ETW_ENV}=${process.env[NATIVE_ETW_ENV]})` : ''}`);
  let l: koffi.IKoffiLib;
  try {
    l = koffi.load(path);
  } catch (e) {
    throw new Error(`cannot load the native ETW consumer ${path}`, { cause: e });
  }
  const version = (l.func('uint32_t RetinaEtwVersion(void)') as () => number)();
  const statsSize = (l.func('uint32_t RetinaEtwStatsSize(void)') as () => number)();
  if (version !== NATIVE_ETW_VERSION || statsSize !== STATS_BYTES) {
    throw new Error(`the native ETW consumer ${path} is version ${version} with ${statsSize}-byte stats; this agent reads version ${NATIVE_ETW_VERSION} with ${STATS_BYTES} (rebuild it: make native-windows)`);
  }
  lib = {
    path,
    open: l.func('void *RetinaEtwOpen(const char16_t *dll, const char16_t *session, void *provider, uint32_t ringBytes, _Out_ uint32_t *error, _Out_ uint32_t *step)') as Fn,
    drain: l.func('uint32_t RetinaEtwDrain(void *handle, void *out, uint32_t cap, uint32_t maxEvents, void *stats)') as Fn,
    stats: l.func('void RetinaEtwStatsGet(void *handle, void *stats)') as Fn,
    close: l.func('uint32_t RetinaEtwClose(void *handle, uint32_t timeoutMs, void *stats)') as Fn,
  };
  return lib;
}

function readStats(b: Buffer): NativeEtwStats {
  const u = (i: number): number => Number(b.readBigUInt64LE(i * 8));
  return {
    received: u(0), ringed: u(1), overflow: u(2), drained: u(3), other: u(4), lostNotices: u(5), buffers: u(6), bufferEvents: u(7),
    done: b.readUInt32LE(64) !== 0, processRc: b.readUInt32LE(68),
  };
}

/**
 * Parses drained bytes into events whose `data` are views of `bytes` (a DataView and
 * Buffer.from(arrayBuffer, offset, length): about a third cheaper per record than Buffer reads and
 * subarray, measured).
 */
export function parseRecords(bytes: Buffer, into: EtwEvent[] = []): EtwEvent[] {
  const ab = bytes.buffer;
  const base = bytes.byteOffset;
  const v = new DataView(ab, base, bytes.length);
  let o = 0;
  while (o + RECORD_HEAD <= bytes.length) {
    const len = v.getUint16(o, true);
    into.push({ id: v.getUint16(o + 2, true), version: v.getUint8(o + 4), timestamp: v.getBigInt64(o + 8, true), data: Buffer.from(ab, base + o + RECORD_HEAD, len) });
    o += (RECORD_HEAD + len + 15) & ~15;
  }
  return into;
}

export interface NativeEtwOptions {
  /** The real-time session to consume (started by startEtwSession). */
  readonly session: string;
  /** Only this provider's events are ringed. */
  readonly provider: string;
  /** The ring's size in bytes (at least 1 MiB). */
  readonly ringBytes: number;
  /** The drain buffer's size in bytes: the most one drain returns. */
  readonly drainBytes: number;
}

/** Opens the session with the native consumer; throws (naming the step) when the library is missing or the open fails. */
export function consumeEtwNative(opts: NativeEtwOptions): NativeEtwConsumer {
  const l = bind();
  const provider = Buffer.alloc(16);
  writeGuid(provider, 0, opts.provider);
  const error = [0];
  const step = [0];
  const handle = l.open(`${dllPath('advapi32')}`, opts.session, provider, opts.ringBytes >>> 0, error, step);
  if (!handle) {
    const what = OPEN_STEPS[step[0] ?? 0] ?? `step ${step[0]}`;
    throw new WindowsCallError(`retina-etw ${what}(${what === 'LoadLibraryW' || what === 'GetProcAddress' ? dllPath('advapi32') : opts.session})`, error[0] ?? 0, 'Win32');
  }
  const out = Buffer.allocUnsafeSlow(opts.drainBytes);
  const statsBuf = Buffer.alloc(STATS_BYTES);
  let final: NativeEtwStats | undefined;
  return {
    path: l.path,
    drain(max: number): EtwEvent[] {
      if (final) return [];
      const used = l.drain(handle, out, out.length, max >>> 0, statsBuf) as number;
      if (used === 0) return [];
      return parseRecords(Buffer.from(out.subarray(0, used)));
    },
    stats(): NativeEtwStats {
      if (final) return final;
      l.stats(handle, statsBuf);
      return readStats(statsBuf);
    },
    close(timeoutMs = 5000): NativeEtwStats {
      if (final) return final;
      const rc = l.close(handle, timeoutMs >>> 0, statsBuf) as number;
      if (rc === WAIT_TIMEOUT) throw new Error(`the native ETW consumer's ProcessTrace thread did not return within ${timeoutMs} ms of CloseTrace`);
      if (rc !== 0) throw new WindowsCallError(`CloseTrace(${opts.session})`, rc, 'Win32');
      final = readStats(statsBuf);
      return final;
    },
  };
}
