/**
 * The Hubble server's history beyond its ring, over files the real exporter and file sink wrote
 * (rotated, gzipped): the stored part ends where the ring begins (no flow twice, none missing), in
 * time order across a backup boundary whose times go back, `since`/`until` per flow, filters applied
 * to the read-back flows, lines that are not flows counted and skipped.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { backupName, createExportHistory, createFlowExporter, createFileSink, flowRecord, sinkCounts, staticSelection, type FileSink } from '../../src/export/index.js';
import { createFlow, type Flow } from '../../src/flow/index.js';
import { compileFlowFilters, createFlowJsonReader, hubbleProtoFiles, loadFlowProtos, toHubbleFlow, type HubbleObject } from '../../src/flow/hubble/index.js';
import { createLogger } from '../../src/log/index.js';
import { createMetricsRegistry } from '../../src/metrics/index.js';
import { createFlowRing, readStoredFlows, type StoredReadRequest, type StoredReadStats } from '../../src/server/hubble/index.js';

const protoDir = fileURLToPath(new URL('../../../proto/hubble', import.meta.url));
const files = hubbleProtoFiles(protoDir);
const protos = loadFlowProtos(files);
const reader = createFlowJsonReader(files.definition());
const log = createLogger({ level: 'error', stream: new PassThrough() });
const dir = mkdtempSync(join(tmpdir(), 'hubble-history-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const T0 = Date.UTC(2026, 10, 1);
/** Flow i: port i, i ms after T0 (every third one dropped). */
const flow = (i: number, timeMs = T0 + i): Flow => createFlow({
  srcIp: '10.0.0.1', dstIp: '10.0.0.2', verdict: i % 3 === 0 ? 'DROPPED' : 'FORWARDED', dropReason: 'NETFILTER_DROP', proto: 17, srcPort: i, dstPort: 53, timeMs,
});
const portOf = (h: HubbleObject): number => Number(((h['l4'] as HubbleObject)['UDP'] as HubbleObject)['source_port'] ?? 0); // port 0: protojson leaves it out
const all = compileFlowFilters([], [], protos.enums);

async function read(req: Partial<StoredReadRequest> & Pick<StoredReadRequest, 'ring'>, src: Parameters<typeof readStoredFlows>[0], stats?: StoredReadStats): Promise<number[]> {
  const out: number[] = [];
  const full: StoredReadRequest = { since: undefined, until: undefined, matcher: all, nowMs: Date.now(), readFlow: (j) => reader.flow(j), cancelled: () => false, ...req };
  for await (const batch of readStoredFlows(src, full, stats)) out.push(...batch.map((p) => portOf(p.hubble)));
  return out;
}

/** The static exporter and a ring fed the same batches, as the node pipeline feeds them. */
async function pipeline(name: string, n: number, ringSize: number, allowList: Record<string, unknown>[] = []): Promise<{ ring: Flow[]; history: ReturnType<typeof createExportHistory> }> {
  const path = join(dir, name, 'events.log');
  const metrics = createMetricsRegistry();
  let t = T0;
  const sink: FileSink = createFileSink({ path, maxSizeBytes: 16 * 1024, maxBackups: 0, compress: true, counts: sinkCounts(metrics, 'file'), log, now: () => new Date((t += 1000)) });
  const exporter = createFlowExporter({ name: 'static', selection: staticSelection(allowList, []), sinks: [sink], nodeName: 'node-a', protos, metrics, log });
  const ring = createFlowRing(ringSize);
  for (let b = 0; b < n / 10; b++) {
    const batch = { source: 'test', flows: Array.from({ length: 10 }, (_, i) => flow(b * 10 + i)) };
    ring.consume(batch);
    exporter.consume(batch);
    await sink.flushed();
  }
  await exporter[Symbol.asyncDispose]();
  const held: Flow[] = [];
  for (let s = ring.tail(); s < ring.head(); s++) held.push(ring.at(s) as Flow);
  const config = { file: { path, maxSizeMb: 1, maxBackups: 0, compress: true }, allowList, denyList: [], fieldMask: [], aggregationIntervalMs: 0, keys: { allowList: 'a', denyList: 'd', fieldMask: 'm' } };
  return { ring: held, history: createExportHistory({ config, nodeName: 'node-a', protos }) };
}

test('the stored part ends where the ring begins: every older flow once, in order, none of the ring\'s', async () => {
  const { ring, history } = await pipeline('seam', 1000, 100);
  const stats: StoredReadStats = { lines: 0, bad: 0 };
  let made = 0;
  const counted = { ...history, lineOf: (f: Flow): string | undefined => (made++, history.lineOf(f)) };
  const got = await read({ ring, since: { seconds: 0, nanos: 0 } }, counted, stats);
  assert.deepEqual(got, Array.from({ length: 900 }, (_, i) => i));
  assert.equal(stats.bad, 0);
  assert.ok(stats.lines <= 901, `read up to the seam, not on: ${stats.lines}`);
  assert.equal(made, 1, 'the seam is the ring\'s oldest flow: one ring flow\'s line made, not the ring\'s 100');
  // The line the exporter wrote is the line the history makes for a ring flow.
  assert.equal(history.lineOf(ring[0] as Flow), JSON.stringify(flowRecord(toHubbleFlow(ring[0] as Flow, 'node-a'), protos.json, undefined)));
  // since/until per flow, filters on the read-back flows.
  assert.deepEqual(await read({ ring, since: { seconds: Math.floor((T0 + 500) / 1000), nanos: ((T0 + 500) % 1000) * 1e6 }, until: { seconds: Math.floor((T0 + 510) / 1000), nanos: ((T0 + 510) % 1000) * 1e6 } }, history), Array.from({ length: 11 }, (_, i) => 500 + i));
  const drops = compileFlowFilters([{ verdict: ['DROPPED'] }], [], protos.enums);
  assert.deepEqual(await read({ ring, matcher: drops }, history), Array.from({ length: 300 }, (_, i) => i * 3));
});

test('an export that keeps a subset: the seam is the ring\'s first flow it keeps', async () => {
  const { ring, history } = await pipeline('subset', 600, 50, [{ verdict: ['DROPPED'] }]);
  assert.equal(history.lineOf(ring.find((f) => f.verdict === 'FORWARDED') as Flow), undefined);
  const got = await read({ ring }, history);
  assert.deepEqual(got, Array.from({ length: 550 }, (_, i) => i).filter((p) => p % 3 === 0));
});

test('times out of order across a backup boundary: put in time order, since and until per flow, a line that is not a flow skipped', async () => {
  const d = join(dir, 'disorder');
  mkdirSync(d);
  const path = join(d, 'events.log');
  const line = (i: number, ms: number): string => JSON.stringify(flowRecord(toHubbleFlow(flow(i, T0 + ms), 'node-a'), protos.json, undefined));
  // Backup 1 ends with a flow later than backup 2's first ones (two plugins' drains interleaved).
  writeFileSync(backupName(path, new Date(T0 + 15)), [line(10, 10), line(11, 11), line(12, 12), line(15, 15), ''].join('\n'));
  writeFileSync(`${backupName(path, new Date(T0 + 16))}.gz`, gzipSync([line(13, 13), 'not json', line(14, 14), '{"flow":{},"node_name":"x"}', line(16, 16), ''].join('\n')));
  writeFileSync(path, [line(17, 17), line(18, 18), line(19, 19 + 3_600_000), ''].join('\n'));
  const history = createExportHistory({ config: { file: { path, maxSizeMb: 1, maxBackups: 0, compress: true }, allowList: [], denyList: [], fieldMask: [], aggregationIntervalMs: 0, keys: { allowList: 'a', denyList: 'd', fieldMask: 'm' } }, nodeName: 'node-a', protos });
  const ts = (ms: number): { seconds: number; nanos: number } => ({ seconds: Math.floor((T0 + ms) / 1000), nanos: ((T0 + ms) % 1000) * 1e6 });
  const stats: StoredReadStats = { lines: 0, bad: 0 };
  // An empty ring: the stored part ends at the request's time (flow 19 is an hour later).
  assert.deepEqual(await read({ ring: [], since: ts(12.5), nowMs: T0 + 60_000 }, history, stats), [13, 14, 15, 16, 17, 18]);
  assert.equal(stats.bad, 2);
  assert.deepEqual(await read({ ring: [], until: ts(14), nowMs: T0 + 60_000 }, history), [10, 11, 12, 13, 14]);
  assert.deepEqual(await read({ ring: [], sortWindow: 1, nowMs: T0 + 60_000 }, history), [10, 11, 12, 13, 14, 15, 16, 17, 18], 'a window of one flow suffices for a disorder of one');
  assert.deepEqual(await read({ ring: [], sortWindow: 0, nowMs: T0 + 60_000 }, history), [10, 11, 12, 15, 13, 14, 16, 17, 18], 'without a window: the files\' order');
});
