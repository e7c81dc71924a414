import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { fileURLToPath } from 'node:url';
import { createFlow, type Flow } from '../../flow/index.js';
import { createLogger } from '../../log/index.js';
import { collectStream as collect } from '../../../test/fakes/hubble-probe.js';
import { metric } from '../../../test/ebpf/netns.js';
import { createMetricsRegistry, type MetricsRegistry } from '../../metrics/index.js';
import { createFlowRing, loadHubbleProtos, startHubbleServer, type HubbleServer, type PeerChange, type HubblePeer } from './index.js';

const PROTO_DIR = fileURLToPath(new URL('../../../../proto/hubble', import.meta.url));
const protos = loadHubbleProtos(PROTO_DIR);
const log = createLogger({ level: 'error', component: 'test' });
type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

function flowAt(i: number, extra: Partial<Flow> = {}): Flow {
  return createFlow({ srcIp: `10.0.0.${i % 250}`, dstIp: '10.0.1.1', verdict: 'FORWARDED', proto: 6, srcPort: 1000 + i, dstPort: 80, tcpFlags: 2, timeMs: 1_700_000_000_000 + i * 1000, ...extra });
}

/** Until the server counts exactly `n` open streams of `rpc` (a follower's cursor is set, a Notify subscribed, when it is counted). */
async function streams(metrics: MetricsRegistry, rpc: string, n: number): Promise<void> {
  for (const end = Date.now() + 10_000; metric((await metrics.expose()).body, 'controlplane_networkobservability_hubble_clients', { rpc }) !== n;) {
    if (Date.now() > end) throw new Error(`the server never counted ${n} ${rpc} stream(s)`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('hubble gRPC server', () => {
  const ring = createFlowRing(100);
  const metrics = createMetricsRegistry();
  const peerSubs = new Set<(t: PeerChange, p: HubblePeer) => void>();
  let server: HubbleServer;
  let observer: Obj;
  let peer: Obj;
  before(async () => {
    server = await startHubbleServer({
      protos, ring, listen: { host: '127.0.45.1', port: 0 }, nodeName: 'node-a', version: '0.1.0+retina-ts', log, metrics,
      peers: {
        list: () => [{ name: 'node-a', address: '10.1.0.1:4244' }, { name: 'node-b', address: '10.1.0.2:4244' }],
        subscribe: (cb) => {
          peerSubs.add(cb);
          return { [Symbol.dispose]: () => peerSubs.delete(cb) };
        },
      },
    });
    observer = new protos.ObserverClient(`127.0.45.1:${server.port}`, grpc.credentials.createInsecure()) as unknown as Obj;
    peer = new protos.PeerClient(`127.0.45.1:${server.port}`, grpc.credentials.createInsecure()) as unknown as Obj;
    ring.consume({ source: 'test', flows: Array.from({ length: 10 }, (_, i) => flowAt(i)) });
  });
  after(async () => {
    observer['close']();
    peer['close']();
    await server[Symbol.asyncDispose]();
  });

  /** A follow started once the earlier tests' streams are closed, resolved when the server counts it. */
  async function follow(): Promise<Obj> {
    await streams(metrics, 'GetFlows', 0);
    const call = observer['GetFlows']({ follow: true });
    call.on('error', () => undefined);
    await streams(metrics, 'GetFlows', 1);
    return call;
  }

  it('ServerStatus counts the ring', async () => {
    const st = await new Promise<Obj>((res, rej) => observer['ServerStatus']({}, (e: Error | null, r: Obj) => (e ? rej(e) : res(r))));
    assert.equal(st['num_flows'], 10);
    assert.equal(st['max_flows'], 100);
    assert.equal(st['seen_flows'], 10);
    assert.equal(st['version'], '0.1.0+retina-ts');
    assert.ok(st['uptime_ns'] > 0);
    assert.equal(st['flows_rate'] ?? 0, 0, 'the test flows are from 2023: none in the last minute');
  });

  it('number gives the last N, first the first N, since/until bound by time', async () => {
    const last = await collect(observer['GetFlows']({ number: 3 }));
    assert.deepEqual(last.msgs.map((m) => m['flow']['l4']['TCP']['source_port']), [1007, 1008, 1009]);
    assert.equal(last.msgs[0]?.['node_name'], 'node-a');
    assert.deepEqual(last.msgs[0]?.['time'], { seconds: 1_700_000_007, nanos: 0 });
    const first = await collect(observer['GetFlows']({ number: 2, first: true }));
    assert.deepEqual(first.msgs.map((m) => m['flow']['l4']['TCP']['source_port']), [1000, 1001]);
    const all = await collect(observer['GetFlows']({ number: '18446744073709551615' })); // hubble observe --all
    assert.equal(all.msgs.length, 10);
    const window = await collect(observer['GetFlows']({ since: { seconds: 1_700_000_002 }, until: { seconds: 1_700_000_004 } }));
    assert.deepEqual(window.msgs.map((m) => m['flow']['l4']['TCP']['source_port']), [1002, 1003, 1004]);
  });

  it('follow sends new flows as they are written', async () => {
    const call = await follow();
    const got: Obj[] = [];
    const three = new Promise<void>((res) => call.on('data', (m: Obj) => {
      got.push(m);
      if (got.length === 3) res();
    }));
    ring.consume({ source: 'test', flows: [flowAt(50), flowAt(51), flowAt(52, { verdict: 'DROPPED', dropReason: 'NETFILTER_DROP' })] });
    await three;
    call.cancel();
    assert.deepEqual(got.map((m) => m['flow']['l4']['TCP']['source_port']), [1050, 1051, 1052]);
    assert.equal(got[2]?.['flow']['verdict'], 'DROPPED');
    assert.equal(got[2]?.['flow']['Summary'], 'drop reason: NETFILTER_DROP');
  });

  it('a follower that stops reading gets a LostEvent, and the writer never waits', async () => {
    const call = await follow();
    call.pause();
    const big = 'x'.repeat(2000);
    // Far more than the HTTP/2 window (64 KiB) and 30x the ring: each write returns at once.
    const t0 = performance.now();
    for (let b = 0; b < 30; b++) ring.consume({ source: 'test', flows: Array.from({ length: 100 }, (_, i) => flowAt(b * 100 + i, { dropReason: big, verdict: 'DROPPED' })) });
    const writeMs = performance.now() - t0;
    await new Promise((r) => setTimeout(r, 300));
    const msgs: Obj[] = [];
    const lost = new Promise<Obj>((res) => call.on('data', (m: Obj) => {
      msgs.push(m);
      if (m['lost_events']) res(m);
    }));
    call.resume();
    const m = await lost;
    call.cancel();
    assert.equal(m['lost_events']['source'], 'HUBBLE_RING_BUFFER');
    assert.ok(m['lost_events']['num_events_lost'] > 0);
    assert.ok(writeMs < 1000, `writes took ${writeMs} ms`);
    const text = (await metrics.expose()).body;
    assert.match(text, /controlplane_networkobservability_hubble_flows_lost_total [1-9]/);
  });

  it('the RPCs we do not serve answer UNIMPLEMENTED', async () => {
    const ev = await collect(observer['GetAgentEvents']({}));
    assert.equal(ev.err?.code, grpc.status.UNIMPLEMENTED);
  });

  it('GetNamespaces lists the namespaces of the flows held (no tracker given), sorted, in cluster "default"', async () => {
    const ep = (namespace: string) => ({ namespace, podName: 'p', workloadKind: '', workloadName: '', service: '', nodeName: '', zone: '', labels: {} });
    ring.consume({ source: 'test', flows: [flowAt(60, { source: ep('zeta'), destination: ep('alpha') }), flowAt(61, { source: ep(''), destination: ep('zeta') })] });
    const r = await new Promise<Obj>((res, rej) => observer['GetNamespaces']({}, (e: Error | null, x: Obj) => (e ? rej(e) : res(x))));
    assert.deepEqual(r['namespaces'], [{ cluster: 'default', namespace: 'alpha' }, { cluster: 'default', namespace: 'zeta' }]);
  });

  for (const [what, req, limit] of [
    ['too many filters', { whitelist: Array.from({ length: 40 }, () => ({ verdict: ['DROPPED'] })), blacklist: Array.from({ length: 25 }, () => ({ verdict: ['FORWARDED'] })) }, 'maxFilters'],
    ['too many values', { whitelist: [{ source_pod: Array.from({ length: 1025 }, (_, i) => `ns/p${i}`) }] }, 'maxValues'],
    ['too many regexes', { whitelist: [{ http_path: Array.from({ length: 20 }, () => '/a') }, { dns_query: Array.from({ length: 13 }, () => 'x') }] }, 'maxRegexes'],
    ['too long regexes', { blacklist: [{ http_url: ['a'.repeat(2049)] }] }, 'maxRegexBytes'],
    ['too many IPs and CIDRs', { whitelist: [{ source_ip: Array.from({ length: 200 }, (_, i) => `10.0.0.${i}`) }, { destination_ip: Array.from({ length: 57 }, (_, i) => `10.${i}.0.0/16`) }] }, 'maxAddresses'],
  ] as const) {
    it(`GetFlows with ${what} answers INVALID_ARGUMENT naming ${limit}`, async () => {
      const r = await collect(observer['GetFlows'](req));
      assert.equal(r.err?.code, grpc.status.INVALID_ARGUMENT);
      assert.match(r.err?.details ?? '', new RegExp(`limit of \\d+ \\(${limit}\\)`));
      assert.equal(r.msgs.length, 0);
    });
  }

  it('GetFlows just within every limit is served', async () => {
    const req = {
      whitelist: [{ source_ip: Array.from({ length: 256 }, (_, i) => `10.9.${i}.0/24`) }, { http_path: Array.from({ length: 32 }, () => 'a'.repeat(64)) }],
      blacklist: Array.from({ length: 62 }, () => ({ verdict: ['ERROR'] })),
    };
    const r = await collect(observer['GetFlows']({ ...req, number: 1 }));
    assert.equal(r.err, undefined);
  });

  it('gRPC health answers SERVING (hubble status asks it first)', async () => {
    const health = new protos.HealthClient(`127.0.45.1:${server.port}`, grpc.credentials.createInsecure()) as unknown as Obj;
    try {
      const r = await new Promise<Obj>((res, rej) => health['Check']({ service: 'hubble.server.Observer' }, (e: Error | null, x: Obj) => (e ? rej(e) : res(x))));
      assert.equal(r['status'], 'SERVING');
      const bad = await new Promise<grpc.ServiceError>((res) => health['Check']({ service: 'nope' }, (e: grpc.ServiceError) => res(e)));
      assert.equal(bad.code, grpc.status.NOT_FOUND);
    } finally {
      health['close']();
    }
  });

  it('GetNodes lists this node', async () => {
    const r = await new Promise<Obj>((res, rej) => observer['GetNodes']({}, (e: Error | null, x: Obj) => (e ? rej(e) : res(x))));
    assert.equal(r['nodes'].length, 1);
    assert.equal(r['nodes'][0]['name'], 'node-a');
    assert.equal(r['nodes'][0]['state'], 'NODE_CONNECTED');
    assert.equal(r['nodes'][0]['address'], '10.1.0.1:4244');
  });

  it('Peer Notify lists the peers, then their changes', async () => {
    const call = peer['Notify']({});
    const got: Obj[] = [];
    let listed: () => void = () => undefined;
    const two = new Promise<void>((res) => (listed = res));
    const three = new Promise<void>((res) => call.on('data', (m: Obj) => {
      got.push(m);
      if (got.length === 2) listed();
      if (got.length === 3) res();
    }));
    call.on('error', () => undefined);
    // The server subscribes in the same turn as it writes the listing: once both peers arrived, a change reaches
    // the stream (a fixed 100 ms wait was too short on a loaded machine, and the change then went nowhere).
    await two;
    assert.equal(peerSubs.size, 1, 'subscribed once listed');
    for (const cb of peerSubs) cb('PEER_DELETED', { name: 'node-b', address: '10.1.0.2:4244' });
    await three;
    call.cancel();
    assert.deepEqual(got, [
      { name: 'node-a', address: '10.1.0.1:4244', type: 'PEER_ADDED' },
      { name: 'node-b', address: '10.1.0.2:4244', type: 'PEER_ADDED' },
      { name: 'node-b', address: '10.1.0.2:4244', type: 'PEER_DELETED' },
    ]);
  });

  it('the wire carries Hubble field numbers', () => {
    const method = protos.observer['GetFlows'] as grpc.MethodDefinition<Obj, Obj>;
    const bytes = method.responseSerialize({ flow: { verdict: 'DROPPED', node_name: 'n', IP: { source: '1.2.3.4' }, Summary: 's' }, node_name: 'n', time: { seconds: 5 } });
    const tags = (buf: Uint8Array): Map<number, Uint8Array | number> => {
      let pos = 0;
      const varint = (): number => {
        let v = 0;
        for (let shift = 0; ; shift += 7) {
          const b = buf[pos++] as number;
          v += (b & 0x7f) * 2 ** shift;
          if (b < 0x80) return v;
        }
      };
      const out = new Map<number, Uint8Array | number>();
      while (pos < buf.length) {
        const key = varint();
        if (key % 8 === 2) {
          const len = varint();
          out.set(Math.floor(key / 8), buf.subarray(pos, pos + len));
          pos += len;
        } else if (key % 8 === 0) out.set(Math.floor(key / 8), varint());
        else throw new Error(`wire type ${key % 8}`);
      }
      return out;
    };
    const top = tags(bytes);
    assert.deepEqual([...top.keys()].sort((a, b) => a - b), [1, 1000, 1001]);
    const flow = tags(top.get(1) as Uint8Array);
    assert.equal(flow.get(2), 2); // verdict DROPPED = 2
    assert.equal(Buffer.from(flow.get(11) as Uint8Array).toString(), 'n'); // node_name = 11
    assert.equal(Buffer.from(flow.get(100000) as Uint8Array).toString(), 's'); // Summary = 100000
    assert.equal(Buffer.from(tags(flow.get(5) as Uint8Array).get(1) as Uint8Array).toString(), '1.2.3.4'); // IP.source
  });
});

describe('hubble gRPC server stopping', () => {
  it('ends a follower and a Notify stream with UNAVAILABLE, both raw and grpc-js writes (Hubble Relay follows such a peer again once it answers)', async () => {
    for (const rawWrites of [true, false]) {
      const ring = createFlowRing(16);
      const metrics = createMetricsRegistry({ processMetrics: false });
      const server = await startHubbleServer({
        protos, ring, listen: { host: '127.0.45.1', port: 0 }, nodeName: 'node-s', version: 'test', log, rawWrites, metrics,
        peers: { list: () => [{ name: 'node-s', address: '127.0.45.1:1' }], subscribe: () => ({ [Symbol.dispose]: () => undefined }) },
      });
      const observer = new protos.ObserverClient(`127.0.45.1:${server.port}`, grpc.credentials.createInsecure()) as unknown as Obj;
      const peer = new protos.PeerClient(`127.0.45.1:${server.port}`, grpc.credentials.createInsecure()) as unknown as Obj;
      try {
        const followCall = observer['GetFlows']({ follow: true });
        const delivered = new Promise((r) => followCall.once('data', r));
        const follow = collect(followCall);
        const notify = collect(peer['Notify']({}));
        await streams(metrics, 'GetFlows', 1);
        await streams(metrics, 'Notify', 1);
        ring.consume({ source: 'test', flows: [flowAt(1)] });
        await delivered;
        await server[Symbol.asyncDispose]();
        const [f, n] = await Promise.all([follow, notify]);
        assert.equal(f.msgs.length, 1, `rawWrites ${rawWrites}: the flow written before the stop is delivered`);
        assert.equal(f.err?.code, grpc.status.UNAVAILABLE, `rawWrites ${rawWrites}: GetFlows ended with ${f.err?.code} ${f.err?.details}`);
        assert.equal(f.err?.details, 'the Hubble server is stopping');
        assert.equal(n.msgs.length, 1);
        assert.equal(n.err?.code, grpc.status.UNAVAILABLE, `rawWrites ${rawWrites}: Notify ended with ${n.err?.code}`);
      } finally {
        observer['close']();
        peer['close']();
      }
    }
  });
});
