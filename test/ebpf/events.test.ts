/**
 * The event side every eBPF plugin shares (wireEvents), on a real kernel ring: records that reach
 * the agent but cannot be decoded are counted in lost_events_counter{type="parser"}, not only
 * logged. The producer is ringbench (BPF_PROG_TEST_RUN), whose 56-byte records are too short for
 * packetparser's 120-byte decoder: every one is a real decode failure.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openBpfObject, testRunProgram } from '../../src/ffi/linux/index.js';
import { catalog } from '../../src/metrics/index.js';
import { ResourceStack } from '../../src/plugin/index.js';
import { kernelClock } from '../../src/plugins/linux/ebpf-shared/clock.js';
import { wireEvents } from '../../src/plugins/linux/ebpf-shared/events.js';
import { PACKET_EVENT_SIZE, createPacketDecoder } from '../../src/plugins/linux/packetparser/decode.js';
import { fakeContext } from './fake-context.js';
import { requireKernel, sleep } from './netns.js';

test('records that fail to decode count in lost_events_counter{type="parser"}, with the reason logged', async () => {
  requireKernel();
  const { ctx, got } = fakeContext({}, { metricsIntervalMs: 100 });
  const perRun = 50;
  const runs = 4;
  await using s = await ResourceStack.build((st) => {
    const obj = st.use(openBpfObject('ringbench', { rodata: { per_run: perRun }, maxEntries: { retina_ringbench_events: 1 << 20 } }));
    wireEvents(st, ctx, obj, {
      source: 'test', eventsMap: 'retina_ringbench_events', lostMap: 'retina_ringbench_lost',
      decode: createPacketDecoder({ clock: kernelClock() }),
      onRecords: (r) => assert.fail(`${r.length} records decoded`),
    });
    testRunProgram(obj.program('ringbench_produce'), new Uint8Array(64), runs);
  });
  const parser = (): number => got.lost.filter((l) => l.type === catalog.lostEventTypes.parser).reduce((a, l) => a + l.n, 0);
  const deadline = Date.now() + 10_000;
  while (parser() < runs * perRun && Date.now() < deadline) await sleep(50);
  assert.equal(parser(), runs * perRun);
  assert.ok(!got.lost.some((l) => l.type === catalog.lostEventTypes.kernel), 'no kernel loss in a big ring');
  const warn = got.logs.find((l) => l.msg === 'event records failed to decode');
  assert.ok(warn, 'the failure is logged');
  assert.match(String(warn.fields['error']), new RegExp(`packet record of 56 bytes, expected ${PACKET_EVENT_SIZE}`));
  assert.deepEqual(got.status.filter((x) => x.startsWith('failed')), [], 'decode errors do not fail the plugin');
  void s;
});
