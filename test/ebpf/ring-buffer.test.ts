/**
 * The ring-buffer drain on a real kernel, with the synthetic producer (ringbench, BPF_PROG_TEST_RUN):
 * records arrive from the event loop (koffi.node.poll on the epoll fd), in order, decoded, one batch
 * per wake-up; a ring too small loses records and the loss is counted exactly. Batched wake-ups are
 * tested in ring-wakeups.test.ts, a process of its own.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openBpfObject, openRingBuffer, testRunProgram } from '../../src/ffi/linux/index.js';
import { decodeRetrans, type RetransRecord } from '../../src/plugins/linux/tcpretrans/decode.js';
import { requireKernel, sleep } from './netns.js';

const PACKET = new Uint8Array(64);

test('every record arrives through the event loop, in order, decoded', async () => {
  requireKernel();
  using obj = openBpfObject('ringbench', { rodata: { per_run: 50 }, maxEntries: { retina_ringbench_events: 1 << 22 } });
  const got: RetransRecord[] = [];
  let batches = 0;
  using ring = openRingBuffer(obj.map('retina_ringbench_events'), {
    decode: decodeRetrans,
    lostMap: obj.map('retina_ringbench_lost'),
    onBatch: (r) => {
      batches++;
      for (const x of r) got.push(x);
    },
  });
  const runs = 400;
  testRunProgram(obj.program('ringbench_produce'), PACKET, runs);
  const deadline = Date.now() + 10_000;
  while (got.length < runs * 50 && Date.now() < deadline) await sleep(20);
  assert.equal(got.length, runs * 50);
  assert.ok(batches >= 1 && batches <= got.length / 50, `one batch per wake-up, not per record (${batches} batches)`);
  for (let i = 1; i < got.length; i++) assert.equal((got[i] as RetransRecord).tsNs, (got[i - 1] as RetransRecord).tsNs + 1);
  const first = got[0] as RetransRecord;
  assert.deepEqual([first.family, first.srcV4, first.dstPort, first.segs, first.len], [4, 0x0a000001, 443, 1, 1500]);
  assert.equal(ring.takeLost(), 0);
});

test('a full ring loses records, and the loss is counted', () => {
  requireKernel();
  using obj = openBpfObject('ringbench', { rodata: { per_run: 200 }, maxEntries: { retina_ringbench_events: 4096 } });
  let got = 0;
  using ring = openRingBuffer(obj.map('retina_ringbench_events'), {
    decode: decodeRetrans, lostMap: obj.map('retina_ringbench_lost'), poll: false,
    onBatch: (r) => void (got += r.length),
  });
  testRunProgram(obj.program('ringbench_produce'), PACKET, 1);
  ring.drain();
  const lost = ring.takeLost();
  assert.ok(lost > 0, 'records were lost');
  assert.equal(got + lost, 200);
  assert.equal(ring.takeLost(), 0, 'takeLost reports each loss once');
});
