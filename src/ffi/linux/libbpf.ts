/**
 * The raw libbpf (system libbpf.so.1, 1.1 or newer) functions we call, over koffi. `loadLibbpf()` loads
 * the library on first use, from a plugin's start(), never at import time. Only this folder sees
 * these raw functions; plugins use the typed wrappers (object.ts, maps.ts, ring-buffer.ts, tc.ts).
 */
import { isMainThread } from 'node:worker_threads';
import koffi from '../koffi.js';
import { libcLibrary } from './libc.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- koffi functions are untyped at this edge */
type Fn = (...args: any[]) => any;

export interface Libbpf {
  readonly openFile: Fn; objectLoad: Fn; objectClose: Fn; findProgram: Fn; findMap: Fn; objectBtf: Fn;
  readonly nextProgram: Fn; programName: Fn; setAttachTarget: Fn; programFd: Fn; setAutoload: Fn; setType: Fn; setLogLevel: Fn; setLogBuf: Fn; attach: Fn; linkDestroy: Fn; linkFd: Fn;
  readonly mapFd: Fn; mapName: Fn; setMaxEntries: Fn; initialValue: Fn; setInitialValue: Fn; mapValueSize: Fn; mapMaxEntries: Fn;
  readonly lookup: Fn; nextKey: Fn; numCpus: Fn; update: Fn; deleteElem: Fn;
  readonly tcHookCreate: Fn; tcHookDestroy: Fn; tcAttach: Fn; tcDetach: Fn;
  readonly rbNew: Fn; rbFree: Fn; rbConsume: Fn; rbEpollFd: Fn;
  readonly testRun: Fn; linkCreate: Fn; enableStats: Fn; probeHelper: Fn;
  readonly progFdById: Fn; objGetInfo: Fn;
  /** Walking the kernel's BPF objects by id (diagnose): next id after `start` (-ENOENT at the end), and an fd for one. */
  readonly progNextId: Fn; mapNextId: Fn; linkNextId: Fn; mapFdById: Fn; linkFdById: Fn;
  readonly btfVmlinux: Fn; btfFree: Fn; btfFind: Fn; btfType: Fn; btfName: Fn;
  /** The ring-buffer sample callback type: the data pointer arrives as a plain number. */
  readonly sampleProto: koffi.IKoffiCType;
  readonly tcHook: koffi.IKoffiCType;
  readonly tcOpts: koffi.IKoffiCType;
  readonly testRunOpts: koffi.IKoffiCType;
  /** Recent libbpf log lines (warnings and errors), newest last, for error messages. */
  readonly recentLog: string[];
}

let cached: Libbpf | undefined;

/** Loads libbpf.so.1 once per process; throws with the cause when it cannot. */
export function loadLibbpf(): Libbpf {
  if (cached) return cached;
  let lib: koffi.IKoffiLib;
  try {
    lib = koffi.load('libbpf.so.1');
  } catch (e) {
    throw new Error('cannot load libbpf.so.1 (install libbpf1)', { cause: e });
  }
  koffi.opaque('bpf_object');
  koffi.opaque('bpf_program');
  koffi.opaque('bpf_map');
  koffi.opaque('bpf_link');
  koffi.opaque('ring_buffer');
  koffi.opaque('btf');
  const tcHook = koffi.struct('bpf_tc_hook', { sz: 'size_t', ifindex: 'int', attach_point: 'int', parent: 'uint32_t' });
  const tcOpts = koffi.struct('bpf_tc_opts', { sz: 'size_t', prog_fd: 'int', flags: 'uint32_t', prog_id: 'uint32_t', handle: 'uint32_t', priority: 'uint32_t' });
  const testRunOpts = koffi.struct('bpf_test_run_opts', {
    sz: 'size_t', data_in: 'void *', data_out: 'void *', data_size_in: 'uint32_t', data_size_out: 'uint32_t',
    ctx_in: 'void *', ctx_out: 'void *', ctx_size_in: 'uint32_t', ctx_size_out: 'uint32_t', retval: 'uint32_t',
    repeat: 'int', duration: 'uint32_t', flags: 'uint32_t', cpu: 'uint32_t', batch_size: 'uint32_t',
  });
  const sampleProto = koffi.proto('int retina_rb_sample(void *ctx, uintptr_t data, size_t size)');
  const f = (sig: string): Fn => lib.func(sig) as Fn;
  const recentLog: string[] = [];
  cached = {
    openFile: f('bpf_object *bpf_object__open_file(const char *path, void *opts)'),
    objectLoad: f('int bpf_object__load(bpf_object *obj)'),
    objectClose: f('void bpf_object__close(bpf_object *obj)'),
    objectBtf: f('btf *bpf_object__btf(bpf_object *obj)'),
    findProgram: f('bpf_program *bpf_object__find_program_by_name(bpf_object *obj, const char *name)'),
    findMap: f('bpf_map *bpf_object__find_map_by_name(bpf_object *obj, const char *name)'),
    nextProgram: f('bpf_program *bpf_object__next_program(bpf_object *obj, bpf_program *prev)'),
    programName: f('const char *bpf_program__name(bpf_program *prog)'),
    setAttachTarget: f('int bpf_program__set_attach_target(bpf_program *prog, int attach_prog_fd, const char *name)'),
    programFd: f('int bpf_program__fd(bpf_program *prog)'),
    setAutoload: f('int bpf_program__set_autoload(bpf_program *prog, bool autoload)'),
    setType: f('int bpf_program__set_type(bpf_program *prog, int type)'),
    setLogLevel: f('int bpf_program__set_log_level(bpf_program *prog, uint32_t level)'),
    setLogBuf: f('int bpf_program__set_log_buf(bpf_program *prog, uint8_t *buf, size_t size)'),
    attach: f('bpf_link *bpf_program__attach(bpf_program *prog)'),
    linkDestroy: f('int bpf_link__destroy(bpf_link *link)'),
    linkFd: f('int bpf_link__fd(bpf_link *link)'),
    mapFd: f('int bpf_map__fd(bpf_map *map)'),
    mapName: f('const char *bpf_map__name(bpf_map *map)'),
    setMaxEntries: f('int bpf_map__set_max_entries(bpf_map *map, uint32_t max)'),
    initialValue: f('void *bpf_map__initial_value(bpf_map *map, _Out_ size_t *size)'),
    setInitialValue: f('int bpf_map__set_initial_value(bpf_map *map, const uint8_t *data, size_t size)'),
    mapValueSize: f('uint32_t bpf_map__value_size(bpf_map *map)'),
    mapMaxEntries: f('uint32_t bpf_map__max_entries(bpf_map *map)'),
    lookup: f('int bpf_map_lookup_elem(int fd, const uint8_t *key, _Out_ uint8_t *value)'),
    nextKey: f('int bpf_map_get_next_key(int fd, const uint8_t *key, _Out_ uint8_t *next)'),
    update: f('int bpf_map_update_elem(int fd, const uint8_t *key, const uint8_t *value, uint64_t flags)'),
    deleteElem: f('int bpf_map_delete_elem(int fd, const uint8_t *key)'),
    numCpus: f('int libbpf_num_possible_cpus()'),
    tcHookCreate: f('int bpf_tc_hook_create(bpf_tc_hook *hook)'),
    tcHookDestroy: f('int bpf_tc_hook_destroy(bpf_tc_hook *hook)'),
    tcAttach: f('int bpf_tc_attach(const bpf_tc_hook *hook, _Inout_ bpf_tc_opts *opts)'),
    tcDetach: f('int bpf_tc_detach(const bpf_tc_hook *hook, const bpf_tc_opts *opts)'),
    rbNew: f('ring_buffer *ring_buffer__new(int map_fd, retina_rb_sample *cb, void *ctx, void *opts)'),
    rbFree: f('void ring_buffer__free(ring_buffer *rb)'),
    rbConsume: f('int ring_buffer__consume(ring_buffer *rb)'),
    rbEpollFd: f('int ring_buffer__epoll_fd(ring_buffer *rb)'),
    testRun: f('int bpf_prog_test_run_opts(int fd, _Inout_ bpf_test_run_opts *opts)'),
    linkCreate: f('int bpf_link_create(int prog_fd, int target_fd, int attach_type, void *opts)'),
    enableStats: f('int bpf_enable_stats(int type)'), // test/ebpf/run-stats.ts: the tests' and benchmarks' run-time statistics
    probeHelper: f('int libbpf_probe_bpf_helper(int prog_type, int helper_id, const void *opts)'),
    progFdById: f('int bpf_prog_get_fd_by_id(uint32_t id)'),
    objGetInfo: f('int bpf_obj_get_info_by_fd(int fd, _Inout_ uint8_t *info, _Inout_ uint32_t *len)'),
    progNextId: f('int bpf_prog_get_next_id(uint32_t start, _Out_ uint32_t *next)'),
    mapNextId: f('int bpf_map_get_next_id(uint32_t start, _Out_ uint32_t *next)'),
    linkNextId: f('int bpf_link_get_next_id(uint32_t start, _Out_ uint32_t *next)'),
    mapFdById: f('int bpf_map_get_fd_by_id(uint32_t id)'),
    linkFdById: f('int bpf_link_get_fd_by_id(uint32_t id)'),
    btfVmlinux: f('btf *btf__load_vmlinux_btf()'),
    btfFree: f('void btf__free(btf *btf)'),
    btfFind: f('int btf__find_by_name_kind(btf *btf, const char *name, uint32_t kind)'),
    btfType: f('const void *btf__type_by_id(btf *btf, uint32_t id)'),
    btfName: f('const char *btf__name_by_offset(btf *btf, uint32_t off)'),
    sampleProto, tcHook, tcOpts, testRunOpts, recentLog,
  };
  installPrint(lib, recentLog);
  return cached;
}

/**
 * Routes libbpf's messages into `recentLog` (the last 50 lines) instead of stderr, so the agent's
 * output stays JSON and a failed load can say why. Formatting uses vsnprintf on the va_list, which
 * koffi passes as a pointer on x86-64 (an array type, SysV) and on arm64 (AAPCS64: a struct larger than
 * 16 bytes goes by reference, so libbpf hands the callback, and the callback vsnprintf, a pointer to it);
 * elsewhere libbpf keeps printing to stderr. Worker threads
 * (benchmark producers) leave the hook alone: a callback into a worker's isolate would outlive it.
 * A message longer than the 1 KiB buffer (a verifier log: the reason a program was refused is its
 * last lines) is formatted again in full from a copy of the va_list (va_copy on x86-64 SysV and on
 * AAPCS64 is a copy of its bytes: 24 and 32) and kept as its first line and its last 8 KiB.
 */
function installPrint(lib: koffi.IKoffiLib, recentLog: string[]): void {
  // libbpf's print hook is process-wide: only the main thread's isolate may own it.
  const vaListSize = VA_LIST_SIZE[process.arch];
  if (vaListSize === undefined || !isMainThread) return;
  const libc = libcLibrary();
  const vsnprintf = libc.func('int vsnprintf(_Out_ uint8_t *buf, size_t n, const char *fmt, void *ap)') as Fn;
  const printProto = koffi.proto('int retina_libbpf_print(int level, const char *fmt, void *ap)');
  const setPrint = lib.func('void *libbpf_set_print(retina_libbpf_print *fn)') as Fn;
  const vaList = koffi.array('uint8_t', vaListSize, 'Typed');
  const buf = Buffer.alloc(1024);
  const cb = koffi.register((level: number, fmt: string, ap: unknown) => {
    try {
      if (level > 1) return 0; // 0 warn, 1 info, 2 debug
      const copy = Buffer.from(koffi.decode(ap, vaList) as Uint8Array);
      const n = vsnprintf(buf, buf.length, fmt, ap) as number;
      let text = buf.subarray(0, Math.max(0, Math.min(n, buf.length - 1))).toString('utf8').trimEnd();
      if (n >= buf.length) {
        const big = Buffer.allocUnsafe(n + 1);
        const m = vsnprintf(big, big.length, fmt, copy) as number;
        text = clipMessage(big.subarray(0, Math.max(0, Math.min(m, n))).toString('utf8').trimEnd());
      }
      if (text) recentLog.push(text);
      if (recentLog.length > 50) recentLog.splice(0, recentLog.length - 50);
    } catch {
      /* never throw across the FFI boundary */
    }
    return 0;
  }, koffi.pointer(printProto));
  setPrint(cb);
}

/**
 * sizeof(va_list) where the hook is installed: x86-64 SysV (gp_offset, fp_offset, overflow_arg_area,
 * reg_save_area) and AAPCS64 (__stack, __gr_top, __vr_top, __gr_offs, __vr_offs; issue 41).
 */
const VA_LIST_SIZE: Partial<Record<NodeJS.Architecture, number>> = { x64: 24, arm64: 32 };
const KEEP_TAIL = 8192;

/** A long message as its first line and its last KEEP_TAIL characters. */
export function clipMessage(text: string): string {
  if (text.length <= KEEP_TAIL + 512) return text;
  const nl = text.indexOf('\n');
  const first = nl > 0 && nl < 512 ? text.slice(0, nl) : text.slice(0, 256);
  return `${first}\n…\n${text.slice(-KEEP_TAIL)}`;
}

/**
 * What the verifier said about the last program it refused, from libbpf's messages: the program's
 * name and the last lines of its load log before the statistics ("processed N insns ..."), which
 * state the rule broken ("R1 invalid mem access 'scalar'"). Undefined when no load log is there.
 */
export function verifierVerdict(messages: readonly string[]): { program: string; reason: string } | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = /prog '([^']+)': -- BEGIN PROG LOAD LOG --\n([\s\S]*?)(?:-- END PROG LOAD LOG --|$)/.exec(messages[i] ?? '');
    if (!m) continue;
    const lines = (m[2] ?? '').split('\n').map((l) => l.trim()).filter((l) => l !== '' && l !== '…');
    while (lines.length && /^(processed \d+ insns|verification time|stack depth)/.test(lines[lines.length - 1] as string)) lines.pop();
    const reason = lines.slice(-2).join(' / ');
    return { program: m[1] as string, reason: reason || 'no reason in the verifier log' };
  }
  return undefined;
}

/** The negative return of a libbpf call, or errno after a NULL pointer, as a positive errno. */
export function lastErrno(rc?: number): number {
  if (rc !== undefined && rc < 0) return -rc;
  return koffi.errno();
}

export function errnoText(errno: number): string {
  const hit = Object.entries(koffi.os.errno).find(([, v]) => v === errno);
  return hit ? `${hit[0]} (${errno})` : `errno ${errno}`;
}

/**
 * An Error for a failed call: `what: EBUSY (16)` plus `detail`, with the errno's name in `code` (as
 * Node's own system errors have it) and its number in `errno`, so callers can classify it
 * (EAGAIN, ENOMEM, EBUSY are worth retrying; see src/plugin/errors.ts).
 */
export function errnoError(what: string, errno: number, detail = ''): Error & { code: string; errno: number } {
  const e = new Error(`${what}: ${errnoText(errno)}${detail}`) as Error & { code: string; errno: number };
  const hit = Object.entries(koffi.os.errno).find(([, v]) => v === errno);
  e.code = hit ? hit[0] : `errno ${errno}`;
  e.errno = errno;
  return e;
}

/** The last few libbpf log lines, for an error message. */
export function libbpfLogTail(l: Libbpf, lines = 6): string {
  const tail = l.recentLog.slice(-lines);
  return tail.length ? `; libbpf: ${tail.join(' | ')}` : '';
}

export { koffi };
