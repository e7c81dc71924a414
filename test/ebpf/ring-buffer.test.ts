/**
 * The ring-buffer drain on a real kernel, with the synthetic producer (ringbench, BPF_PROG_TEST_RUN):
 * records arrive from the event loop (koffi.node.poll on the epoll fd), in order, decoded, one batch
 * per wake-up; a ring too small loses records and the loss is counted exactly. Batched wake-ups are
 * tested in ring-wakeups.test.ts, a process of its own. An open ring's data area is mapped once
 * (libbpf's mapping, which repeats it), not again by the reader.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
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

test('a backlog drains in bounded slices, in order, with other callbacks run between them', async () => {
  requireKernel();
  using obj = openBpfObject('ringbench', { rodata: { per_run: 50 }, maxEntries: { retina_ringbench_events: 1 << 22 } });
  const got: RetransRecord[] = [];
  const sizes: number[] = [];
  using ring = openRingBuffer(obj.map('retina_ringbench_events'), {
    decode: decodeRetrans,
    lostMap: obj.map('retina_ringbench_lost'),
    maxPerDrain: 1000,
    onBatch: (r) => {
      sizes.push(r.length);
      for (const x of r) got.push(x);
    },
  });
  const runs = 400;
  testRunProgram(obj.program('ringbench_produce'), PACKET, runs); // 20 000 records before the first drain
  // A callback queued now, as a scrape's I/O would be, runs before the backlog is all drained.
  let seenAtTick = -1;
  const tick = setInterval(() => {
    if (got.length > 0 && seenAtTick < 0) seenAtTick = got.length;
  }, 0);
  const deadline = Date.now() + 10_000;
  while (got.length < runs * 50 && Date.now() < deadline) await sleep(20);
  clearInterval(tick);
  assert.equal(got.length, runs * 50);
  assert.ok(Math.max(...sizes) <= 1000, `no slice over 1000 records (${Math.max(...sizes)})`);
  assert.ok(ring.stats.slicesCut >= 19, `the backlog was cut into slices (${ring.stats.slicesCut} cut)`);
  assert.ok(seenAtTick > 0 && seenAtTick < got.length, `a timer ran mid-backlog (at ${seenAtTick} records)`);
  for (let i = 1; i < got.length; i++) assert.equal((got[i] as RetransRecord).tsNs, (got[i - 1] as RetransRecord).tsNs + 1);
  assert.equal(ring.takeLost(), 0);
  assert.equal(ring.stats.errors, 0);
});

for (const consumer of ['js', 'libbpf'] as const) {
  test(`${consumer} consumer: a small ring wrapped around 20 times, discarded records skipped, the rest in order`, async () => {
    requireKernel();
    // 64 KiB: 1 024 records of 56 bytes and their 8-byte headers; every 7th reserved is discarded.
    using obj = openBpfObject('ringbench', { rodata: { per_run: 50, discard_every: 7 }, maxEntries: { retina_ringbench_events: 1 << 16 } });
    const got: number[] = [];
    using ring = openRingBuffer(obj.map('retina_ringbench_events'), {
      decode: decodeRetrans, lostMap: obj.map('retina_ringbench_lost'), consumer,
      onBatch: (r) => void got.push(...r.map((x) => x.tsNs)),
    });
    const rounds = 40;
    for (let i = 0; i < rounds; i++) {
      testRunProgram(obj.program('ringbench_produce'), PACKET, 10); // 500 reserved, about half the ring
      const want = Math.ceil(((i + 1) * 500 * 6) / 7) - 1;
      const deadline = Date.now() + 10_000;
      while (got.length < want && Date.now() < deadline) await sleep(5);
    }
    await sleep(100);
    const expected = Array.from({ length: rounds * 500 }, (_, n) => n).filter((n) => n % 7 !== 0);
    assert.equal(got.length, expected.length);
    assert.deepEqual(got, expected, 'every submitted record once, in order, none discarded');
    assert.equal(ring.takeLost(), 0);
    assert.equal(ring.stats.errors, 0);
    assert.equal(ring.consumer, consumer, 'the consumer asked for');
  });
}

for (const consumer of ['js', 'libbpf'] as const) test(`${consumer} consumer: a batch handler that closes the reader mid-walk ends the walk there, and the ring is unmapped after it`, () => {
  requireKernel();
  using obj = openBpfObject('ringbench', { rodata: { per_run: 50 }, maxEntries: { retina_ringbench_events: 1 << 22 } });
  let got = 0;
  const ring = openRingBuffer(obj.map('retina_ringbench_events'), {
    decode: decodeRetrans, poll: false, maxBatch: 100, consumer,
    onBatch: (r) => {
      got += r.length;
      ring[Symbol.dispose]();
    },
  });
  testRunProgram(obj.program('ringbench_produce'), PACKET, 40); // 2 000 records
  assert.equal(ring.drain(), 100);
  assert.equal(got, 100, 'nothing read after the close');
  assert.equal(ring.drain(), 0);
});

test('js consumer: a decoder that keeps referring to records in the ring gets beforeRelease before their space goes back (every 64 records, at the end of a walk) and before a close unmaps it', () => {
  requireKernel();
  using obj = openBpfObject('ringbench', { rodata: { per_run: 50 }, maxEntries: { retina_ringbench_events: 1 << 22 } });
  const held: { v: DataView; off: number; size: number }[] = [];
  const copied: number[] = [];
  let releases = 0;
  let most = 0;
  const ring = openRingBuffer(obj.map('retina_ringbench_events'), {
    decode: (v, off, size) => void held.push({ v, off, size }), poll: false, maxBatch: 100, consumer: 'js',
    beforeRelease: () => {
      releases++;
      most = Math.max(most, held.length);
      for (const h of held) copied.push(decodeRetrans(h.v, h.off, h.size).tsNs);
      held.length = 0;
    },
    onBatch: () => {
      if (copied.length + held.length >= 1000) ring[Symbol.dispose]();
    },
  });
  testRunProgram(obj.program('ringbench_produce'), PACKET, 40); // 2 000 records
  assert.equal(ring.drain(), 1000);
  assert.equal(held.length, 0, 'the close let the decoder copy what it held');
  assert.deepEqual(copied, Array.from({ length: 1000 }, (_, n) => n), 'every record read while its space was still the reader\'s');
  assert.ok(most <= 64, `at most 64 records held between releases (${most})`);
  assert.ok(releases >= 1000 / 64, `${releases} releases`);
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

/** kB of RSS in this process's mappings of BPF maps (ring buffers, mmapable global data). */
function bpfMapRssKb(): number {
  let kb = 0;
  let inMap = false;
  for (const line of readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    if (/^[0-9a-f]+-[0-9a-f]+ /.test(line)) inMap = line.includes('bpf-map');
    else if (inMap && line.startsWith('Rss:')) kb += Number(line.split(/\s+/)[1]);
  }
  return kb;
}

test('an open ring costs its data area twice in RSS (libbpf\'s mapping only), not four times', () => {
  requireKernel();
  const size = 8 << 20;
  const before = bpfMapRssKb();
  using obj = openBpfObject('ringbench', { rodata: { per_run: 1 }, maxEntries: { retina_ringbench_events: size } });
  using ring = openRingBuffer(obj.map('retina_ringbench_events'), { decode: decodeRetrans, poll: false, onBatch: () => undefined });
  testRunProgram(obj.program('ringbench_produce'), PACKET, 1);
  assert.equal(ring.drain(), 1);
  const ringKb = bpfMapRssKb() - before;
  // libbpf maps the producer page and the data area twice (2 x 8 MiB), plus the consumer page; the
  // reader maps only the consumer page again. A second mapping of the data area would add 16 MiB.
  assert.ok(ringKb >= 2 * (size >> 10), `ring RSS ${ringKb} kB counts libbpf's mapping`);
  assert.ok(ringKb < 2 * (size >> 10) + 1024, `ring RSS ${ringKb} kB: the data area is mapped once`);
});
