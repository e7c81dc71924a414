/** The verifier's verdict read from libbpf's messages, and long messages clipped to their head and tail. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clipMessage, verifierVerdict } from './libbpf.js';

const LOG = [
  "libbpf: prog 'tcpretrans_tp_err': BPF program load failed: Permission denied",
  "libbpf: prog 'tcpretrans_tp_err': -- BEGIN PROG LOAD LOG --\n0: R1=ctx() R10=fp0\n31: (85) call bpf_get_prandom_u32#7      ; R0=scalar()\n" +
    "32: (61) r1 = *(u32 *)(r0 +0)\nR0 invalid mem access 'scalar'\nprocessed 33 insns (limit 1000000) max_states_per_insn 0 total_states 2 peak_states 2 mark_read 0\n-- END PROG LOAD LOG --",
  "libbpf: prog 'tcpretrans_tp_err': failed to load: -13",
  "libbpf: failed to load object 'tcpretrans.bpf.o'",
];

test('verifierVerdict names the refused program and the last lines before the statistics', () => {
  assert.deepEqual(verifierVerdict(LOG), { program: 'tcpretrans_tp_err', reason: "32: (61) r1 = *(u32 *)(r0 +0) / R0 invalid mem access 'scalar'" });
  assert.equal(verifierVerdict(['libbpf: failed to find BTF for extern']), undefined, 'no load log: no verdict');
});

test('verifierVerdict reads a clipped log (head and tail)', () => {
  const long = `libbpf: prog 'big': -- BEGIN PROG LOAD LOG --\n${'1: (b7) r0 = 0\n'.repeat(5000)}BPF program is too large. Processed 1000001 insn\nprocessed 1000001 insns (limit 1000000)\n-- END PROG LOAD LOG --`;
  const clipped = clipMessage(long);
  assert.ok(clipped.length < 9000, `clipped to ${clipped.length}`);
  assert.ok(clipped.startsWith("libbpf: prog 'big': -- BEGIN PROG LOAD LOG --\n…\n"));
  assert.deepEqual(verifierVerdict([clipped]), { program: 'big', reason: '1: (b7) r0 = 0 / BPF program is too large. Processed 1000001 insn' });
  assert.equal(clipMessage('short'), 'short');
});
