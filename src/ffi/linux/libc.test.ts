import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';

// In a process of its own: glibc's mmap threshold is per process and moves with what was freed before.
test('with libc loaded, a large C block freed below a live one goes back to the system (glibc mmap threshold fixed at 128 KiB)', () => {
  const libc = new URL('./libc.js', import.meta.url).href;
  const script = `
    import { readFileSync } from 'node:fs';
    const { libcLibrary, MMAP_THRESHOLD } = await import(${JSON.stringify(libc)});
    const lib = libcLibrary();
    const malloc = lib.func('void *malloc(size_t size)');
    const free = lib.func('void free(void *ptr)');
    const memset = lib.func('void *memset(void *s, int c, size_t n)');
    const anonKb = () => Number(/^RssAnon:\\s+(\\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'))[1]);
    // What libbpf does with the kernel's BTF: a large block, filled, freed (glibc's default policy
    // then raises its threshold to that size, so the next large blocks come from the heap).
    const btf = malloc(8 << 20); memset(btf, 1, 8 << 20); free(btf);
    const big = malloc(4 << 20);
    const live = malloc(64);
    memset(big, 1, 4 << 20);
    const before = anonKb();
    free(big);
    console.log(JSON.stringify({ returnedKb: before - anonKb(), threshold: MMAP_THRESHOLD }));
    free(live);
  `;
  const out = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })) as { returnedKb: number; threshold: number };
  assert.equal(out.threshold, 128 << 10);
  assert.ok(out.returnedKb >= 3 << 10, `freeing a 4 MiB block returned ${out.returnedKb} kB of RSS`);
});
