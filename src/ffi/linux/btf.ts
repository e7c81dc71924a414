/**
 * Reads what we need from BTF through libbpf: enum names (the kernel's skb_drop_reason), a
 * tracepoint's argument count (to pick a program variant), and where a BPF object's read-only
 * variables sit (to set them before load).
 */
import { existsSync, readFileSync } from 'node:fs';
import { loadLibc } from './libc.js';
import { koffi, loadLibbpf, type Libbpf } from './libbpf.js';

const KIND_ENUM = 6;
const KIND_TYPEDEF = 8;
const KIND_FUNC_PROTO = 13;
const KIND_DATASEC = 15;
const KIND_ENUM64 = 19;
const KIND_PTR = 2;
const KIND_FUNC = 12;

interface BtfType {
  readonly nameOff: number;
  readonly kind: number;
  readonly vlen: number;
  /** size or referenced type id */
  readonly sizeOrType: number;
  /** the `vlen` trailing records, each `words` u32 long */
  members(words: number): number[][];
}

function typeById(l: Libbpf, btf: unknown, id: number): BtfType | undefined {
  const ptr: unknown = l.btfType(btf, id);
  if (!ptr) return undefined;
  const [nameOff, info, sizeOrType] = koffi.decode(ptr, 'uint32_t', 3) as number[];
  const vlen = (info as number) & 0xffff;
  return {
    nameOff: nameOff as number, kind: ((info as number) >>> 24) & 0x1f, vlen, sizeOrType: sizeOrType as number,
    members(words) {
      if (vlen === 0) return [];
      const all = koffi.decode(ptr, 'uint32_t', 3 + vlen * words) as number[];
      const out: number[][] = [];
      for (let i = 0; i < vlen; i++) out.push(all.slice(3 + i * words, 3 + (i + 1) * words));
      return out;
    },
  };
}

/**
 * How long the kernel's BTF stays parsed after its last use. Parsing /sys/kernel/btf/vmlinux takes
 * about 10 ms of CPU and 15 MB of C heap; the plugins' start asks for it several times in a row
 * (kfree_skb's arguments and skb_drop_reason's names for dropreason, two kfuncs for packetparser,
 * tcp_retransmit_skb's arguments for tcpretrans): parsed once for all of them, freed once idle.
 */
export const VMLINUX_BTF_KEEP_MS = 2_000;

let kept: { btf: unknown; timer?: NodeJS.Timeout } | undefined;

function release(): void {
  if (!kept) return;
  const { btf } = kept;
  kept = undefined;
  loadLibbpf().btfFree(btf);
  loadLibc().trimHeap();
}

/** Runs `fn` with the kernel's BTF (from /sys/kernel/btf/vmlinux), kept parsed VMLINUX_BTF_KEEP_MS after the last call. */
export function withVmlinuxBtf<T>(fn: (l: Libbpf, btf: unknown) => T): T {
  const l = loadLibbpf();
  if (kept) clearTimeout(kept.timer);
  else {
    const btf: unknown = l.btfVmlinux();
    if (!btf) throw new Error('cannot load the kernel BTF (/sys/kernel/btf/vmlinux)');
    kept = { btf };
  }
  const k = kept;
  try {
    return fn(l, k.btf);
  } finally {
    clearTimeout(k.timer);
    k.timer = setTimeout(release, VMLINUX_BTF_KEEP_MS).unref();
  }
}

/** Frees the kernel's BTF now if it is kept (tests; the timer does it otherwise). */
export function releaseVmlinuxBtf(): void {
  if (kept) clearTimeout(kept.timer);
  release();
}

/** The values and names of a kernel enum (ENUM or ENUM64), or undefined when the kernel lacks it. */
export function kernelEnum(name: string): Map<number, string> | undefined {
  return withVmlinuxBtf((l, btf) => {
    for (const kind of [KIND_ENUM, KIND_ENUM64]) {
      const id = l.btfFind(btf, name, kind) as number;
      if (id <= 0) continue;
      const t = typeById(l, btf, id);
      if (!t) continue;
      const out = new Map<number, string>();
      for (const m of t.members(kind === KIND_ENUM ? 2 : 3)) {
        const label = l.btfName(btf, m[0] as number) as string;
        out.set((m[1] as number) | 0, label);
      }
      return out;
    }
    return undefined;
  });
}

/**
 * Whether the kernel has the function `name` (a kfunc) in its BTF: in vmlinux, or in the BTF of
 * module `module` (/sys/kernel/btf/<module>, present while the module is loaded), where the name
 * is looked for in the module's string table (libbpf resolves module kfuncs from that BTF).
 */
export function kernelHasFunc(name: string, module?: string): boolean {
  if (withVmlinuxBtf((l, btf) => (l.btfFind(btf, name, KIND_FUNC) as number) > 0)) return true;
  const file = module ? `/sys/kernel/btf/${module}` : undefined;
  if (!file || !existsSync(file)) return false;
  return readFileSync(file).includes(Buffer.from(`\0${name}\0`));
}

/**
 * The C types of the arguments the raw tracepoint `event` passes (without the leading context
 * pointer), read from the kernel's `btf_trace_<event>` typedef: `struct sk_buff *`, `void *`,
 * `enum skb_drop_reason`, ... (BTF keeps no argument names there, so types are what tells variants
 * apart); undefined when the kernel has no such tracepoint.
 */
export function tracepointArgTypes(event: string): string[] | undefined {
  return withVmlinuxBtf((l, btf) => {
    const id = l.btfFind(btf, `btf_trace_${event}`, KIND_TYPEDEF) as number;
    if (id <= 0) return undefined;
    let t = typeById(l, btf, id);
    for (let hops = 0; t && t.kind !== KIND_FUNC_PROTO && hops < 4; hops++) {
      if (t.kind !== KIND_TYPEDEF && t.kind !== KIND_PTR) return undefined;
      t = typeById(l, btf, t.sizeOrType);
    }
    if (t?.kind !== KIND_FUNC_PROTO) return undefined;
    return t.members(2).slice(1).map(([, type]) => typeName(l, btf, type as number));
  });
}

/** How many arguments the raw tracepoint `event` passes (tracepointArgTypes' length). */
export function tracepointArgCount(event: string): number | undefined {
  return tracepointArgTypes(event)?.length;
}

const TAGGED: Readonly<Record<number, string>> = { 4: 'struct ', 5: 'union ', [KIND_ENUM]: 'enum ', [KIND_ENUM64]: 'enum ' };
/** volatile, const, restrict, type_tag: looked through. */
const QUALIFIERS = new Set([9, 10, 11, 18]);
const KIND_FWD = 7;

/** A BTF type as C writes it, qualifiers dropped: `struct sk_buff *`, `enum skb_drop_reason`, `void *`. */
function typeName(l: Libbpf, btf: unknown, id: number, depth = 0): string {
  if (id === 0) return 'void';
  const t = typeById(l, btf, id);
  if (!t || depth > 8) return '?';
  if (t.kind === KIND_PTR) return `${typeName(l, btf, t.sizeOrType, depth + 1)} *`;
  if (QUALIFIERS.has(t.kind)) return typeName(l, btf, t.sizeOrType, depth + 1);
  const name = (l.btfName(btf, t.nameOff) as string) || '(anon)';
  // FWD: bit 31 of info (kind_flag) says union; vlen is 0 either way, so struct is the usual case
  if (t.kind === KIND_FWD) return `struct ${name}`;
  return `${TAGGED[t.kind] ?? ''}${name}`;
}

/** Offsets and sizes of the variables in a BPF object's `.rodata` section, by name. */
export function rodataLayout(l: Libbpf, objBtf: unknown): Map<string, { offset: number; size: number }> {
  const out = new Map<string, { offset: number; size: number }>();
  if (!objBtf) return out;
  const id = l.btfFind(objBtf, '.rodata', KIND_DATASEC) as number;
  if (id <= 0) return out;
  const sec = typeById(l, objBtf, id);
  for (const [varType, offset, size] of sec?.members(3) ?? []) {
    const v = typeById(l, objBtf, varType as number);
    if (v) out.set(l.btfName(objBtf, v.nameOff) as string, { offset: offset as number, size: size as number });
  }
  return out;
}
