/**
 * The native ETW consumer (native-windows/retina-etw.dll) under Wine, against the fake ETW DLL
 * (test/windows/fakes/fakeetw.c, handed to the library as its advapi32): ProcessTrace runs on the
 * library's thread and the fake replays the synthetic fixture events through the library's C
 * callback. The ring drains exactly the events produced, byte for byte; a ring too small for them
 * counts exactly what did not fit; the session's EventsLost and lost real-time buffers surface as
 * events lost through the plugin; stopping the plugin (what the agent's SIGTERM runs) calls
 * CloseTrace and joins the ProcessTrace thread before it returns; a session stopped from outside
 * ends ProcessTrace and fails the plugin. A missing library makes the
 * plugin fall back to the callback path and say so.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import koffi from 'koffi';
import { consumeEtwNative, queryEtwSession, startEtwSession, NATIVE_ETW_ENV, type EtwEvent } from '../../../src/ffi/windows/index.js';
import { traceProperties } from '../../../src/ffi/windows/etw-layout.js';
import type { FlowBatch } from '../../../src/flow/index.js';
import { createPktmonPlugin } from '../../../src/plugins/windows/pktmon/index.js';
import { PKTMON_PROVIDER, SESSION_NAME, openEtwSource, type EtwSourceOptions, type PktmonSource } from '../../../src/plugins/windows/pktmon/source.js';
import { pluginContext, until } from './context.js';
import { env } from './wine.js';

const fake = koffi.load(env('RETINATS_DLL_ADVAPI32'));
const replayed = fake.func('int64_t FakeEtwReplayed(void)') as () => number | bigint;
const producing = fake.func('int32_t FakeEtwProducing(void)') as () => number;
const inProcessTrace = fake.func('int32_t FakeEtwInProcessTrace(void)') as () => number;
const closeCalls = fake.func('int32_t FakeEtwCloseCalls(void)') as () => number;

/** The fixture the fake cycles through: id, FILETIME and user data of each line. */
const fixture: Array<{ id: number; timestamp: bigint; data: Buffer }> = readFileSync(env('FAKE_PKTMON_EVENTS'), 'utf8')
  .split(/\r?\n/).filter((l) => l && !l.startsWith('#')).map((l) => {
    const [id, ts, hex] = l.split(' ') as [string, string, string];
    return { id: Number(id), timestamp: BigInt(ts), data: Buffer.from(hex, 'hex') };
  });

function knobs(k: Record<string, number>): void {
  for (const name of ['FAKE_ETW_EVENTS', 'FAKE_ETW_SESSION_LOST', 'FAKE_ETW_BUFFER_EVENTS', 'FAKE_ETW_RT_BUFFERS_LOST', 'FAKE_ETW_RATE', 'FAKE_ETW_STAMP_INDEX']) delete process.env[name];
  for (const [name, v] of Object.entries(k)) process.env[name] = String(v);
}

const producedAll = (n: number) => (): true | undefined => (producing() === 0 && Number(replayed()) === n ? true : undefined);

describe('the native ETW consumer under Wine (fake ETW DLL)', () => {
  it('the ring drains exactly the events produced, in order, byte for byte, in few calls', async () => {
    const total = 50_000;
    knobs({ FAKE_ETW_EVENTS: total });
    const session = startEtwSession({ name: SESSION_NAME, provider: PKTMON_PROVIDER, level: 5, keywords: 0x10n });
    const c = consumeEtwNative({ session: SESSION_NAME, provider: PKTMON_PROVIDER, ringBytes: 16 << 20, drainBytes: 1 << 20 });
    try {
      const got: EtwEvent[] = [];
      let calls = 0;
      await until(`${total} events produced`, async () => {
        for (let batch = c.drain(100_000); batch.length; batch = c.drain(100_000)) { got.push(...batch); calls++; }
        return producedAll(total)();
      });
      for (let batch = c.drain(100_000); batch.length; batch = c.drain(100_000)) { got.push(...batch); calls++; }
      assert.equal(got.length, total);
      for (let i = 0; i < total; i++) {
        const want = fixture[i % fixture.length]!;
        const e = got[i]!;
        if (e.id !== want.id || e.timestamp !== want.timestamp || !e.data.equals(want.data)) assert.fail(`event ${i}: ${e.id} ${e.timestamp} ${e.data.toString('hex')} is not the fixture's line ${i % fixture.length}`);
      }
      const s = c.stats();
      assert.deepEqual({ received: s.received, ringed: s.ringed, overflow: s.overflow, drained: s.drained, other: s.other, done: s.done },
        { received: total, ringed: total, overflow: 0, drained: total, other: 0, done: false });
      assert.ok(calls <= Math.ceil((total * 112) / (1 << 20)) + 20, `${calls} drain calls for ${total} events`);
    } finally {
      c.close();
      session.stop();
    }
  });

  it('the ring wraps: 300 000 events through a 1 MiB ring, drained as they come, arrive whole and in order, and the overflow counts exactly the ones missing', async () => {
    const total = 300_000; // ~30 MB of records: the 1 MiB ring wraps about 30 times
    knobs({ FAKE_ETW_EVENTS: total, FAKE_ETW_RATE: 150_000, FAKE_ETW_STAMP_INDEX: 1 });
    const session = startEtwSession({ name: SESSION_NAME, provider: PKTMON_PROVIDER, level: 5, keywords: 0x10n });
    const c = consumeEtwNative({ session: SESSION_NAME, provider: PKTMON_PROVIDER, ringBytes: 1 << 20, drainBytes: 1 << 20 });
    try {
      const got: EtwEvent[] = [];
      const take = (): void => { for (let b = c.drain(100_000); b.length; b = c.drain(100_000)) for (const e of b) got.push(e); };
      const end = Date.now() + 60_000;
      while (!producedAll(total)() && Date.now() < end) {
        take();
        await new Promise((r) => setImmediate(r));
      }
      take();
      const s = c.stats();
      assert.equal(s.received, total);
      assert.equal(s.ringed + s.overflow, total);
      assert.equal(got.length, s.ringed);
      // the fake stamps each event with its index: strictly increasing, each the fixture line of its index
      let prev = -1;
      for (const e of got) {
        const i = Number(e.timestamp);
        const want = fixture[i % fixture.length]!;
        if (i <= prev || i >= total || e.id !== want.id || !e.data.equals(want.data)) assert.fail(`event ${i} after ${prev}: ${e.id} ${e.data.toString('hex')} is torn or out of order`);
        prev = i;
      }
      assert.equal(total - got.length, s.overflow, 'the events missing are exactly the ones counted as overflow');
      console.log(`ring wrap: ${s.ringed} ringed, ${s.overflow} overflowed of ${total}`);
    } finally {
      c.close();
      session.stop();
    }
  });

  it('a ring too small for them counts exactly the events that did not fit', async () => {
    const total = 30_000; // ~3.4 MB of records into the smallest ring (1 MiB), nothing drained meanwhile
    knobs({ FAKE_ETW_EVENTS: total });
    const session = startEtwSession({ name: SESSION_NAME, provider: PKTMON_PROVIDER, level: 5, keywords: 0x10n });
    const c = consumeEtwNative({ session: SESSION_NAME, provider: PKTMON_PROVIDER, ringBytes: 1 << 20, drainBytes: 4 << 20 });
    try {
      await until(`${total} events produced`, producedAll(total));
      const got = c.drain(total);
      const s = c.stats();
      assert.ok(s.overflow > total / 2, `only ${s.overflow} of ${total} overflowed a 1 MiB ring`);
      assert.equal(s.received, total);
      assert.equal(s.ringed + s.overflow, total, 'every event ETW handed over is ringed or counted');
      assert.equal(got.length, s.ringed, 'the drain returns every ringed event');
      const bytes = got.reduce((n, e) => n + ((16 + e.data.length + 15) & ~15), 0);
      assert.ok(bytes <= 1 << 20 && bytes > (1 << 20) - 2048, `${bytes} bytes ringed: the ring was filled`);
      for (const e of got) assert.ok(fixture.some((f) => f.id === e.id && f.data.equals(e.data)), 'a ringed event is a fixture event');
      assert.equal(c.drain(10).length, 0, 'drained empty');
    } finally {
      c.close();
      session.stop();
    }
  });

  async function runPlugin(open: () => PktmonSource, events: number, expectLost: number): Promise<{ parsed: number; lost: number; flows: number; warnings: string[]; infos: unknown[] }> {
    const def = createPktmonPlugin(open);
    const { ctx, statuses, abort } = pluginContext(def);
    let parsed = 0;
    let lost = 0;
    let flows = 0;
    const warnings: string[] = [];
    const infos: unknown[] = [];
    const log = { ...ctx.log, warn: (m: string) => { warnings.push(m); }, info: (_m: string, meta?: unknown) => { infos.push(meta); } };
    const c = {
      ...ctx, log: log as typeof ctx.log,
      flows: { consume: (b: FlowBatch) => { flows += b.flows.length; } },
      self: { lostEvents: (t: string, n: number) => { if (t === 'kernel') lost += n; else assert.fail(`lost ${n} as ${t}`); }, parsedPackets: (n: number) => { parsed += n; } },
    };
    const handle = await def.start(c);
    try {
      await until(`${events} parsed and ${expectLost} lost (parsed ${parsed}, lost ${lost})`, () => (parsed >= events && lost >= expectLost ? true : undefined), 60_000);
      await new Promise((r) => setTimeout(r, 300)); // nothing more comes
    } finally {
      abort.abort();
      await handle[Symbol.asyncDispose]();
    }
    assert.ok(!statuses.some((s) => s.startsWith('failed') || s.startsWith('degraded')), statuses.join('; '));
    return { parsed, lost, flows, warnings, infos };
  }

  it('the session\'s EventsLost and its lost real-time buffers surface as events lost (a lost buffer as the events a buffer holds)', async () => {
    // 6 998 events + 2 RTLostBuffer notices in buffers of 100: every delivered buffer holds 100 events
    knobs({ FAKE_ETW_EVENTS: 6998, FAKE_ETW_SESSION_LOST: 5, FAKE_ETW_BUFFER_EVENTS: 100, FAKE_ETW_RT_BUFFERS_LOST: 2 });
    const r = await runPlugin(() => openEtwSource({ capacity: 65_536, consumer: 'native' }), 6998, 205);
    assert.equal(r.parsed, 6998);
    assert.equal(r.lost, 5 + 2 * 100, 'EventsLost (5 events) + 2 lost buffers of 100 events');
    // the 7 fixture events are 7 packets, 4 of which give a flow (ARP, WiFi and the truncated frame give
    // none); the replays repeat their PktGroupIds, so they are appearances of packets already seen: one
    // flow per packet, 4 in all (pktmon.wintest.ts)
    assert.equal(r.flows, 4);
  });

  it('stopping the plugin (what SIGTERM runs) calls CloseTrace and joins the ProcessTrace thread before it returns, then stops the session', async () => {
    knobs({ FAKE_ETW_EVENTS: 1000 });
    const before = closeCalls();
    let sawRunning = false;
    const open = (): PktmonSource => {
      const src = openEtwSource({ capacity: 1000, consumer: 'native' });
      assert.equal(src.consumer, 'native');
      return { ...src, drain: (max) => { sawRunning ||= inProcessTrace() === 1; return src.drain(max); }, close: async () => { await src.close(); assert.equal(inProcessTrace(), 0, 'ProcessTrace returned before close() did'); } };
    };
    const r = await runPlugin(open, 1000, 0);
    assert.equal(r.parsed, 1000);
    assert.ok(sawRunning, 'ProcessTrace was running while the plugin drained');
    assert.equal(inProcessTrace(), 0);
    assert.equal(closeCalls(), before + 1, 'CloseTrace once');
    assert.deepEqual(queryEtwSession(SESSION_NAME), { running: false });
  });

  it('a session stopped from outside ends ProcessTrace: the plugin fails (the manager restarts it) and still stops cleanly', async () => {
    knobs({ FAKE_ETW_EVENTS: 700 });
    const def = createPktmonPlugin(() => openEtwSource({ capacity: 1000, consumer: 'native' }));
    const { ctx, statuses, abort } = pluginContext(def);
    let parsed = 0;
    const handle = await def.start({ ...ctx, self: { lostEvents: () => undefined, parsedPackets: (n: number) => { parsed += n; } } });
    try {
      await until('700 parsed', () => (parsed >= 700 ? true : undefined));
      assert.equal(inProcessTrace(), 1);
      // logman stop retina-ts-pktmon -ets: ControlTraceW(STOP) by name, from outside the plugin
      const stop = fake.func('uint32_t __stdcall ControlTraceW(uint64_t h, const char16_t *name, void *props, uint32_t code)') as (...a: unknown[]) => number;
      assert.equal(stop(0n, SESSION_NAME, traceProperties(SESSION_NAME), 1), 0);
      const failed = await until('the plugin failed', () => statuses.find((x) => x.startsWith('failed')));
      assert.match(failed, /the PktMon ETW session ended/);
      assert.equal(inProcessTrace(), 0);
    } finally {
      abort.abort();
      await handle[Symbol.asyncDispose]();
    }
    assert.equal(inProcessTrace(), 0);
  });

  it('without the library the plugin falls back to the callback path and warns, naming the file', async () => {
    knobs({ FAKE_ETW_EVENTS: 700 });
    process.env[NATIVE_ETW_ENV] = 'Z:\\nonexistent\\retina-etw.dll';
    try {
      const opts: EtwSourceOptions = { capacity: 1000 };
      const r = await runPlugin(() => openEtwSource(opts), 700, 0);
      assert.equal(r.parsed, 700);
      assert.equal(r.warnings.length, 1);
      assert.match(r.warnings[0]!, /native ETW consumer native-windows.retina-etw\.dll is not in the package.*callback path/);
      assert.deepEqual(r.infos.map((m) => (m as { consumer?: string }).consumer), ['callback']);
      assert.throws(() => openEtwSource({ capacity: 10, consumer: 'native' }), /native ETW consumer/);
      assert.deepEqual(queryEtwSession(SESSION_NAME), { running: false }, 'a failed open stops the session it started');
    } finally {
      delete process.env[NATIVE_ETW_ENV];
    }
  });
});
