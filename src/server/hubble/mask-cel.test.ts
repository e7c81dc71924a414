/**
 * GetFlows with Hubble 1.19's request fields, through a real gRPC client: field_mask (only the masked
 * fields arrive, filters still see the whole flow, bad paths refused, Hubble-only paths accepted) and
 * experimental.cel_expression (matches as cel-go would, refused with INVALID_ARGUMENT when invalid or
 * too costly), on the raw-write path and on grpc-js's writes.
 */
import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { fileURLToPath } from 'node:url';
import { createFlow, type Endpoint, type Flow } from '../../flow/index.js';
import { createLogger } from '../../log/index.js';
import { collectStream as collect } from '../../../test/fakes/hubble-probe.js';
import { createMetricsRegistry } from '../../metrics/index.js';
import { createFlowRing, loadHubbleProtos, startHubbleServer, type HubbleServer } from './index.js';

const PROTO_DIR = fileURLToPath(new URL('../../../../proto/hubble', import.meta.url));
const protos = loadHubbleProtos(PROTO_DIR);
const log = createLogger({ level: 'error', component: 'test' });
type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** The CLI 1.19's default mask (hubble/pkg/defaults FieldMask). */
const CLI_MASK = ['time', 'verdict', 'ethernet', 'IP', 'l4', 'source.identity', 'source.namespace', 'source.pod_name', 'destination.identity',
  'destination.namespace', 'destination.pod_name', 'Type', 'node_name', 'l7', 'event_type', 'source_service', 'destination_service', 'is_reply', 'Summary', 'ip_trace_id'];

const ep = (ns: string, pod: string, app: string): Endpoint => Object.freeze({
  namespace: ns, podName: pod, workloadKind: 'Deployment', workloadName: app, service: '', nodeName: 'node-a', zone: '', labels: Object.freeze({ app }),
});
const web = ep('shop', 'web-0', 'web');
const db = ep('shop', 'db-0', 'db');

function flows(): Flow[] {
  return [
    createFlow({ srcIp: '10.0.0.1', dstIp: '10.0.0.2', verdict: 'FORWARDED', proto: 6, srcPort: 40000, dstPort: 5432, tcpFlags: 2, direction: 'EGRESS', source: web, destination: db, timeMs: 1_700_000_000_000 }),
    createFlow({ srcIp: '10.0.0.1', dstIp: '10.0.0.9', verdict: 'DROPPED', dropReason: 'NETFILTER_DROP', proto: 17, srcPort: 40001, dstPort: 9999, direction: 'EGRESS', source: web, timeMs: 1_700_000_001_000 }),
    createFlow({ srcIp: '10.0.0.2', dstIp: '10.0.0.1', verdict: 'FORWARDED', proto: 6, srcPort: 5432, dstPort: 40000, tcpFlags: 18, direction: 'INGRESS', source: db, destination: web, isReply: true, timeMs: 1_700_000_002_000 }),
  ];
}

for (const rawWrites of [true, false]) {
  describe(`GetFlows field_mask and CEL (${rawWrites ? 'raw writes' : 'grpc-js writes'})`, () => {
    const ring = createFlowRing(100);
    let server: HubbleServer;
    let observer: Obj;
    const get = (req: Obj): Promise<{ msgs: Obj[]; err: grpc.ServiceError | undefined }> => collect(observer['GetFlows']({ number: 100, ...req }));
    const cel = (...exprs: string[]): Obj => ({ whitelist: [{ experimental: { cel_expression: exprs } }] });
    before(async () => {
      server = await startHubbleServer({
        protos, ring, listen: { host: '127.0.45.2', port: 0 }, nodeName: 'node-a', version: 't', log, metrics: createMetricsRegistry(),
        peers: { list: () => [], subscribe: () => ({ [Symbol.dispose]: () => undefined }) }, rawWrites,
      });
      observer = new protos.ObserverClient(`127.0.45.2:${server.port}`, grpc.credentials.createInsecure()) as unknown as Obj;
      ring.consume({ source: 'test', flows: flows() });
    });
    after(async () => {
      observer['close']();
      await server[Symbol.asyncDispose]();
    });

    it('the CLI 1.19 default mask: only its fields arrive (labels, workloads, direction dropped), the rest whole', async () => {
      const whole = await get({});
      const masked = await get({ field_mask: { paths: CLI_MASK } });
      assert.equal(masked.err, undefined);
      assert.equal(masked.msgs.length, 3);
      for (const [i, m] of masked.msgs.entries()) {
        const f = m['flow'] as Obj;
        const w = whole.msgs[i]!['flow'] as Obj;
        assert.deepEqual(Object.keys(f).sort(), Object.keys(w).filter((k) => ['time', 'verdict', 'IP', 'l4', 'source', 'destination', 'Type', 'node_name', 'l7', 'event_type', 'source_service', 'destination_service', 'is_reply', 'Summary'].includes(k)).sort());
        assert.equal(f['traffic_direction'], undefined);
        assert.deepEqual(f['source'], { namespace: w['source']['namespace'], pod_name: w['source']['pod_name'] });
        assert.deepEqual(f['l4'], w['l4']);
        assert.deepEqual(f['IP'], w['IP']);
        assert.equal(f['Summary'], w['Summary']);
        assert.ok(w['source']['labels'].length > 0 && w['traffic_direction'] !== undefined, 'the whole flow has what the mask drops');
      }
    });

    it('filters see the whole flow: a label filter with a mask that drops labels', async () => {
      const r = await get({ whitelist: [{ source_label: ['k8s:app=db'] }], field_mask: { paths: ['verdict'] } });
      assert.deepEqual(r.msgs.map((m) => m['flow']), [{ verdict: 'FORWARDED' }]);
    });

    it('a sub-field mask, a Hubble-only path (selects nothing), a path naming no field (INVALID_ARGUMENT)', async () => {
      const sub = await get({ field_mask: { paths: ['l4.TCP.destination_port', 'source.workloads'] }, number: 1, first: true });
      // (`protocol` is the oneof's name, added by the client's proto-loader.)
      assert.deepEqual(sub.msgs[0]!['flow'], { l4: { TCP: { destination_port: 5432 }, protocol: 'TCP' }, source: { workloads: [{ name: 'web', kind: 'Deployment' }] } });
      const only = await get({ field_mask: { paths: ['ethernet', 'trace_context.parent'] }, number: 1 });
      assert.equal(only.err, undefined);
      assert.deepEqual(only.msgs[0]!['flow'] ?? {}, {});
      const bad = await get({ field_mask: { paths: ['source.no_such'] } });
      assert.equal(bad.err?.code, grpc.status.INVALID_ARGUMENT);
      assert.match(bad.err?.details ?? '', /field_mask: source\.no_such/);
    });

    it('CEL: verdict enum, pods, ports, labels, time; OR within a filter; AND with other fields', async () => {
      const ports = async (req: Obj): Promise<number[]> => {
        const r = await get(req);
        assert.equal(r.err, undefined, r.err?.details);
        return r.msgs.map((m) => (m['flow']['l4']['TCP'] ?? m['flow']['l4']['UDP'])['source_port'] as number);
      };
      assert.deepEqual(await ports(cel('_flow.verdict == Verdict.DROPPED')), [40001]);
      assert.deepEqual(await ports(cel('_flow.verdict == flow.Verdict.FORWARDED && _flow.source.pod_name == "db-0"')), [5432]);
      assert.deepEqual(await ports(cel('_flow.l4.TCP.destination_port == 5432u')), [40000]);
      assert.deepEqual(await ports(cel('has(_flow.l4.UDP)', '_flow.is_reply == true')), [40001, 5432]);
      assert.deepEqual(await ports(cel('_flow.source.labels.exists(l, l == "k8s:app=web")')), [40000, 40001]);
      assert.deepEqual(await ports(cel('_flow.time > timestamp("2023-11-14T22:13:20.5Z")')), [40001, 5432]);
      assert.deepEqual(await ports(cel('_flow.Summary.matches("^drop reason: NETFILTER_")')), [40001]);
      assert.deepEqual(await ports({ whitelist: [{ experimental: { cel_expression: ['_flow.source.namespace == "shop"'] }, verdict: ['FORWARDED'] }] }), [40000, 5432]);
      assert.deepEqual(await ports({ blacklist: [{ experimental: { cel_expression: ['_flow.verdict == Verdict.DROPPED'] } }] }), [40000, 5432]);
    });

    it('CEL refused with INVALID_ARGUMENT: syntax, unknown field, Hubble-only field, not a bool, always an error, too costly', async () => {
      const refused = async (expr: string, why: RegExp): Promise<void> => {
        const r = await get(cel(expr));
        assert.equal(r.err?.code, grpc.status.INVALID_ARGUMENT, `${expr}: ${r.err?.details ?? 'accepted'}`);
        assert.match(r.err?.details ?? '', why, expr);
        assert.match(r.err?.details ?? '', /^whitelist\[0\]\.experimental\.cel_expression\[0\]/);
      };
      await refused('_flow.verdict ==', /invalid CEL expression/);
      await refused('_flow.no_such == 1', /flow\.Flow has no field no_such/);
      await refused('_flow.source.no_such == 1', /flow\.Endpoint has no field no_such/);
      await refused('_flow.ethernet.source == "aa"', /never carry flow\.Flow\.ethernet/);
      await refused('_flow.node_name', /must yield a bool/);
      await refused('_flow.node_name + 1 == "x"', /invalid CEL expression: .*overload/);
      await refused(`_flow.node_name == "${'x'.repeat(3000)}"`, /too costly/);
      await refused(`[${Array.from({ length: 300 }, () => '1').join(',')}].size() > 0`, /nodes, more than the limit .*too costly/);
      await refused('_flow.source.labels.exists(a, _flow.source.labels.exists(b, _flow.source.labels.exists(c, a == b && b == c)))', /nests 3 comprehensions.*too costly/);
    });
  });
}
