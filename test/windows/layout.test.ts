/**
 * The koffi struct layouts of src/ffi/windows equal the Windows headers': test/windows/layout/layout.c
 * is compiled with mingw-w64 (`-S`, nothing runs) and every "#LAYOUT name value" line is compared
 * with koffi's sizeof/offsetof on this host (x64 layouts with explicit widths are the same on
 * Linux and Windows). Needs x86_64-w64-mingw32-gcc (Debian gcc-mingw-w64-x86-64: make system-deps);
 * fails when it is missing.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { it } from 'node:test';
import koffi from 'koffi';
import { ETW_LAYOUT, TABLE_ROWS, iphlpTypes } from '../../src/ffi/windows/index.js';

const source = fileURLToPath(new URL('../../../test/windows/layout/layout.c', import.meta.url));

it('koffi sizes and offsets of the iphlpapi structs, and the ETW offsets, equal the mingw-w64 offsetof dump', () => {
  const asm = execFileSync('x86_64-w64-mingw32-gcc', ['-S', '-o', '-', source], { encoding: 'utf8' });
  const lines = [...asm.matchAll(/#LAYOUT (\S+) (\d+)/g)].map((m) => [m[1] as string, Number(m[2])] as const);
  assert.ok(lines.length > 40, `the dump has only ${lines.length} entries`);
  const t = iphlpTypes() as unknown as Record<string, koffi.IKoffiCType>;
  const alias: Record<string, string> = { SDK_MIB_TCPSTATS2: 'MIB_TCPSTATS2' };
  let checked = 0;
  for (const [name, value] of lines) {
    const [struct, field] = name.split('.') as [string, string | undefined];
    const ours = alias[struct] ?? struct;
    if (name in ETW_LAYOUT) {
      assert.equal(ETW_LAYOUT[name as keyof typeof ETW_LAYOUT], value, `${name}: ETW_LAYOUT says ${ETW_LAYOUT[name as keyof typeof ETW_LAYOUT]}, mingw-w64 says ${value}`);
      checked++;
      continue;
    }
    if (ours in TABLE_ROWS) {
      if (field) assert.equal(TABLE_ROWS[ours as keyof typeof TABLE_ROWS], value, `${name}: rows start at ${value} in C`);
      checked++;
      continue;
    }
    const type = t[ours];
    assert.ok(type, `no koffi type for ${struct}`);
    const got = field ? koffi.offsetof(type, field) : koffi.sizeof(type);
    assert.equal(got, value, `${name}: koffi says ${got}, mingw-w64 says ${value}`);
    checked++;
  }
  assert.equal(checked, lines.length);
  const dumped = new Set(lines.map(([n]) => n));
  for (const key of Object.keys(ETW_LAYOUT)) assert.ok(dumped.has(key), `ETW_LAYOUT.${key} is not in the mingw dump`);
});
