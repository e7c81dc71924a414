import assert from 'node:assert/strict';
import { test } from 'node:test';
import { findSymbolRanges, kernelSymbolRanges } from './kallsyms.js';

// Lines as /proc/kallsyms prints them: core kernel sorted by address, then modules (not sorted).
const TEXT = [
  'ffffffff81f28dc0 T __pfx_nf_hook_slow',
  'ffffffff81f28dd0 T nf_hook_slow',
  'ffffffff81f28ee0 T __pfx_nf_hook_slow_list',
  'ffffffff81f28ef0 T nf_hook_slow_list',
  'ffffffffc0a01200 t nft_do_chain\t[nf_tables]',
  'ffffffffc0a00100 t nft_trace_init\t[nf_tables]',
  'ffffffffc0a01900 t nft_chain_stats\t[nf_tables]',
  'ffffffffc0a01800 t __nft_trace_packet\t[nf_tables]',
].join('\n');

/** The text cut at awkward places, as 64 KiB reads would cut a real file. */
const chunks = (n: number) => (): string[] => {
  const out: string[] = [];
  for (let i = 0; i < TEXT.length; i += n) out.push(TEXT.slice(i, i + n));
  return out;
};

test('a function ends at the next higher address of any symbol, module symbols unsorted', () => {
  for (const n of [7, 50, TEXT.length]) {
    assert.deepEqual(findSymbolRanges(chunks(n), ['nf_hook_slow', 'nft_do_chain']), [
      { name: 'nf_hook_slow', start: 0xffffffff81f28dd0n, end: 0xffffffff81f28ee0n },
      { name: 'nft_do_chain', start: 0xffffffffc0a01200n, end: 0xffffffffc0a01800n },
    ]);
  }
});

test('hidden addresses (kptr_restrict) or a missing symbol give no range', () => {
  const hidden = () => [TEXT.replace(/^[0-9a-f]{16}/gm, '0000000000000000')];
  assert.deepEqual(findSymbolRanges(hidden, ['nf_hook_slow']), []);
  assert.deepEqual(findSymbolRanges(chunks(100), ['no_such_function']), []);
});

test("this kernel's /proc/kallsyms has nf_hook_slow (read as root)", () => {
  const [r] = kernelSymbolRanges(['nf_hook_slow']);
  assert.ok(r && r.end > r.start && r.end - r.start < 0x10000n, `nf_hook_slow: ${r?.start.toString(16)}..${r?.end.toString(16)}`);
});
