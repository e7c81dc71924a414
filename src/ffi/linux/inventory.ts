/**
 * What BPF objects the kernel holds, read only (for `retina-agent diagnose`): programs by id with
 * their names and maps, maps with how many entries are in use (keys walked with
 * bpf_map_get_next_key, bounded), TCX links, and the program names inside our shipped objects
 * (opened, never loaded). Nothing here creates, attaches, writes or deletes anything.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { errnoText, loadLibbpf, type Libbpf } from './libbpf.js';
import { loadLibc } from './libc.js';
import { packageRoot } from './object.js';
import { cString } from './rtnetlink.js';
import { loadSys } from './sys.js';
import { kernelProgName } from './tc-leftovers.js';

export interface BpfProgramInfo {
  readonly id: number;
  /** BPF_PROG_TYPE_* number (uapi/linux/bpf.h), and its name where we know it ('sched_cls', 'tracing', ...). */
  readonly type: number;
  readonly typeName: string | undefined;
  /** The kernel's name (at most 15 characters). */
  readonly name: string;
  readonly mapIds: readonly number[];
}

export interface BpfMapInfo {
  readonly id: number;
  /** BPF_MAP_TYPE_* number, and its name where we know it ('percpu_hash', 'ringbuf', ...). */
  readonly type: number;
  readonly typeName: string | undefined;
  readonly name: string;
  readonly keySize: number;
  readonly valueSize: number;
  readonly maxEntries: number;
  /** Keys in use now; undefined when the type has no keys to walk (ring buffer) or every slot exists (arrays). */
  readonly entries: number | undefined;
  /** True when the walk stopped at the bound before the end. */
  readonly entriesTruncated: boolean;
}

export interface TcxLinkInfo {
  readonly id: number;
  readonly progId: number;
  readonly ifindex: number;
  readonly direction: 'ingress' | 'egress' | `attach type ${number}`;
}

const ENOENT = 2;
const INFO_SIZE = 256;
const BPF_LINK_TYPE_TCX = 11;
const BPF_TCX_INGRESS = 46;
const BPF_TCX_EGRESS = 47;
const PROG_TYPES: Record<number, string> = { 1: 'socket_filter', 2: 'kprobe', 3: 'sched_cls', 4: 'sched_act', 5: 'tracepoint', 6: 'xdp', 17: 'raw_tracepoint', 26: 'tracing', 29: 'lsm' };
const MAP_TYPES: Record<number, string> = {
  1: 'hash', 2: 'array', 3: 'prog_array', 4: 'perf_event_array', 5: 'percpu_hash', 6: 'percpu_array', 9: 'lru_hash', 10: 'lru_percpu_hash',
  11: 'lpm_trie', 12: 'array_of_maps', 13: 'hash_of_maps', 25: 'devmap_hash', 27: 'ringbuf', 30: 'bloom_filter',
};
/** Map types whose keys are walked: the hash family and LPM tries (arrays have every slot; a ring buffer has no keys). */
const WALKABLE = new Set([1, 5, 9, 10, 11, 13, 25]);
/** At most this many keys are walked per map (~a second of syscalls): a larger map says so. */
export const MAX_KEYS_WALKED = 1 << 20;

/** Every id of one kind, by walking `next` from 0. */
function ids(next: Libbpf['progNextId']): number[] {
  const out: number[] = [];
  const id = [0];
  for (let start = 0; ; start = id[0] as number) {
    const rc = next(start, id) as number;
    if (rc < 0) {
      const errno = -rc;
      if (errno === ENOENT) return out;
      throw new Error(`walking BPF object ids failed: ${errnoText(errno)}`);
    }
    out.push(id[0] as number);
  }
}

/** Runs `read(fd)` on the object `id` opened with `open`; undefined when it is gone. */
function withFd<T>(open: Libbpf['progFdById'], id: number, read: (fd: number) => T): T | undefined {
  const fd = open(id) as number;
  if (fd < 0) {
    if (-fd === ENOENT) return undefined;
    throw new Error(`cannot open BPF object ${id}: ${errnoText(-fd)}`);
  }
  try {
    return read(fd);
  } finally {
    loadSys().close(fd);
  }
}

function info(fd: number, buf: Buffer = Buffer.alloc(INFO_SIZE)): Buffer {
  const rc = loadLibbpf().objGetInfo(fd, buf, [buf.length]) as number;
  if (rc < 0) throw new Error(`BPF_OBJ_GET_INFO_BY_FD failed: ${errnoText(-rc)}`);
  return buf;
}

const nameAt = (b: Buffer, off: number): string => cString(new DataView(b.buffer, b.byteOffset, b.length), off, 16);

/** One program: struct bpf_prog_info (type 0, id 4, nr_map_ids 52, map_ids 56, name 64). */
function programInfo(fd: number): BpfProgramInfo {
  const first = info(fd);
  const n = first.readUInt32LE(52);
  const mapIds: number[] = [];
  if (n > 0) {
    const ids = loadLibc().alloc(n * 4);
    try {
      const again = Buffer.alloc(INFO_SIZE);
      again.writeUInt32LE(n, 52);
      again.writeBigUInt64LE(ids.address, 56);
      info(fd, again);
      for (let i = 0; i < Math.min(n, again.readUInt32LE(52)); i++) mapIds.push(ids.view.getUint32(i * 4, true));
    } finally {
      ids.free();
    }
  }
  const type = first.readUInt32LE(0);
  return { id: first.readUInt32LE(4), type, typeName: PROG_TYPES[type], name: nameAt(first, 64), mapIds };
}

/** Every loaded BPF program whose kernel name `want` accepts (programs that vanish meanwhile are skipped). */
export function listPrograms(want: (name: string) => boolean = () => true): BpfProgramInfo[] {
  const l = loadLibbpf();
  const out: BpfProgramInfo[] = [];
  for (const id of ids(l.progNextId)) {
    const p = withFd(l.progFdById, id, programInfo);
    if (p && want(p.name)) out.push(p);
  }
  return out;
}

/** Counts the keys of map `fd` (at most `limit`), reading only. */
export function countKeys(fd: number, keySize: number, limit = MAX_KEYS_WALKED): { entries: number; truncated: boolean } {
  const next = loadLibbpf().nextKey;
  let key: Buffer | null = null;
  const out = [Buffer.alloc(Math.max(1, keySize)), Buffer.alloc(Math.max(1, keySize))];
  let n = 0;
  for (; n < limit; n++) {
    const into = out[n & 1] as Buffer;
    const rc = next(fd, key, into) as number;
    if (rc < 0) {
      if (-rc === ENOENT) return { entries: n, truncated: false };
      throw new Error(`bpf_map_get_next_key failed: ${errnoText(-rc)}`);
    }
    key = into;
  }
  return { entries: n, truncated: true };
}

/** One map by id (struct bpf_map_info: type 0, id 4, key 8, value 12, max 16, name 24), with its fill; undefined when gone. */
export function mapById(id: number, limit = MAX_KEYS_WALKED): BpfMapInfo | undefined {
  const l = loadLibbpf();
  return withFd(l.mapFdById, id, (fd) => {
    const b = info(fd);
    const type = b.readUInt32LE(0);
    const keySize = b.readUInt32LE(8);
    const walked = WALKABLE.has(type) ? countKeys(fd, keySize, limit) : undefined;
    return {
      id: b.readUInt32LE(4), type, typeName: MAP_TYPES[type], name: nameAt(b, 24), keySize, valueSize: b.readUInt32LE(12), maxEntries: b.readUInt32LE(16),
      entries: walked?.entries, entriesTruncated: walked?.truncated ?? false,
    };
  });
}

/** Every TCX link (Linux 6.6+; none before): struct bpf_link_info type 0, id 4, prog_id 8, tcx {ifindex 16, attach_type 20}. */
export function listTcxLinks(): TcxLinkInfo[] {
  const l = loadLibbpf();
  const out: TcxLinkInfo[] = [];
  for (const id of ids(l.linkNextId)) {
    const link = withFd(l.linkFdById, id, (fd) => info(fd));
    if (!link || link.readUInt32LE(0) !== BPF_LINK_TYPE_TCX) continue;
    const at = link.readUInt32LE(20);
    const direction = at === BPF_TCX_INGRESS ? 'ingress' : at === BPF_TCX_EGRESS ? 'egress' : (`attach type ${at}` as const);
    out.push({ id: link.readUInt32LE(4), progId: link.readUInt32LE(8), ifindex: link.readUInt32LE(16), direction });
  }
  return out;
}

/**
 * The kernel names (15 characters) of the programs in every object this package ships
 * (native-linux/<name>/<name>.bpf.o), by object: opened to read their program list, never loaded.
 */
export function shippedProgramNames(): Map<string, string[]> {
  const l = loadLibbpf();
  const root = join(packageRoot(), 'native-linux');
  const out = new Map<string, string[]>();
  for (const dir of readdirSync(root, { withFileTypes: true })) {
    const path = join(root, dir.name, `${dir.name}.bpf.o`);
    if (!dir.isDirectory() || !existsSync(path)) continue;
    const obj: unknown = l.openFile(path, null);
    if (!obj) continue;
    try {
      const names: string[] = [];
      for (let p: unknown = l.nextProgram(obj, null); p; p = l.nextProgram(obj, p)) names.push(kernelProgName(l.programName(p) as string));
      out.set(dir.name, names);
    } finally {
      l.objectClose(obj);
    }
  }
  return out;
}
