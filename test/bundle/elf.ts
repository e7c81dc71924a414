/**
 * ELF executables in an image's root, read as the kernel would (test/bundle/image-runc.test.ts,
 * image-index.test.ts): the program interpreter an executable names, its machine, and a path resolved
 * inside a root as in a chroot there.
 */
import { lstatSync, readFileSync, readlinkSync } from 'node:fs';
import { join, normalize } from 'node:path';

/** The machine (e_machine) of an ELF file: 62 x86-64, 183 AArch64. */
export function elfMachine(file: string): number {
  const b = readFileSync(file);
  if (b.readUInt32BE(0) !== 0x7f454c46 || b[5] !== 1) throw new Error(`${file} is not a little-endian ELF file`);
  return b.readUInt16LE(0x12);
}

/** The program interpreter (PT_INTERP) an ELF64 little-endian executable names. */
export function elfInterpreter(file: string): string {
  const b = readFileSync(file);
  if (b.readUInt32BE(0) !== 0x7f454c46 || b[4] !== 2 || b[5] !== 1) throw new Error(`${file} is not an ELF64 little-endian file`);
  const phoff = Number(b.readBigUInt64LE(0x20));
  const size = b.readUInt16LE(0x36);
  for (let i = 0; i < b.readUInt16LE(0x38); i++) {
    const ph = phoff + i * size;
    if (b.readUInt32LE(ph) !== 3) continue; // PT_INTERP
    const off = Number(b.readBigUInt64LE(ph + 8));
    return b.toString('latin1', off, off + Number(b.readBigUInt64LE(ph + 32))).replace(/\0+$/, '');
  }
  throw new Error(`${file} names no program interpreter`);
}

/** `path` resolved inside `root` as the kernel would in a chroot there (absolute links start again at root); undefined when a link is broken. */
export function resolveInRoot(root: string, path: string, depth = 0): string | undefined {
  if (depth > 40) return undefined;
  const parts = path.split('/').filter(Boolean);
  let at = '';
  for (let i = 0; i < parts.length; i++) {
    const next = `${at}/${parts[i]}`;
    let st;
    try {
      st = lstatSync(join(root, next));
    } catch {
      return undefined;
    }
    if (st.isSymbolicLink()) {
      const target = readlinkSync(join(root, next));
      const rest = parts.slice(i + 1).join('/');
      const base = target.startsWith('/') ? target : `${at}/${target}`;
      return resolveInRoot(root, normalize(`${base}/${rest}`), depth + 1);
    }
    at = next;
  }
  return at;
}
