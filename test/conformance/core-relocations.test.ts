/**
 * Which objects make libbpf read the kernel's BTF when they load: any CO-RE relocation does
 * (/sys/kernel/btf/vmlinux, 5.5 MB parsed in about 10 ms of CPU, per object, at every start).
 * packetforward and dns read only their context (struct __sk_buff, UAPI) and must carry none
 * (native-linux/include/retina.h: RETINA_SKB); the objects that read kernel structs must carry theirs.
 * bpftool's `gen min_core_btf` keeps the kernel types an object's relocations name: none when it has none.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ROOT } from '../integration/harness.js';

const dir = mkdtempSync(join(tmpdir(), 'core-relos-'));

/** The kernel types object `name`'s CO-RE relocations name (bpftool gen min_core_btf, then its dump). */
function relocatedTypes(name: string): string[] {
  const out = join(dir, `${name}.btf`);
  execFileSync('bpftool', ['gen', 'min_core_btf', '/sys/kernel/btf/vmlinux', out, join(ROOT, 'native-linux', name, `${name}.bpf.o`)], { stdio: ['ignore', 'ignore', 'pipe'] });
  return execFileSync('bpftool', ['btf', 'dump', 'file', out], { encoding: 'utf8' }).split('\n').filter((l) => l.startsWith('['));
}

describe('CO-RE relocations of the shipped BPF objects', () => {
  after(() => rmSync(dir, { recursive: true, force: true }));

  for (const name of ['packetforward', 'dns']) {
    it(`${name} carries none: libbpf loads it without the kernel's BTF`, () => {
      assert.deepEqual(relocatedTypes(name), [], `${name}.bpf.o relocates against kernel types (read its context with RETINA_SKB)`);
    });
  }

  for (const [name, type] of [['packetparser', "STRUCT 'nf_conn'"], ['dropreason', "STRUCT 'sk_buff'"], ['tcpretrans', "STRUCT 'sock_common'"]] as const) {
    it(`${name} carries its own (kernel structs it reads, e.g. ${type})`, () => {
      const types = relocatedTypes(name);
      assert.ok(types.some((t) => t.includes(type)), `${name}: ${types.join('\n')}`);
    });
  }
});
