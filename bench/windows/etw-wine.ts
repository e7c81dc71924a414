/**
 * The Windows side of bench/windows/etw.bench.ts, run by the Windows build of Node.js under Wine
 * (not a *.bench file: `make bench` runs those with Linux's node). The pktmon plugin, as the agent
 * runs it (drains every 50 ms, decodes into flows for a counting consumer), fed by the fake ETW DLL
 * (test/windows/fakes/fakeetw.c) through each consumer in turn: the native one
 * (native-windows/retina-etw.dll: ProcessTrace on its own thread, ring, one call per drain) at
 * paced rates, and the koffi callback path (one JS call per event) as fast as it goes. Per run:
 * events decoded per second, events lost, the process's CPU per event (all threads: the fake's
 * replay loop included) and the part of it outside the ProcessTrace thread (the JS thread: drains
 * and decoding). Writes one JSON object to argv[2].
 */
import { writeFileSync } from 'node:fs';
import koffi from 'koffi';
import type { FlowBatch } from '../../src/flow/index.js';
import { createPktmonPlugin } from '../../src/plugins/windows/pktmon/index.js';
import { openEtwSource } from '../../src/plugins/windows/pktmon/source.js';
import { pluginContext } from '../../test/windows/suite/context.js';

export interface EtwRun {
  readonly consumer: 'native' | 'callback';
  /** Events/s the fake was paced at (0: as fast as the consumer takes them). */
  readonly pacedAt: number;
  readonly events: number;
  readonly decoded: number;
  readonly lost: number;
  readonly seconds: number;
  readonly decodedPerSecond: number;
  /** Process CPU (user + system, all threads) per event, µs. */
  readonly cpuUsPerEvent: number;
  /** Of which outside the ProcessTrace thread (JS: drains and decoding), µs. */
  readonly jsCpuUsPerEvent: number;
  /** Wall time in the source's drain (the native call and parsing its records, or the callback queue's splice) per event, µs. */
  readonly drainUsPerEvent: number;
}

const fake = koffi.load(process.env['RETINATS_DLL_ADVAPI32'] ?? 'fakeetw.dll');
const producerCpuNs = fake.func('int64_t FakeEtwProducerCpuNs(void)') as () => number | bigint;

async function run(consumer: 'native' | 'callback', events: number, pacedAt: number): Promise<EtwRun> {
  process.env['FAKE_ETW_EVENTS'] = String(events);
  process.env['FAKE_ETW_RATE'] = String(pacedAt);
  let drainMs = 0;
  const def = createPktmonPlugin(() => {
    const src = openEtwSource({ capacity: 65_536, consumer });
    return { ...src, drain: (max: number) => { const t = performance.now(); const e = src.drain(max); drainMs += performance.now() - t; return e; } };
  });
  const { ctx, abort } = pluginContext(def);
  let decoded = 0;
  let lost = 0;
  let flows = 0;
  const c = {
    ...ctx,
    flows: { consume: (b: FlowBatch) => { flows += b.flows.length; } },
    self: { lostEvents: (_t: string, n: number) => { lost += n; }, parsedPackets: (n: number) => { decoded += n; } },
  };
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const handle = await def.start(c);
  const deadline = Date.now() + 120_000;
  while (decoded + lost < events && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  abort.abort();
  await handle[Symbol.asyncDispose]();
  if (flows === 0) throw new Error(`${consumer}: no flows decoded`);
  const cpuUs = cpu.user + cpu.system;
  const producerUs = Number(producerCpuNs()) / 1000;
  return {
    consumer, pacedAt, events, decoded, lost, seconds: Number(seconds.toFixed(3)),
    decodedPerSecond: Math.round(decoded / seconds),
    cpuUsPerEvent: Number((cpuUs / events).toFixed(3)),
    jsCpuUsPerEvent: Number((Math.max(0, cpuUs - producerUs) / events).toFixed(3)),
    drainUsPerEvent: Number(((drainMs * 1000) / Math.max(1, decoded)).toFixed(3)),
  };
}

const out = process.argv[2];
if (!out) throw new Error('usage: etw-wine.js <result.json>');
const events = Number(process.env['BENCH_ETW_EVENTS'] ?? 600_000);
const callbackEvents = Number(process.env['BENCH_ETW_CALLBACK_EVENTS'] ?? 60_000);
const rates = (process.env['BENCH_ETW_RATES'] ?? '100000,150000,200000,250000,400000').split(',').map(Number);
const rounds = Number(process.env['BENCH_ETW_ROUNDS'] ?? 2);
// warm-up, not reported: JIT, the ring's pages, the modules (stat calls are slow under Wine)
await run('native', 200_000, 400_000);
await run('callback', 2_000, 0);
const runs: EtwRun[] = [];
for (let round = 0; round < rounds; round++) {
  runs.push(await run('callback', callbackEvents, 0));
  for (const rate of round % 2 ? [...rates].reverse() : rates) runs.push(await run('native', events, rate));
}
writeFileSync(out, JSON.stringify(runs));
