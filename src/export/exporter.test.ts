/**
 * The exporter core: selection (allow/deny, inactive, changed at run time, a bad change kept out),
 * the record shape, field masks, and the counting rule: every flow counts once in
 * flow_log_flows_total and every record once per sink in flow_log_records_total.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createFlow, type Flow } from '../flow/index.js';
import { loadFlowProtos } from '../flow/hubble/index.js';
import { createLogger } from '../log/index.js';
import { catalog, createMetricsRegistry, type MetricsRegistry } from '../metrics/index.js';
import { sinkCounts } from './counts.js';
import { createFlowExporter } from './exporter.js';
import { settableSelection, staticSelection } from './selection.js';
import type { FlowLogRecord, FlowLogSink } from './types.js';

const protos = loadFlowProtos(fileURLToPath(new URL('../../../proto/hubble', import.meta.url)));
const log = createLogger({ level: 'error', stream: new (await import('node:stream')).PassThrough() });

/** A sink that keeps what it is handed and counts it written (or, past `room`, dropped). */
function memorySink(metrics: MetricsRegistry, name = 'memory', room = Infinity): FlowLogSink & { records: FlowLogRecord[]; closed: boolean } {
  const counts = sinkCounts(metrics, name);
  const s = {
    name, records: [] as FlowLogRecord[], closed: false,
    write(records: readonly FlowLogRecord[]) {
      const fit = Math.max(0, Math.min(records.length, room - s.records.length));
      s.records.push(...records.slice(0, fit));
      counts.written(fit);
      counts.dropped('queue_full', records.length - fit);
    },
    async [Symbol.asyncDispose]() {
      s.closed = true;
    },
  };
  return s;
}

async function values(metrics: MetricsRegistry, name: string): Promise<Record<string, number>> {
  const m = await metrics.registry.getSingleMetric(name)?.get();
  const out: Record<string, number> = {};
  for (const v of m?.values ?? []) out[Object.entries(v.labels).map(([k, x]) => `${k}=${x}`).join(',')] = v.value;
  return out;
}

const FLOWS_TOTAL = catalog.flowLogFlows.name;
const RECORDS_TOTAL = catalog.flowLogRecords.name;

function flows(): Flow[] {
  return [
    createFlow({ srcIp: '10.0.0.1', dstIp: '10.0.0.2', verdict: 'FORWARDED', proto: 6, srcPort: 40000, dstPort: 80, timeMs: 1700000000000, direction: 'EGRESS' }),
    createFlow({ srcIp: '10.0.0.1', dstIp: '10.0.0.3', verdict: 'DROPPED', dropReason: 'NETFILTER_DROP', proto: 17, srcPort: 5, dstPort: 53, timeMs: 1700000000500 }),
    createFlow({ srcIp: '10.0.0.9', dstIp: '10.0.0.2', verdict: 'FORWARDED', proto: 6, srcPort: 40001, dstPort: 443, timeMs: 1700000001000, nodeName: 'other' }),
  ];
}

test('records in the `hubble observe -o json` shape; allow/deny selection; every flow and record counted once', async () => {
  const metrics = createMetricsRegistry({ processMetrics: false });
  const a = memorySink(metrics, 'a');
  const b = memorySink(metrics, 'b', 1);
  const exp = createFlowExporter({
    name: 'static', selection: staticSelection([{ source_ip: ['10.0.0.1'] }], [{ verdict: ['DROPPED'] }]), sinks: [a, b], nodeName: 'node-a', protos, metrics, log,
  });
  exp.consume({ source: 'test', flows: flows() });
  assert.equal(a.records.length, 1);
  const r = a.records[0] as Record<string, unknown>;
  assert.deepEqual(Object.keys(r), ['flow', 'node_name', 'time']);
  assert.equal(r['node_name'], 'node-a');
  assert.equal(r['time'], '2023-11-14T22:13:20Z');
  const flow = r['flow'] as Record<string, unknown>;
  assert.equal(flow['time'], '2023-11-14T22:13:20Z');
  assert.deepEqual(flow['IP'], { source: '10.0.0.1', destination: '10.0.0.2', ipVersion: 'IPv4' });
  assert.equal(flow['traffic_direction'], 'EGRESS');
  // Flows: 1 selected, 2 not (one by the allow list, one by the deny list).
  assert.deepEqual(await values(metrics, FLOWS_TOTAL), { 'selected=true': 1, 'selected=false': 2 });
  exp.consume({ source: 'test', flows: flows() });
  // Records: a took both; b had room for one and dropped the other.
  assert.deepEqual(await values(metrics, RECORDS_TOTAL), { 'sink=a,result=written': 2, 'sink=b,result=written': 1, 'sink=b,result=dropped,reason=queue_full': 1 });
  await exp[Symbol.asyncDispose]();
  assert.ok(a.closed && b.closed);
  exp.consume({ source: 'test', flows: flows() });
  assert.equal(a.records.length, 2, 'nothing after disposal');
});

test('the node name of the flow wins over the exporter\'s; a field mask applies to the flow, not the envelope', async () => {
  const metrics = createMetricsRegistry({ processMetrics: false });
  const a = memorySink(metrics);
  const exp = createFlowExporter({
    name: 'static', selection: staticSelection([], []), fieldMask: protos.json.mask(['verdict', 'IP.destination']), sinks: [a], nodeName: 'node-a', protos, metrics, log,
  });
  exp.consume({ source: 'test', flows: flows() });
  assert.deepEqual(a.records.map((r) => r['flow']), [
    { verdict: 'FORWARDED', IP: { destination: '10.0.0.2' } }, { verdict: 'DROPPED', IP: { destination: '10.0.0.3' } }, { verdict: 'FORWARDED', IP: { destination: '10.0.0.2' } },
  ]);
  assert.deepEqual(a.records.map((r) => r['node_name']), ['node-a', 'node-a', 'other']);
  assert.equal(a.records[2]?.['time'], '2023-11-14T22:13:21Z');
  await exp[Symbol.asyncDispose]();
});

test('an inactive selection exports nothing; a change applies at once; a bad change keeps the last good filters', async () => {
  const metrics = createMetricsRegistry({ processMetrics: false });
  const a = memorySink(metrics);
  const sel = settableSelection({ active: false, allow: [], deny: [] });
  const exp = createFlowExporter({ name: 'cnl', selection: sel, sinks: [a], nodeName: 'n', protos, metrics, log });
  exp.consume({ source: 'test', flows: flows() });
  assert.equal(a.records.length, 0);
  sel.set({ active: true, allow: [{ destination_port: ['53'] }], deny: [] });
  exp.consume({ source: 'test', flows: flows() });
  assert.equal(a.records.length, 1);
  sel.set({ active: true, allow: [{ no_such_field: ['x'] }], deny: [] });
  exp.consume({ source: 'test', flows: flows() });
  assert.equal(a.records.length, 2, 'the port-53 filter is still in force');
  assert.deepEqual(await values(metrics, FLOWS_TOTAL), { 'selected=false': 7, 'selected=true': 2 });
  await exp[Symbol.asyncDispose]();
});

test('a sink that throws has its batch counted dropped (sink_error) and the other sinks still get it', async () => {
  const metrics = createMetricsRegistry({ processMetrics: false });
  const a = memorySink(metrics, 'a');
  const bad: FlowLogSink = { name: 'bad', write: () => { throw new Error('boom'); }, [Symbol.asyncDispose]: async () => { throw new Error('close boom'); } };
  const exp = createFlowExporter({ name: 'static', selection: staticSelection([], []), sinks: [bad, a], nodeName: 'n', protos, metrics, log });
  exp.consume({ source: 'test', flows: flows() });
  assert.equal(a.records.length, 3);
  assert.deepEqual(await values(metrics, RECORDS_TOTAL), { 'sink=bad,result=dropped,reason=sink_error': 3, 'sink=a,result=written': 3 });
  await exp[Symbol.asyncDispose]();
});
