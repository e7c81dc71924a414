/**
 * Struct layouts from a compiled BPF object's BTF (bpftool's JSON dump), and records written at
 * those offsets: the test side of "the decoders read what the C writes". Nested structs are
 * flattened to dotted paths (`t.saddr`); an array is one field with its element size.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

export interface Field {
  readonly offset: number;
  /** Bytes of the whole field (all elements of an array). */
  readonly size: number;
  /** Bytes of one element (the field's size when it is not an array). */
  readonly elem: number;
}

export interface StructLayout {
  readonly size: number;
  /** Leaf fields by dotted path, in member order. */
  readonly fields: ReadonlyMap<string, Field>;
}

interface BtfType {
  readonly id: number;
  readonly kind: string;
  readonly name: string;
  readonly size?: number;
  readonly type_id?: number;
  readonly nr_elems?: number;
  readonly members?: readonly { name: string; type_id: number; bits_offset: number; bitfield_size?: number }[];
}

/** The object's BTF types; fails loudly when the object is not built or bpftool is missing. */
function btfTypes(object: string): Map<number, BtfType> {
  const path = `${ROOT}native-linux/${object}/${object}.bpf.o`;
  if (!existsSync(path)) throw new Error(`${path} is not built: run make build`);
  let out: string;
  try {
    out = execFileSync('bpftool', ['-j', 'btf', 'dump', 'file', path], { encoding: 'utf8', maxBuffer: 64 << 20 });
  } catch (e) {
    throw new Error('bpftool (installed by make setup) could not dump the BTF of ' + path, { cause: e });
  }
  const types = (JSON.parse(out) as { types: BtfType[] }).types;
  return new Map(types.map((t) => [t.id, t]));
}

/** The named struct's layout in `native-linux/<object>/<object>.bpf.o`. */
export function structLayout(object: string, struct: string): StructLayout {
  const types = btfTypes(object);
  const resolve = (id: number): BtfType => {
    let t = types.get(id);
    while (t && ['TYPEDEF', 'CONST', 'VOLATILE', 'RESTRICT', 'TYPE_TAG'].includes(t.kind)) t = types.get(t.type_id ?? 0);
    if (!t) throw new Error(`BTF type ${id} of ${object} does not resolve`);
    return t;
  };
  const sizeOf = (t: BtfType): { size: number; elem: number } => {
    if (t.kind === 'ARRAY') {
      const e = sizeOf(resolve(t.type_id ?? 0));
      return { size: e.size * (t.nr_elems ?? 0), elem: e.size };
    }
    if (t.size === undefined) throw new Error(`BTF ${t.kind} ${t.name} has no size`);
    return { size: t.size, elem: t.size };
  };
  const top = [...types.values()].find((t) => t.kind === 'STRUCT' && t.name === struct);
  if (!top) throw new Error(`struct ${struct} is not in the BTF of ${object}.bpf.o (RETINA_BTF_RECORD puts a record type there)`);
  const fields = new Map<string, Field>();
  const walk = (t: BtfType, base: number, prefix: string): void => {
    for (const m of t.members ?? []) {
      if (m.bitfield_size) throw new Error(`${struct}.${prefix}${m.name} is a bit field`);
      const mt = resolve(m.type_id);
      const offset = base + m.bits_offset / 8;
      if (mt.kind === 'STRUCT') walk(mt, offset, `${prefix}${m.name}.`);
      else fields.set(`${prefix}${m.name}`, { offset, ...sizeOf(mt) });
    }
  };
  walk(top, 0, '');
  return { size: top.size ?? 0, fields };
}

export type FieldValue = number | bigint | readonly number[];

/**
 * A record of `layout` at byte `at` of a fresh buffer (records sit at any 8-byte offset in a ring),
 * each value written little-endian at its field's BTF offset. Every field of the layout must be
 * named, in `values` or in `unread` (fields the agent does not decode), so a field added on the C
 * side fails until the test says what becomes of it.
 */
export function recordAt(layout: StructLayout, at: number, values: Readonly<Record<string, FieldValue>>, unread: readonly string[] = []): DataView {
  const named = [...Object.keys(values), ...unread].sort();
  const actual = [...layout.fields.keys()].sort();
  if (named.join() !== actual.join()) throw new Error(`fields named ${named.join(', ')}; BTF has ${actual.join(', ')}`);
  const v = new DataView(new ArrayBuffer(at + layout.size));
  const put = (off: number, size: number, x: number | bigint): void => {
    if (size === 8) v.setBigUint64(off, BigInt(x), true);
    else if (size === 4) v.setUint32(off, Number(x), true);
    else if (size === 2) v.setUint16(off, Number(x), true);
    else if (size === 1) v.setUint8(off, Number(x));
    else throw new Error(`no ${size}-byte scalar`);
  };
  for (const [path, x] of Object.entries(values)) {
    const f = layout.fields.get(path)!;
    if (typeof x === 'object') {
      if (x.length * f.elem > f.size) throw new Error(`${path}: ${x.length} elements do not fit ${f.size} bytes`);
      x.forEach((e, i) => put(at + f.offset + i * f.elem, f.elem, e));
    } else {
      if (f.size !== f.elem) throw new Error(`${path} is an array`);
      put(at + f.offset, f.size, x);
    }
  }
  return v;
}

/** Offsets of the named fields, for layouts the agent reads as plain columns (map values). */
export function offsets(layout: StructLayout): Record<string, number> {
  return Object.fromEntries([...layout.fields].map(([k, f]) => [k, f.offset]));
}
