/**
 * ETW real-time sessions (advapi32.dll): start a session of ours (a left-over one of the same name,
 * from a crashed agent, is stopped and started again), enable a provider in it, consume it with
 * ProcessTrace on a koffi worker thread, query its loss counters, stop it.
 *
 * Threading: ProcessTrace blocks and calls the EVENT_RECORD callback on its own thread; koffi runs a
 * registered callback called from another thread on the JS main thread while that thread waits
 * (windows.md A.7b, ~20 µs a call). The callback only copies the user data into a bounded queue
 * (no decode, no allocation beyond the copy) and JS drains the queue in batches; when the queue is
 * full the event is dropped and counted. ETW itself never blocks a provider: events a slow consumer
 * cannot take are lost in the session's buffers and show up in `losses()`.
 */
import koffi from '../koffi.js';
import { WindowsCallError, checkWin32 } from './errors.js';
import { type EtwEvent, type SessionLosses, enableParameters, logfile, readEventHeader, readLosses, traceProperties, writeGuid, ETW_LAYOUT } from './etw-layout.js';
import { loadDll } from './libraries.js';

export const ERROR_ALREADY_EXISTS = 183;
/** ControlTraceW's answer for a session that does not run. */
export const ERROR_WMI_INSTANCE_NOT_FOUND = 4201;
/** The real-time session the pktmon plugin runs (diagnose looks it up by this name). */
export const PKTMON_SESSION_NAME = 'retina-ts-pktmon';
const CONTROL_QUERY = 0;
const CONTROL_STOP = 1;
const ENABLE = 1;
const INVALID_HANDLE = 0xffff_ffff_ffff_ffffn;

type Fn = ((...args: unknown[]) => unknown) & { async: (...args: unknown[]) => void };

interface Calls {
  start: Fn;
  enable: Fn;
  control: Fn;
  open: Fn;
  process: Fn;
  close: Fn;
  lastError: Fn;
  callbackType: koffi.IKoffiCType;
}

let calls: Calls | undefined;

function bind(): Calls {
  if (calls) return calls;
  const adv = loadDll('advapi32');
  const k32 = loadDll('kernel32');
  const proto = koffi.proto('void __stdcall RetinaEtwEventRecordCallback(void *record)');
  calls = {
    start: adv.func('uint32_t __stdcall StartTraceW(_Out_ uint64_t *handle, const char16_t *name, void *props)') as Fn,
    enable: adv.func('uint32_t __stdcall EnableTraceEx2(uint64_t handle, void *provider, uint32_t code, uint8_t level, uint64_t any, uint64_t all, uint32_t timeout, void *params)') as Fn,
    control: adv.func('uint32_t __stdcall ControlTraceW(uint64_t handle, const char16_t *name, void *props, uint32_t code)') as Fn,
    open: adv.func('uint64_t __stdcall OpenTraceW(void *logfile)') as Fn,
    process: adv.func('uint32_t __stdcall ProcessTrace(void *handles, uint32_t count, void *start, void *end)') as Fn,
    close: adv.func('uint32_t __stdcall CloseTrace(uint64_t handle)') as Fn,
    lastError: k32.func('uint32_t __stdcall GetLastError()') as Fn,
    callbackType: koffi.pointer(proto),
  };
  return calls;
}

export interface EtwSessionOptions {
  /** Session name (ours alone: a session of this name is stopped and restarted). */
  readonly name: string;
  readonly provider: string;
  readonly level: number;
  readonly keywords: bigint;
}

export interface EtwSession {
  readonly name: string;
  /** True when a left-over session of the same name was found and stopped first. */
  readonly replacedStale: boolean;
  /** The session's loss counters (ControlTraceW QUERY). */
  losses(): SessionLosses;
  stop(): void;
}

/** Whether the session `name` runs, and its loss counters when it does (ControlTraceW QUERY; read-only). */
export function queryEtwSession(name: string): { running: false } | { running: true; losses: SessionLosses } {
  const c = bind();
  const props = traceProperties(name);
  const rc = c.control(0n, name, props, CONTROL_QUERY) as number;
  if (rc === ERROR_WMI_INSTANCE_NOT_FOUND) return { running: false };
  checkWin32(`ControlTraceW(QUERY ${name})`, rc);
  return { running: true, losses: readLosses(props) };
}

/** Starts the real-time session and enables `provider` in it. */
export function startEtwSession(opts: EtwSessionOptions): EtwSession {
  const c = bind();
  const handle = [0n];
  let replacedStale = false;
  let rc = c.start(handle, opts.name, traceProperties(opts.name)) as number;
  if (rc === ERROR_ALREADY_EXISTS) {
    replacedStale = true;
    checkWin32(`ControlTraceW(STOP ${opts.name})`, c.control(0n, opts.name, traceProperties(opts.name), CONTROL_STOP) as number);
    rc = c.start(handle, opts.name, traceProperties(opts.name)) as number;
  }
  checkWin32(`StartTraceW(${opts.name})`, rc);
  const h = BigInt(handle[0] as bigint | number);
  const guid = Buffer.alloc(16);
  writeGuid(guid, 0, opts.provider);
  const en = c.enable(h, guid, ENABLE, opts.level, opts.keywords, 0n, 0, enableParameters()) as number;
  if (en !== 0) {
    c.control(h, opts.name, traceProperties(opts.name), CONTROL_STOP);
    throw new WindowsCallError(`EnableTraceEx2(${opts.provider})`, en, 'Win32');
  }
  let stopped = false;
  return {
    name: opts.name,
    replacedStale,
    losses(): SessionLosses {
      const props = traceProperties(opts.name);
      checkWin32(`ControlTraceW(QUERY ${opts.name})`, c.control(h, opts.name, props, CONTROL_QUERY) as number);
      return readLosses(props);
    },
    stop(): void {
      if (stopped) return;
      stopped = true;
      c.control(h, opts.name, traceProperties(opts.name), CONTROL_STOP);
    },
  };
}

export interface EtwConsumer {
  /** Takes up to `max` queued events (oldest first). */
  drain(max: number): EtwEvent[];
  /** Events dropped because the queue was full. */
  readonly dropped: number;
  /** Events taken from ETW (queued or dropped). */
  readonly received: number;
  /** Settles when ProcessTrace returns (after close(), or when the session ends). */
  readonly done: Promise<number>;
  close(): void;
}

const RECORD_BYTES = ETW_LAYOUT.EVENT_RECORD;

/** Opens the real-time session `name` and runs ProcessTrace on a worker thread; `capacity` bounds the queue. */
export function consumeEtwSession(name: string, capacity: number): EtwConsumer {
  const c = bind();
  let queue: EtwEvent[] = [];
  let dropped = 0;
  let received = 0;
  const onRecord = (rec: unknown): void => {
    received++;
    if (queue.length >= capacity) {
      dropped++;
      return;
    }
    const head = readEventHeader(Buffer.from(koffi.view(rec, RECORD_BYTES)));
    const data = Buffer.allocUnsafe(head.userDataLength);
    if (head.userDataLength > 0) {
      const src = koffi.decode(rec, ETW_LAYOUT['EVENT_RECORD.UserData'], 'void *') as unknown;
      Buffer.from(koffi.view(src, head.userDataLength)).copy(data);
    }
    queue.push({ id: head.id, version: head.version, timestamp: head.timestamp, data });
  };
  const callback = koffi.register(onRecord, c.callbackType);
  const loggerName = Buffer.from(`${name}\0`, 'utf16le');
  const lf = logfile(koffi.address(loggerName), koffi.address(callback));
  const trace = BigInt(c.open(lf) as bigint | number);
  if (trace === INVALID_HANDLE) {
    koffi.unregister(callback);
    throw new WindowsCallError(`OpenTraceW(${name})`, c.lastError() as number, 'Win32');
  }
  const handles = Buffer.alloc(8);
  handles.writeBigUInt64LE(trace);
  let closed = false;
  const done = new Promise<number>((resolve, reject) => {
    c.process.async(handles, 1, null, null, (err: unknown, rc: number) => {
      // keep the name and the logfile alive until ProcessTrace has returned
      void loggerName.length;
      void lf.length;
      koffi.unregister(callback);
      if (err) reject(err instanceof Error ? err : new Error(String(err)));
      else resolve(rc);
    });
  });
  return {
    drain(max: number): EtwEvent[] {
      if (queue.length <= max) {
        const out = queue;
        queue = [];
        return out;
      }
      return queue.splice(0, max);
    },
    get dropped() {
      return dropped;
    },
    get received() {
      return received;
    },
    done,
    close(): void {
      if (closed) return;
      closed = true;
      c.close(trace);
    },
  };
}
