/**
 * Batched wake-ups of the ring-buffer drain on a real kernel (ringbench, BPF_PROG_TEST_RUN): with
 * retina.h's wake-up rule a lone record arrives at once, a straggler with the follow-up drain, and an
 * idle reader does not wake the event loop. In a process of its own: it counts this process's
 * wake-ups, which the V8 housekeeping (memory reducer, finalizers) left by earlier tests in the same
 * process would add to.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { test } from 'node:test';
import { openBpfObject, openRingBuffer, testRunProgram } from '../../src/ffi/linux/index.js';
import { decodeRetrans } from '../../src/plugins/linux/tcpretrans/decode.js';
import { requireKernel, sleep } from './netns.js';

const PACKET = new Uint8Array(64);

/** Voluntary context switches of this (the event loop's) thread: one per wake-up. */
const wakeups = (): number => Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(readFileSync('/proc/thread-self/status', 'utf8'))?.[1]);

/**
 * Wake-ups of the event loop over `ms` with nothing else to do (the sleep itself is one): the fewest
 * of three such windows. A reader that wakes by itself (a timer, an unbatched ring) wakes in every
 * window; a busy machine's one-off wake-ups of this thread (V8 workers' locks, housekeeping) do not.
 */
async function idleWakeups(ms: number): Promise<number> {
  let least = Infinity;
  for (let i = 0; i < 3; i++) {
    const w0 = wakeups();
    await sleep(ms);
    least = Math.min(least, wakeups() - w0);
  }
  return least;
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
  assert.ok(idle <= 3, `an idle reader does not wake the event loop (${idle} wake-ups in the quietest of three 1 s windows)`);

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
  assert.ok(after <= 3, `once the ring is idle again the reader stops waking (${after} wake-ups in the quietest of three 1 s windows; first record after ${((arrivals[0] as number) - t1).toFixed(0)} ms)`);
});

test('a wake-up while a follow-up is pending moves it: a record held back after the second wake-up still arrives', async (t) => {
  requireKernel();
  // The kernel holds off wake-ups for 50 ms after its last one (retina.h); the follow-up here is 80 ms.
  // A at 0 wakes the reader, which arms a follow-up for ~80; B at ~60 wakes it again (60 >= 50) while
  // that follow-up is pending; the follow-up at ~80 finds nothing; C at ~90 is within 50 ms of B's
  // wake-up, so the kernel does not wake the reader for it. Only a follow-up counted from B's wake-up
  // (~140) brings C: one counted from A's had already gone. A timer that fires late only moves C out
  // of B's hold-off (then the kernel wakes the reader for C, and the case proves nothing): up to five
  // tries, each said.
  using obj = openBpfObject('ringbench', { rodata: { per_run: 1, wakeup_bytes: 1 << 20 }, maxEntries: { retina_ringbench_events: 1 << 22 } });
  let delivered = 0;
  using ring = openRingBuffer(obj.map('retina_ringbench_events'), { decode: decodeRetrans, followUpMs: 80, onBatch: (r) => void (delivered += r.length) });
  const produce = (): number => {
    testRunProgram(obj.program('ringbench_produce'), PACKET, 1);
    return performance.now();
  };
  let proven = false;
  for (let i = 0; i < 5 && !proven; i++) {
    await sleep(300); // every hold-off and follow-up of the try before is over
    const d0 = delivered;
    const a = produce();
    await sleep(60);
    const b = produce();
    await sleep(Math.max(0, a + 90 - performance.now()));
    const c = produce();
    const deadline = Date.now() + 2000;
    while (delivered < d0 + 3 && Date.now() < deadline) await sleep(5);
    const inWindow = b - a >= 50 && c - b < 45 && c - a > 85;
    t.diagnostic(`try ${i + 1}: B ${(b - a).toFixed(0)} ms after A, C ${(c - a).toFixed(0)} ms after A${inWindow ? '' : ' (outside the window: the kernel may have woken the reader for C)'}; delivered ${delivered - d0} of 3`);
    assert.equal(delivered - d0, 3, `try ${i + 1}: every record delivered within 2 s (C held back after B's wake-up is the one a follow-up counted from A's misses)`);
    proven = inWindow;
  }
  assert.ok(proven, 'one try put C inside B\'s hold-off and after A\'s follow-up');
  assert.equal(ring.stats.errors, 0);
});
