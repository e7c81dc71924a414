import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { it } from 'node:test';
import type { EtwEvent } from '../../../ffi/windows/index.js';
import type { FlowBatch } from '../../../flow/index.js';
import { silentLogger } from '../../../log/index.js';
import { createMetricsRegistry } from '../../../metrics/index.js';
import { everyIp, type PluginContext } from '../../../plugin/index.js';
import { createPktmonPlugin, DRAIN_INTERVAL_MS } from './index.js';
import type { PktmonSource } from './source.js';

const fixture: EtwEvent[] = readFileSync(new URL('../../../../../test/fixtures/windows/pktmon-events.txt', import.meta.url), 'utf8')
  .split('\n').filter((l) => l && !l.startsWith('#')).map((l) => {
    const [id, ts, hex] = l.split(' ') as [string, string, string];
    return { id: Number(id), version: 0, timestamp: BigInt(ts), data: Buffer.from(hex, 'hex') };
  });

/** An in-memory source: events pushed by the test, losses set by the test. */
function memorySource(): PktmonSource & { push(e: EtwEvent[]): void; lostCount: number; closed: boolean } {
  let queue: EtwEvent[] = [];
  let end: () => void = () => undefined;
  const src = {
    lostCount: 0,
    closed: false,
    push: (e: EtwEvent[]) => { queue.push(...e); },
    drain: (max: number) => { const out = queue.slice(0, max); queue = queue.slice(max); return out; },
    lost: () => src.lostCount,
    ended: new Promise<void>((r) => { end = r; }),
    close: async () => { src.closed = true; end(); },
  };
  return src;
}

it('pktmon drains its source in batches into one flow per packet (synthetic fixture: 7 packets of one appearance each), counts losses and bad records once each, and sums drop_bytes', async () => {
  const src = memorySource();
  const batches: FlowBatch[] = [];
  const lost: Array<[string, number]> = [];
  let parsed = 0;
  const statuses: string[] = [];
  const abort = new AbortController();
  const def = createPktmonPlugin(() => src);
  assert.equal(def.podLevelOnly, true);
  assert.equal(def.defaultEnabled, false);
  const metrics = createMetricsRegistry({ processMetrics: false });
  const ctx = {
    config: {}, agent: { metricsIntervalMs: 1000, enablePodLevel: true } as PluginContext<object>['agent'], log: silentLogger,
    metrics,
    self: { lostEvents: (t: string, n: number) => lost.push([t, n]), parsedPackets: (n: number) => { parsed += n; } },
    flows: { consume: (b: FlowBatch) => batches.push(b) }, interest: everyIp, signal: abort.signal,
    status: { ok: (s: string) => statuses.push(`ok ${s}`), degraded: (s: string, r: string) => statuses.push(`degraded ${s} ${r}`), failed: (e: unknown) => statuses.push(`failed ${String(e)}`) },
  } satisfies PluginContext<object>;
  const handle = await def.start(ctx);
  src.push(fixture);
  src.push([{ id: 160, version: 0, timestamp: 0n, data: Buffer.alloc(10) }, { id: 20, version: 0, timestamp: 0n, data: Buffer.alloc(4) }]);
  src.lostCount = 5;
  await new Promise((r) => setTimeout(r, DRAIN_INTERVAL_MS * 3));
  src.lostCount = 7;
  await new Promise((r) => setTimeout(r, DRAIN_INTERVAL_MS * 3));
  const exposition = (await metrics.expose()).body;
  abort.abort();
  await handle[Symbol.asyncDispose]();
  assert.ok(src.closed, 'the source is closed on stop');
  const flows = batches.flatMap((b) => b.flows);
  assert.ok(batches.every((b) => b.source === 'pktmon'));
  // Drops close their packet at once; the forwarded packets when no appearance of theirs came for two drains.
  assert.deepEqual(flows.map((f) => `${f.verdict} ${f.srcIp}:${f.srcPort} ${f.dropReason} ${f.direction}`), [
    'DROPPED 10.0.0.9:53 Drop_NL_BadChecksum INGRESS', 'DROPPED 10.0.0.5:0 UnknownDropReason(4242) INGRESS', 'FORWARDED 10.0.0.5:40000  EGRESS', 'FORWARDED fd00::5:443  EGRESS',
  ]);
  assert.match(exposition, /networkobservability_drop_bytes\{reason="Drop_NL_BadChecksum",direction="ingress"\} 46/);
  assert.match(exposition, /networkobservability_drop_bytes\{reason="UnknownDropReason\(4242\)",direction="ingress"\} 42/);
  assert.match(exposition, /pktmon_packets_total\{outcome="dropped"\} 2/);
  assert.match(exposition, /pktmon_packets_total\{outcome="aged"\} 5/);
  assert.match(exposition, /pktmon_packets_total\{outcome="non_ip"\} 3/);
  assert.equal(parsed, fixture.length + 1, 'events 160/170 counted as parsed (event 20 is not a packet)');
  const sum = (t: string) => lost.filter(([k]) => k === t).reduce((a, [, n]) => a + n, 0);
  assert.equal(sum('kernel'), 7, 'source losses counted as deltas');
  assert.equal(sum('parser'), 1, 'the short record');
  assert.ok(!statuses.some((s) => s.startsWith('failed') || s.startsWith('degraded')), statuses.join('; '));
});
