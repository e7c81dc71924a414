/**
 * pktmon end to end under Wine, against the fake ETW DLL (test/windows/fakes/fakeetw.c through
 * RETINATS_DLL_ADVAPI32; Wine's own ETW functions are stubs): the real bindings start the session
 * (a left-over one replaced), enable PktMon, and ProcessTrace, on koffi's worker thread, replays the
 * synthetic fixture events through the real EVENT_RECORD callback as fast as it returns. The plugin
 * turns them into flows for a collecting consumer; every replayed event is either parsed or counted
 * lost (parsed_packets + lost_events == replayed + what the session QUERY reports). The decode rate
 * is written to RETINATS_WINE_FIGURES (pktmonEventsPerSecond).
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { consumeEtwSession, startEtwSession } from '../../../src/ffi/windows/index.js';
import type { FlowBatch } from '../../../src/flow/index.js';
import { createPktmonPlugin } from '../../../src/plugins/windows/pktmon/index.js';
import { PKTMON_PROVIDER, SESSION_NAME, openEtwSource } from '../../../src/plugins/windows/pktmon/source.js';
import { pluginContext, until } from './context.js';
import { env } from './wine.js';

/**
 * The 7 fixture events are 7 packets (PktGroupId 1..7), 4 of which give a flow (ARP, WiFi and the
 * truncated frame give none). The fake replays them over and over with the same PktGroupIds: the
 * plugin makes one flow per packet, so the replays are appearances of packets already seen (merged
 * while held, discarded as late once closed) and the run gives 4 flows however many events it replays.
 */
const FLOWS_PER_RUN = 4;

async function replay(events: number, sessionLost: number, capacity: number, slowConsumerMs: number, consumer: 'native' | 'callback' = 'callback'): Promise<{ flows: number; parsed: number; lostKernel: number; seconds: number; statuses: string[] }> {
  process.env['FAKE_ETW_EVENTS'] = String(events);
  process.env['FAKE_ETW_SESSION_LOST'] = String(sessionLost);
  // the callback path paces the fake by itself (one JS call per event); the native one needs a rate
  if (consumer === 'native') process.env['FAKE_ETW_RATE'] = '100000';
  else delete process.env['FAKE_ETW_RATE'];
  const def = createPktmonPlugin(() => openEtwSource({ capacity, consumer }));
  const { ctx, statuses, abort } = pluginContext(def);
  let flows = 0;
  let parsed = 0;
  let lostKernel = 0;
  const busy = (ms: number): void => { const end = Date.now() + ms; while (Date.now() < end); };
  const c = {
    ...ctx,
    flows: { consume: (b: FlowBatch) => { flows += b.flows.length; if (slowConsumerMs) busy(slowConsumerMs); } },
    self: { lostEvents: (t: string, n: number) => { if (t === 'kernel') lostKernel += n; else assert.fail(`lost ${n} as ${t}`); }, parsedPackets: (n: number) => { parsed += n; } },
  };
  const started = performance.now();
  const handle = await def.start(c);
  try {
    await until(`${events} events parsed or lost (parsed ${parsed}, lost ${lostKernel})`, () => (parsed + lostKernel >= events + sessionLost ? true : undefined), 120_000);
  } finally {
    abort.abort();
    await handle[Symbol.asyncDispose]();
  }
  return { flows, parsed, lostKernel, seconds: (performance.now() - started) / 1000, statuses };
}

describe('pktmon under Wine (fake ETW DLL)', () => {
  it('the ETW bindings replace a left-over session of our name, enable PktMon, consume and stop', async () => {
    env('RETINATS_DLL_ADVAPI32');
    process.env['FAKE_ETW_STALE'] = '1';
    process.env['FAKE_ETW_EVENTS'] = '70';
    process.env['FAKE_ETW_SESSION_LOST'] = '2';
    const session = startEtwSession({ name: SESSION_NAME, provider: PKTMON_PROVIDER, level: 5, keywords: 0x10n });
    delete process.env['FAKE_ETW_STALE'];
    assert.equal(session.replacedStale, true);
    const consumer = consumeEtwSession(SESSION_NAME, 1000);
    const events = await until('70 events', () => (consumer.received >= 70 ? true : undefined));
    assert.ok(events);
    const got = consumer.drain(1000);
    assert.equal(got.length, 70);
    assert.deepEqual(got.slice(0, 7).map((e) => e.id), [160, 170, 160, 170, 160, 160, 160]);
    assert.equal(got[0]?.data.length, 88);
    assert.equal(got[0]?.timestamp, 133_000_000_000_000_000n);
    assert.deepEqual(session.losses(), { eventsLost: 2, realTimeBuffersLost: 0, logBuffersLost: 0 });
    consumer.close();
    assert.equal(await consumer.done, 0);
    session.stop();
    assert.throws(() => consumeEtwSession(SESSION_NAME, 10), /OpenTraceW\(retina-ts-pktmon\) failed/);
    assert.throws(() => startEtwSession({ name: SESSION_NAME, provider: '00000000-0000-0000-0000-000000000001', level: 5, keywords: 0x10n }), /EnableTraceEx2.*Win32 error 87/);
  });

  it('the plugin on the koffi callback path decodes every replayed event into flows; the rate is measured', async () => {
    const events = 70_000;
    const r = await replay(events, 0, 65_536, 0);
    assert.equal(r.parsed + r.lostKernel, events);
    assert.equal(r.flows, FLOWS_PER_RUN, `flows ${r.flows} for ${r.parsed} parsed events: one per packet`);
    assert.ok(!r.statuses.some((s) => s.startsWith('failed') || s.startsWith('degraded')), r.statuses.join('; '));
    const figures = existsSync(env('RETINATS_WINE_FIGURES')) ? (JSON.parse(readFileSync(env('RETINATS_WINE_FIGURES'), 'utf8')) as object) : {};
    const rate = Math.round(events / r.seconds);
    writeFileSync(env('RETINATS_WINE_FIGURES'), JSON.stringify({ ...figures, pktmonEvents: events, pktmonEventsPerSecond: rate, pktmonLostAtFullSpeed: r.lostKernel }));
    console.log(`pktmon under Wine: ${events} events in ${r.seconds.toFixed(2)} s (${rate}/s), ${r.lostKernel} lost`);
  });

  it('the plugin on the native consumer (the default) decodes every replayed event, none lost; the rate is measured', async () => {
    const events = 200_000;
    const r = await replay(events, 0, 65_536, 0, 'native');
    assert.equal(r.parsed + r.lostKernel, events);
    // 200 000 fixture records take 20 MB of ring (80-128 bytes each): the 32 MiB ring holds them all
    // however slow this machine's JS thread is, so none may be lost (the rate itself is bench/windows')
    assert.equal(r.lostKernel, 0, 'nothing lost: the 32 MiB ring holds every event of the run');
    assert.equal(r.flows, FLOWS_PER_RUN, `flows ${r.flows} for ${r.parsed} parsed events: one per packet`);
    const figures = existsSync(env('RETINATS_WINE_FIGURES')) ? (JSON.parse(readFileSync(env('RETINATS_WINE_FIGURES'), 'utf8')) as object) : {};
    const rate = Math.round(events / r.seconds);
    writeFileSync(env('RETINATS_WINE_FIGURES'), JSON.stringify({ ...figures, pktmonNativeEvents: events, pktmonNativeEventsPerSecond: rate }));
    console.log(`pktmon under Wine, native consumer: ${events} events in ${r.seconds.toFixed(2)} s (${rate}/s), ${r.lostKernel} lost`);
  });

  it('on the callback path a slow consumer makes the bounded queue drop and count, and the session losses are counted too', async () => {
    const events = 20_000;
    const r = await replay(events, 3, 256, 30);
    assert.ok(r.lostKernel > 3, `only ${r.lostKernel} lost with a 256-event queue and a 30 ms consumer`);
    assert.equal(r.parsed + r.lostKernel, events + 3, 'every event is parsed or counted lost, and the session QUERY losses are added');
    assert.ok(r.flows > 0);
    console.log(`pktmon under Wine, slow consumer: ${r.parsed} parsed, ${r.lostKernel} lost`);
  });
});
