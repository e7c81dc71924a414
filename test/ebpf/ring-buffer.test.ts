/**
 * The ring-buffer drain on a real kernel, with the synthetic producer (ringbench, BPF_PROG_TEST_RUN):
 * records arrive from the event loop (koffi.node.poll on the epoll fd), in order, decoded, one batch
 * per wake-up; a ring too small loses records and the loss is counted exactly; with batched
 * wake-ups (retina.h) a lone record arrives at once, a straggler with the follow-up drain, and an
 * idle reader does not wake the event loop.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
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

/** Voluntary context switches of this (the event loop's) thread: one per wake-up. */
const wakeups = (): number => Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(readFileSync('/proc/thread-self/status', 'utf8'))?.[1]);

/** Wake-ups of the event loop over `ms` with nothing else to do (the sleep itself is one). */
async function idleWakeups(ms: number): Promise<number> {
  const w0 = wakeups();
  await sleep(ms);
  return wakeups() - w0;
}

test('batched wake-ups: a lone record arrives at once, a straggler with the follow-up drain, an idle reader never wakes', async () => {
  requireKernel();
  using obj = openBpfObject('ringbench', { rodata: { per_run: 1, wakeup_bytes: 1 << 20 }, maxEntries: { retina_ringbench_events: 1 << 22 } });
  const arrivals: number[] = [];
  using ring = openRingBuffer(obj.map('retina_ringbench_events'), {
    decode: decodeRetrans, followUpMs: 100,
    onBatch: (r) => {
      for (let i = 0; i < r.length; i++) arrivals.push(performance.now());
    },
  });
  const idle = await idleWakeups(1000);
  assert.ok(idle <= 3, `an idle reader does not wake the event loop (${idle} wake-ups in 1 s)`);

  const produce = (): number => {
    const t = performance.now();
    testRunProgram(obj.program('ringbench_produce'), PACKET, 1);
    return t;
  };
  const waitFor = async (n: number, ms: number): Promise<void> => {
    const deadline = Date.now() + ms;
    while (arrivals.length < n && Date.now() < deadline) await sleep(5);
    assert.equal(arrivals.length, n, `${n} record(s) delivered within ${ms} ms`);
  };
  // Far below wakeup_bytes, but nothing woke the reader lately: the kernel wakes it at once.
  const t1 = produce();
  await waitFor(1, 2000);
  // Within the kernel's hold-off: no wake-up; the follow-up drain (100 ms after the wake-up) brings it.
  const t2 = produce();
  await waitFor(2, 2000);
  const late = (arrivals[1] as number) - t2;
  assert.ok(late < 1000, `the straggler waited ${late.toFixed(0)} ms`);
  assert.equal(ring.stats.records, 2);
  // The follow-up found a record, so one more follows it; then the chain ends.
  await sleep(300);
  const after = await idleWakeups(1000);
  assert.ok(after <= 3, `once the ring is idle again the reader stops waking (${after} wake-ups in 1 s; first record after ${((arrivals[0] as number) - t1).toFixed(0)} ms)`);
});
