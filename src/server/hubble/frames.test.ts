import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { fileURLToPath } from 'node:url';
import { createFlow, type Flow } from '../../flow/index.js';
import { createLogger } from '../../log/index.js';
import { createMetricsRegistry } from '../../metrics/index.js';
import { probeRawStream } from '../../../test/fakes/hubble-probe.js';
import { createFlowRing, loadHubbleProtos, startHubbleServer, timestamp, toHubbleFlow, type HubbleServer } from './index.js';

const PROTO_DIR = fileURLToPath(new URL('../../../../proto/hubble', import.meta.url));
const protos = loadHubbleProtos(PROTO_DIR);
const log = createLogger({ level: 'error', component: 'test' });
type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const flowAt = (i: number, extra: Partial<Flow> = {}): Flow => createFlow({
  srcIp: `10.0.0.${i % 250}`, dstIp: '10.0.1.1', verdict: i % 7 === 0 ? 'DROPPED' : 'FORWARDED', dropReason: i % 7 === 0 ? 'NETFILTER_DROP' : '',
  proto: 6, srcPort: i % 65536, dstPort: 80, tcpFlags: 16, timeMs: 1_700_000_000_000 + i, ...extra,
});

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The seq each flow message carries (its source port, and its time for ports that wrap). */
const seqOf = (m: Obj): number => Number(m['flow']['time']['seconds']) * 1000 + Math.round(Number(m['flow']['time']['nanos'] ?? 0) / 1e6) - 1_700_000_000_000;

describe('encode.ts writes GetFlowsResponse frames protobufjs decodes as its own', () => {
  const method = protos.observer['GetFlows'] as grpc.MethodDefinition<Obj, Obj>;
  const ep = { namespace: 'ns-1', podName: 'web-1', workloadKind: 'Deployment', workloadName: 'web', service: 'svc', nodeName: 'n1', zone: '', labels: { app: 'web', ['a'.repeat(150)]: 'long label: a two-byte length' } };
  const cases: Flow[] = [
    flowAt(1),
    flowAt(7),
    flowAt(3, { proto: 17, ipVersion: 6, srcIp: 'fd00::1', dstIp: 'fd00::2', direction: 'INGRESS', observationPoint: 'TO_ENDPOINT', isReply: true, source: ep, destination: ep }),
    flowAt(4, { proto: 1, isReply: false, source: ep }),
    flowAt(5, { proto: 58, tcpFlags: 0, timeMs: 1_700_000_000_123.456 }),
    flowAt(6, { verdict: 'DNS', proto: 17, dns: { query: 'example.com', qtype: 'A', rcode: 'NXDOMAIN', isResponse: true, answers: ['1.2.3.4', 'x.example.'], numAnswers: 2 } }),
    flowAt(8, { verdict: 'DNS', proto: 17, dns: { query: 'q.test', qtype: 'AAAA', rcode: 'RCODE17', isResponse: false, answers: [], numAnswers: 0 } }),
    flowAt(9, { verdict: 'RETRANSMISSION', tcpFlags: 0x1ff, dropReason: 'ü'.repeat(100) }),
    // Summaries (`drop reason: ` + 114 or 115 chars) of 127 and 128 ASCII chars, the last with a one-byte length,
    // the other two; and a short one whose ASCII start is copied before a two-byte char sends it to Buffer's writer.
    flowAt(10, { verdict: 'DROPPED', dropReason: 'x'.repeat(114) }),
    flowAt(11, { verdict: 'DROPPED', dropReason: 'x'.repeat(115) }),
    flowAt(12, { verdict: 'DROPPED', dropReason: 'NETFILTER_DROP-é-'.repeat(3) }),
  ];
  it('every kind of flow we map decodes to the same message', () => {
    for (const f of cases) {
      const msg = { flow: toHubbleFlow(f, 'node-a'), node_name: 'node-a', time: timestamp(f.timeMs) };
      const frame = protos.flowsFrame(msg);
      assert.equal(frame[0], 0);
      assert.equal(frame.readUInt32BE(1), frame.length - 5);
      const ours = method.responseDeserialize(frame.subarray(5));
      const theirs = method.responseDeserialize(Buffer.from(method.responseSerialize(msg)));
      assert.deepEqual(ours, theirs);
    }
  });
  it('an endpoint\'s Hubble objects are made once, frozen, and their bytes written once and reused', () => {
    const a = toHubbleFlow(flowAt(20, { source: ep, destination: ep }), 'node-a');
    const b = toHubbleFlow(flowAt(21, { source: ep }), 'node-a');
    assert.equal(a['source'], b['source']);
    assert.equal(a['source'], a['destination']);
    assert.ok(Object.isFrozen(a['source']) && Object.isFrozen((a['source'] as Obj)['labels']) && Object.isFrozen(a['source_service']));
    assert.throws(() => {
      ((a['source'] as Obj)['labels'] as string[]).push('k8s:x=y');
    }, TypeError);
    // The same endpoint among other fields, three times: each frame decodes as protobufjs's.
    for (const f of [flowAt(22, { source: ep, destination: ep }), flowAt(23, { destination: ep }), flowAt(24, { source: ep, verdict: 'DROPPED' })]) {
      const msg = { flow: toHubbleFlow(f, 'node-a'), node_name: 'node-a', time: timestamp(f.timeMs) };
      assert.deepEqual(method.responseDeserialize(protos.flowsFrame(msg).subarray(5)), method.responseDeserialize(Buffer.from(method.responseSerialize(msg))));
    }
  });
  it('a lost event, and what it cannot write throws (the caller falls back to protobufjs)', () => {
    const lost = { lost_events: { source: 'HUBBLE_RING_BUFFER', num_events_lost: 300 }, node_name: 'n', time: { seconds: 1_700_000_000, nanos: 5 } };
    assert.deepEqual(method.responseDeserialize(protos.flowsFrame(lost).subarray(5)), method.responseDeserialize(Buffer.from(method.responseSerialize(lost))));
    assert.throws(() => protos.flowsFrame({ flow: { verdict: 'NO_SUCH_VERDICT' } }), /no enum value/);
  });
});

/** The GetFlows streams a server counts in `registry`. */
const streams = async (registry: ReturnType<typeof createMetricsRegistry>): Promise<number> => {
  const m = /controlplane_networkobservability_hubble_clients\{rpc="GetFlows"\} (\d+)/.exec((await registry.expose()).body);
  return Number(m?.[1] ?? 0);
};
/** Waits until the server holds `n` GetFlows streams (a follower's cursor is set when it is counted), at most 10 s. */
const holding = async (registry: ReturnType<typeof createMetricsRegistry>, n: number): Promise<void> => {
  for (let t = 0; t < 400 && (await streams(registry)) !== n; t++) await sleep(25);
  assert.equal(await streams(registry), n, `${n} GetFlows streams on the server`);
};

describe('hubble GetFlows below grpc-js (frames.ts)', () => {
  const ring = createFlowRing(50_000);
  const metrics = createMetricsRegistry();
  let server: HubbleServer;
  let observer: Obj;
  let written = 0;
  const write = (n: number, extra: Partial<Flow> = {}): void => {
    for (let b = 0; b < n; b += 256) {
      ring.consume({ source: 'test', flows: Array.from({ length: Math.min(256, n - b) }, (_, i) => flowAt(written + b + i, extra)) });
    }
    written += n;
  };
  const clients = (): Promise<number> => streams(metrics);
  const following = (n: number): Promise<void> => holding(metrics, n);
  before(async () => {
    server = await startHubbleServer({
      protos, ring, listen: { host: '127.0.45.2', port: 0 }, nodeName: 'node-a', version: 'test', log, metrics,
      peers: { list: () => [], subscribe: () => ({ [Symbol.dispose]: () => undefined }) },
    });
    observer = new protos.ObserverClient(`127.0.45.2:${server.port}`, grpc.credentials.createInsecure()) as unknown as Obj;
  });
  after(async () => {
    observer['close']();
    await server[Symbol.asyncDispose]();
  });

  it('the server reaches the HTTP/2 stream under a grpc-js call (else it would fall back to grpc-js writes)', async () => {
    const { found } = await probeRawStream(protos, '127.0.45.2', grpc.ServerCredentials.createInsecure(), grpc.credentials.createInsecure());
    assert.ok(found !== undefined, 'rawStreamOf found no HTTP/2 stream: grpc-js moved it');
    assert.equal(typeof (found as { sendTrailers?: unknown }).sendTrailers, 'function');
  });

  it('a follower gets every flow in order, decoded by a grpc-js client, the history before it', async () => {
    write(10);
    await following(0);
    const call = observer['GetFlows']({ follow: true, number: 3 });
    const got: Obj[] = [];
    const total = 3 + 20_000;
    const done = new Promise<void>((res, rej) => {
      call.on('data', (m: Obj) => {
        got.push(m);
        if (got.length === total) res();
      });
      call.on('error', (e: Error) => rej(e));
      setTimeout(() => rej(new Error(`${got.length} of ${total} messages after 60 s`)), 60_000).unref();
    });
    // written once the server has the follower (a fixed 200 ms was not always enough under a full make test's load)
    await following(1);
    const from = written;
    write(20_000);
    await done;
    call.cancel();
    assert.ok(got.every((m) => m['flow'] && !m['lost_events']), 'flows only, no LostEvent');
    assert.deepEqual(got.slice(0, 3).map(seqOf), [7, 8, 9], 'the last 3 of the history first');
    const seqs = got.slice(3).map(seqOf);
    assert.equal(seqs.length, 20_000);
    assert.ok(seqs.every((s, i) => s === from + i), `in order from ${from}, first off: ${seqs.find((s, i) => s !== from + i)}`);
    const m = got[3] as Obj;
    assert.equal(m['node_name'], 'node-a');
    assert.deepEqual(m['time'], m['flow']['time']);
    assert.equal(m['flow']['l4']['TCP']['source_port'], from % 65536);
  });

  it('filters still apply to followers and to history', async () => {
    await following(0);
    const call = observer['GetFlows']({ follow: true, whitelist: [{ verdict: ['DROPPED'] }], blacklist: [{ source_port: ['14'] }] });
    const got: Obj[] = [];
    call.on('data', (m: Obj) => got.push(m));
    call.on('error', () => undefined);
    await following(1);
    const from = written;
    write(700);
    const want = Array.from({ length: 700 }, (_, i) => from + i).filter((s) => s % 7 === 0 && s % 65536 !== 14);
    for (let t = 0; t < 100 && got.length < want.length; t++) await sleep(50);
    await sleep(100);
    call.cancel();
    assert.deepEqual(got.map(seqOf), want);
    assert.ok(got.every((m) => m['flow']['verdict'] === 'DROPPED'));
    const hist = await new Promise<Obj[]>((res, rej) => {
      const out: Obj[] = [];
      const h = observer['GetFlows']({ number: 5, whitelist: [{ verdict: ['DROPPED'] }] });
      h.on('data', (m: Obj) => out.push(m));
      h.on('end', () => res(out));
      h.on('error', rej);
    });
    assert.deepEqual(hist.map(seqOf), want.slice(-5));
  });

  it('a follower whose client stops reading gets one LostEvent, then the flows still held, in order', async () => {
    const small = createFlowRing(1000);
    const smallMetrics = createMetricsRegistry();
    const s = await startHubbleServer({
      protos, ring: small, listen: { host: '127.0.45.2', port: 0 }, nodeName: 'node-a', version: 'test', log, metrics: smallMetrics,
      peers: { list: () => [], subscribe: () => ({ [Symbol.dispose]: () => undefined }) },
    });
    const c = new protos.ObserverClient(`127.0.45.2:${s.port}`, grpc.credentials.createInsecure()) as unknown as Obj;
    try {
      const call = c['GetFlows']({ follow: true });
      call.on('error', () => undefined);
      // The flows are written once the server holds the follower (under load a fixed sleep was not enough:
      // CI's run wrote them before the stream opened, so the follower saw none of them and no loss).
      await holding(smallMetrics, 1);
      call.pause();
      // 60 000 flows of ~2 KB: far more than HTTP/2's window and the socket buffers, 60x the ring.
      const big = 'x'.repeat(2000);
      const t0 = performance.now();
      for (let b = 0; b < 60; b++) small.consume({ source: 'test', flows: Array.from({ length: 1000 }, (_, i) => flowAt(b * 1000 + i, { verdict: 'DROPPED', dropReason: big })) });
      const writeMs = performance.now() - t0;
      await sleep(300);
      const msgs: Obj[] = [];
      call.on('data', (m: Obj) => msgs.push(m));
      call.resume();
      for (let t = 0; t < 100 && !msgs.some((m) => m['flow'] && seqOf(m) === 59_999); t++) await sleep(50);
      call.cancel();
      const lostAt = msgs.findIndex((m) => m['lost_events']);
      assert.ok(lostAt >= 0, 'a LostEvent came');
      const lost = msgs[lostAt] as Obj;
      assert.equal(lost['lost_events']['source'], 'HUBBLE_RING_BUFFER');
      const seqs = msgs.filter((m) => m['flow']).map(seqOf);
      // Every flow is either received or counted lost, and what is received is in order.
      const lostTotal = msgs.filter((m) => m['lost_events']).reduce((a, m) => a + Number(m['lost_events']['num_events_lost']), 0);
      assert.equal(seqs.length + lostTotal, 60_000);
      assert.ok(seqs.every((x, i) => i === 0 || x > (seqs[i - 1] as number)), 'in order');
      assert.equal(seqs.at(-1), 59_999);
      assert.ok(writeMs < 2000, `the writer never waits for the client: ${writeMs} ms`);
    } finally {
      c['close']();
      await s[Symbol.asyncDispose]();
    }
  });

  it('cancel and deadline end the follower on the server', async () => {
    assert.equal(await clients(), 0);
    const call = observer['GetFlows']({ follow: true });
    call.on('data', () => undefined);
    call.on('error', () => undefined);
    await following(1);
    call.cancel();
    for (let t = 0; t < 40 && (await clients()) > 0; t++) await sleep(50);
    assert.equal(await clients(), 0, 'cancel ends the server side');

    // The flows are written once the server has the follower (not after a fixed sleep: under load the
    // stream can take longer than one to open), well before the deadline.
    const timed = observer['GetFlows']({ follow: true }, { deadline: Date.now() + 3000 });
    const got: Obj[] = [];
    const status = new Promise<grpc.ServiceError>((res) => timed.on('error', res));
    timed.on('data', (m: Obj) => got.push(m));
    for (let t = 0; t < 50 && (await clients()) < 1; t++) await sleep(50);
    write(100);
    const err = await status;
    assert.equal(err.code, grpc.status.DEADLINE_EXCEEDED);
    assert.equal(got.length, 100, 'the flows before the deadline came');
    for (let t = 0; t < 40 && (await clients()) > 0; t++) await sleep(50);
    assert.equal(await clients(), 0, 'the deadline ends the server side');
  });

  it('a follow stream ends with UNAVAILABLE and its trailers when the server stops (as Cilium\'s agent: Relay follows the peer again)', async () => {
    const own = createMetricsRegistry();
    const s = await startHubbleServer({
      protos, ring, listen: { host: '127.0.45.2', port: 0 }, nodeName: 'node-a', version: 'test', log, metrics: own,
      peers: { list: () => [], subscribe: () => ({ [Symbol.dispose]: () => undefined }) },
    });
    const c = new protos.ObserverClient(`127.0.45.2:${s.port}`, grpc.credentials.createInsecure()) as unknown as Obj;
    const call = c['GetFlows']({ follow: true });
    const got: Obj[] = [];
    call.on('data', (m: Obj) => got.push(m));
    const ended = new Promise<{ code: number }>((res) => {
      call.on('status', res);
      call.on('error', () => undefined);
    });
    await holding(own, 1);
    write(50);
    for (let t = 0; t < 40 && got.length < 50; t++) await sleep(50);
    await s[Symbol.asyncDispose]();
    const st = await ended;
    c['close']();
    assert.equal(got.length, 50);
    assert.equal(st.code, grpc.status.UNAVAILABLE);
  });
});
