/**
 * GetFlows with the hubble CLI 1.19's default field mask (its text outputs: only the fields it
 * prints) beside whole flows, in one run, over the same 4 096 enriched flows (bench/hubble/flows.ts:
 * 200 pods with two labels and a workload, a third with a service, 10% kernel drops, TCP and UDP):
 * - `bytesPerFlow`: the GetFlowsResponse's gRPC frame (5-byte prefix included), whole vs masked;
 * - `encodeNsPerFlow`: making that frame (src/server/hubble/encode.ts), per flow, median of rounds:
 *   whole; `cliMask` the encoder writing the masked fields of the whole flow (the raw-write path);
 *   `cliMaskProjected` a projected copy (field-mask.ts) then encoded (grpc-js's path, the fallback);
 * - `celNsPerFlow`: `--cel-expression` filtering per flow (src/server/hubble/cel.ts) for a simple
 *   expression and for the costliest shape the limits accept (two nested comprehensions over the
 *   flow's labels), beside the classic `--verdict DROPPED` filter. Each evaluation encodes the flow
 *   and decodes it for @bufbuild/cel, then evaluates (caching the decoded message per flow object
 *   in a WeakMap was tried: 1 µs for a flow read again, but 20 µs for a first read, V8's weak
 *   tables costing more than the decode: dropped).
 * Prints one JSON line. BENCH_ROUNDS, BENCH_ROUND_MS tune the run.
 */
import { fileURLToPath } from 'node:url';
import { createEnricher } from '../../src/enricher/index.js';
import type { Flow } from '../../src/flow/index.js';
import { compileFlowFilters, toHubbleFlow, type HubbleObject } from '../../src/flow/hubble/index.js';
import { loadHubbleProtos } from '../../src/server/hubble/index.js';
import { carriedPaths, createProjection } from '../../src/server/hubble/field-mask.js';
import { batch, lookup } from './flows.js';

const envNum = (k: string, d: number): number => (process.env[k] ? Number(process.env[k]) : d);
const ROUNDS = envNum('BENCH_ROUNDS', 5);
const ROUND_MS = envNum('BENCH_ROUND_MS', 300);

/** hubble 1.19's default mask (hubble/pkg/defaults FieldMask). */
const CLI_MASK = ['time', 'verdict', 'ethernet', 'IP', 'l4', 'source.identity', 'source.namespace', 'source.pod_name', 'destination.identity',
  'destination.namespace', 'destination.pod_name', 'Type', 'node_name', 'l7', 'event_type', 'source_service', 'destination_service', 'is_reply', 'Summary', 'ip_trace_id'];

const protos = loadHubbleProtos(fileURLToPath(new URL('../../../proto/hubble', import.meta.url)));
const enriched: Flow[] = [];
const enricher = createEnricher(lookup, { consume: (b) => void enriched.push(...b.flows) });
for (let b = 0; b < 16; b++) enricher.consume({ source: 'bench', flows: batch(256, b * 256) });
const flows: HubbleObject[] = enriched.map((f) => toHubbleFlow(f, 'node-0'));
const time = { seconds: 1_700_000_000, nanos: 0 };

/** ns per flow of `each` over every flow, the median of ROUNDS rounds of about ROUND_MS each. */
function nsPerFlow(each: (f: HubbleObject) => unknown): number {
  const medians: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    let n = 0;
    const t0 = process.hrtime.bigint();
    const end = performance.now() + ROUND_MS;
    while (performance.now() < end) {
      for (const f of flows) each(f);
      n += flows.length;
    }
    medians.push(Number(process.hrtime.bigint() - t0) / n);
  }
  return Number(medians.sort((a, b) => a - b)[Math.floor(ROUNDS / 2)]!.toFixed(1));
}

const whole = (f: HubbleObject): Buffer => protos.flowsFrame({ flow: f, node_name: 'node-0', time });
/** The raw-write path's: the encoder writes the masked fields of the whole flow (one mask per request, as GetFlows compiles it). */
const newMasked = (): ((f: HubbleObject) => Buffer) => {
  const flowMask = protos.fieldMask(carriedPaths(CLI_MASK)) ?? new Map();
  const mask = new Map([['flow', flowMask], ['node_name', undefined], ['time', undefined]]);
  return (f) => protos.flowsFrame({ flow: f, node_name: 'node-0', time }, mask);
};
/** grpc-js's path (and the encoder's fallback): the projection copied, then encoded. */
const newProjected = (): ((f: HubbleObject) => Buffer) => {
  const project = createProjection(protos.fieldMask(carriedPaths(CLI_MASK)) ?? new Map());
  return (f) => protos.flowsFrame({ flow: project(f), node_name: 'node-0', time });
};
const bytes = (enc: (f: HubbleObject) => Buffer): number => Number((flows.reduce((n, f) => n + enc(f).length, 0) / flows.length).toFixed(1));

const celPred = (expr: string): ((f: HubbleObject) => boolean) => {
  const m = compileFlowFilters([{ experimental: { cel_expression: [expr] } }], [], protos.enums, { cel: protos.cel });
  return (f) => m.match(f);
};
const classic = compileFlowFilters([{ verdict: ['DROPPED'] }], [], protos.enums);
const simple = celPred('_flow.verdict == Verdict.DROPPED');
const nested = celPred('_flow.source.labels.exists(a, _flow.destination.labels.exists(b, a == b))');
const matched = flows.filter((f) => simple(f)).length;
if (matched !== flows.filter((f) => classic.match(f)).length) throw new Error('the CEL filter and --verdict DROPPED disagree');

process.stdout.write(JSON.stringify({
  bench: 'hubble-field-mask',
  fixture: `${flows.length} enriched flows (bench/hubble/flows.ts)`, mask: 'hubble 1.19 default (text outputs)',
  bytesPerFlow: { whole: bytes(whole), cliMask: bytes(newMasked()) },
  encodeNsPerFlow: { whole: nsPerFlow(whole), cliMask: nsPerFlow(newMasked()), cliMaskProjected: nsPerFlow(newProjected()) },
  celNsPerFlow: { verdictFlag: nsPerFlow((f) => classic.match(f)), celVerdict: nsPerFlow(simple), celNestedLabels: nsPerFlow(nested) },
  conditions: { node: process.version, rounds: ROUNDS, roundMs: ROUND_MS },
}) + '\n');
