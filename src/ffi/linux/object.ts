/**
 * A loaded BPF object (CO-RE, shipped prebuilt under native-linux/): open, set read-only config
 * and map sizes, choose programs, load; close on dispose. Attaching lives in attach.ts / tc.ts.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { rodataLayout } from './btf.js';
import { errnoError, errnoText, koffi, lastErrno, libbpfLogTail, loadLibbpf, verifierVerdict, type Libbpf } from './libbpf.js';
import { loadLibc } from './libc.js';

const BPF_PROG_TYPE_SOCKET_FILTER = 1;

export interface BpfLoadOptions {
  /** Values of `const volatile` variables (.rodata), set before load (bigint: u64s beyond 2^53, kernel addresses). */
  readonly rodata?: Readonly<Record<string, number | boolean | bigint>>;
  /** max_entries per map (ring-buffer sizes, hash sizes). */
  readonly maxEntries?: Readonly<Record<string, number>>;
  /** Load only these programs (the others are not loaded); all when omitted. */
  readonly programs?: readonly string[];
  /** Retargets tracing programs before load: program name → kernel target (tp_btf: the tracepoint). */
  readonly attachTargets?: Readonly<Record<string, string>>;
  /**
   * Filled with each loaded program's verifier statistics (the kernel's log at BPF_LOG_STATS:
   * "processed N insns ... total_states ...", parsed by `parseVerifierStats`), by program name. For the
   * kernel matrix's budget table; a refused program's reason then comes from a second load without it.
   */
  readonly verifierStats?: Map<string, string>;
  /** Benchmarks: load this object file instead of native-linux/<name>/<name>.bpf.o (Retina's, built by hack/retina/build.sh). */
  readonly path?: string;
  /** Benchmarks: programs loaded as socket filters whatever their section says (Retina's `socket1`, which libbpf 1.x no longer knows). */
  readonly socketFilters?: readonly string[];
}

export interface BpfMap {
  readonly name: string;
  readonly fd: number;
  readonly valueSize: number;
  readonly maxEntries: number;
}

export interface BpfProgram {
  readonly name: string;
  readonly fd: number;
  /** libbpf's handle, for attach.ts. */
  readonly handle: unknown;
}

export interface BpfObject extends Disposable {
  readonly name: string;
  program(name: string): BpfProgram;
  map(name: string): BpfMap;
}

/** The package root (where package.json is), found from this file's location, not from the cwd. */
export function packageRoot(from = dirname(fileURLToPath(import.meta.url))): string {
  let dir = from;
  for (;;) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'native-linux'))) return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error(`cannot find the retina-ts package root above ${from}`);
    dir = up;
  }
}

/** Where the prebuilt object of `name` lives: native-linux/<name>/<name>.bpf.o under the package. */
export function bpfObjectPath(name: string): string {
  return join(packageRoot(), 'native-linux', name, `${name}.bpf.o`);
}

export function openBpfObject(name: string, opts: BpfLoadOptions = {}): BpfObject {
  const l = loadLibbpf();
  const path = opts.path ?? bpfObjectPath(name);
  if (!existsSync(path)) throw new Error(`BPF object ${path} is missing: run \`make native\` (needs clang and kernel BTF)`);
  const obj: unknown = l.openFile(path, null);
  if (!obj) throw errnoError(`cannot open BPF object ${path}`, lastErrno(), libbpfLogTail(l));
  const logs = new Map<string, Buffer>(); // held until the load has written them
  try {
    configure(l, obj, name, opts);
    if (opts.verifierStats) statsLogs(l, obj, logs);
    // Only this load's messages: a refused program is named with the verifier's reason, not the
    // tail of libbpf's messages (where the reason sits past a long instruction trace).
    l.recentLog.length = 0;
    const rc = l.objectLoad(obj) as number;
    if (rc < 0) {
      const refused = verifierVerdict(l.recentLog);
      if (refused) throw errnoError(`cannot load BPF object ${name}: the verifier refused program ${refused.program}: ${refused.reason}`, lastErrno(rc));
      throw errnoError(`cannot load BPF object ${name}`, lastErrno(rc), libbpfLogTail(l));
    }
    for (const [p, buf] of logs) opts.verifierStats?.set(p, buf.toString('utf8', 0, Math.max(0, buf.indexOf(0))));
  } catch (e) {
    l.objectClose(obj);
    throw e;
  } finally {
    loadLibc().trimHeap();
  }
  return wrap(l, obj, name);
}

/** BPF_LOG_STATS (4) for every program that loads, each into a buffer of its own. */
function statsLogs(l: Libbpf, obj: unknown, logs: Map<string, Buffer>): void {
  for (let p: unknown = l.nextProgram(obj, null); p; p = l.nextProgram(obj, p)) {
    const buf = Buffer.alloc(16 * 1024);
    logs.set(l.programName(p) as string, buf);
    if ((l.setLogBuf(p, buf, buf.length) as number) < 0 || (l.setLogLevel(p, 4) as number) < 0) throw new Error('cannot set a verifier log');
  }
}

/** What the verifier's statistics say of one program: instructions processed, states, verification time (5.16+). */
export interface VerifierStats {
  readonly insns: number;
  readonly totalStates: number;
  readonly peakStates: number;
  readonly verificationUs?: number;
}

/** Parses a BPF_LOG_STATS log; undefined when it has no "processed N insns" line. */
export function parseVerifierStats(log: string): VerifierStats | undefined {
  const m = /processed (\d+) insns \(limit \d+\) max_states_per_insn \d+ total_states (\d+) peak_states (\d+)/.exec(log);
  if (!m) return undefined;
  const t = /verification time (\d+) usec/.exec(log);
  return { insns: Number(m[1]), totalStates: Number(m[2]), peakStates: Number(m[3]), ...(t ? { verificationUs: Number(t[1]) } : {}) };
}

function configure(l: Libbpf, obj: unknown, name: string, opts: BpfLoadOptions): void {
  if (opts.programs) {
    const keep = new Set(opts.programs);
    for (const p of keep) if (!l.findProgram(obj, p)) throw new Error(`BPF object ${name} has no program ${p}`);
    for (let p: unknown = l.nextProgram(obj, null); p; p = l.nextProgram(obj, p)) {
      l.setAutoload(p, keep.has(l.programName(p) as string));
    }
  }
  for (const p of opts.socketFilters ?? []) {
    const h: unknown = l.findProgram(obj, p);
    if (!h) throw new Error(`BPF object ${name} has no program ${p}`);
    const rc = l.setType(h, BPF_PROG_TYPE_SOCKET_FILTER) as number;
    if (rc < 0) throw errnoError(`cannot make ${p} a socket filter`, lastErrno(rc));
  }
  for (const [p, target] of Object.entries(opts.attachTargets ?? {})) {
    const h: unknown = l.findProgram(obj, p);
    if (!h) throw new Error(`BPF object ${name} has no program ${p}`);
    const rc = l.setAttachTarget(h, 0, target) as number;
    if (rc < 0) throw errnoError(`the kernel has no ${target} to attach ${p} to`, lastErrno(rc));
  }
  for (const [mapName, n] of Object.entries(opts.maxEntries ?? {})) {
    const m: unknown = l.findMap(obj, mapName);
    if (!m) throw new Error(`BPF object ${name} has no map ${mapName}`);
    const rc = l.setMaxEntries(m, n) as number;
    if (rc < 0) throw errnoError(`cannot size map ${mapName} to ${n}`, lastErrno(rc));
  }
  const vars = Object.entries(opts.rodata ?? {});
  if (!vars.length) return;
  const layout = rodataLayout(l, l.objectBtf(obj));
  // libbpf names the map "<object prefix>.rodata"; find_map_by_name also accepts ".rodata".
  const rodata: unknown = l.findMap(obj, '.rodata');
  if (!rodata) throw new Error(`BPF object ${name} has no .rodata`);
  const size = [0];
  const init: unknown = l.initialValue(rodata, size);
  const bytes = Buffer.from(new Uint8Array(koffi.view(init, size[0] as number)).slice());
  for (const [v, value] of vars) {
    const at = layout.get(v);
    if (!at) throw new Error(`BPF object ${name} has no read-only variable ${v}`);
    if (typeof value === 'bigint') {
      if (at.size !== 8) throw new Error(`read-only variable ${v} has size ${at.size}, a bigint needs 8`);
      bytes.writeBigUInt64LE(value, at.offset);
      continue;
    }
    const n = typeof value === 'boolean' ? Number(value) : value;
    if (at.size === 1) bytes.writeUInt8(n, at.offset);
    else if (at.size === 2) bytes.writeUInt16LE(n, at.offset);
    else if (at.size === 4) bytes.writeUInt32LE(n, at.offset);
    else if (at.size === 8) bytes.writeBigUInt64LE(BigInt(n), at.offset);
    else throw new Error(`read-only variable ${v} has size ${at.size}`);
  }
  const rc = l.setInitialValue(rodata, bytes, bytes.length) as number;
  if (rc < 0) throw new Error(`cannot set ${name}'s read-only config: ${errnoText(lastErrno(rc))}`);
}

function wrap(l: Libbpf, obj: unknown, name: string): BpfObject {
  let closed = false;
  return {
    name,
    program(p) {
      const h: unknown = l.findProgram(obj, p);
      if (!h) throw new Error(`BPF object ${name} has no program ${p}`);
      const fd = l.programFd(h) as number;
      if (fd < 0) throw new Error(`program ${p} of ${name} is not loaded`);
      return { name: p, fd, handle: h };
    },
    map(m) {
      const h: unknown = l.findMap(obj, m);
      if (!h) throw new Error(`BPF object ${name} has no map ${m}`);
      return { name: m, fd: l.mapFd(h) as number, valueSize: l.mapValueSize(h) as number, maxEntries: l.mapMaxEntries(h) as number };
    },
    [Symbol.dispose]() {
      if (closed) return;
      closed = true;
      l.objectClose(obj);
    },
  };
}
