/**
 * The OTLP flow-log sink against a real OpenTelemetry Collector (hack/otelcol: v0.161.0, the otlp
 * receiver, the contrib file exporter as the oracle): exactly the records written arrive, with
 * their body, attributes, time and resource, over gRPC, HTTP/protobuf and HTTP/JSON; with TLS
 * (a CA made here, mutual TLS) and a bearer token the collector requires; a wrong token is
 * refused and counted; the collector down then up delivers what the bounded queue held and
 * counts exactly what did not fit; disposal with the collector down (refusing, or accepting and
 * silent) ends in bounded time with every record held counted dropped{closed}, exactly.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { FlowLogsOtlpConfig, OtlpProtocol } from '../../src/config/flowlogs-otlp.js';
import { createOtlpFlowSink, type OtlpSink } from '../../src/export/otlp/index.js';
import type { FlowLogRecord } from '../../src/export/types.js';
import { createLogger } from '../../src/log/index.js';
import { createFlow } from '../../src/flow/index.js';
import { loadFlowProtos, toHubbleFlow } from '../../src/flow/hubble/index.js';
import { flowRecord } from '../../src/export/exporter.js';
import { catalog, createMetricsRegistry, type MetricsRegistry } from '../../src/metrics/index.js';
import { makeCa, makeLeaf } from '../fixtures/certs.js';
import { arrived, freePort, makeClientCert, startCollector, waitArrived, type Collector } from './otelcol.js';

const PROTO_DIR = fileURLToPath(new URL('../../../proto', import.meta.url));
const log = createLogger({ level: 'error', stream: new PassThrough() });

const FLOW_JSON = loadFlowProtos(fileURLToPath(new URL('../../../proto/hubble', import.meta.url))).json;

/**
 * The record the exporter writes for a kernel drop as the dropreason plugin reports it (a Flow with the
 * kernel's reason name, mapped and written by the pipeline's own functions: toHubbleFlow, flowRecord):
 * no field filled in by hand. test/ebpf/flow-log-export.test.ts checks the same on real kernel drops.
 */
function kernelDrop(i: number): FlowLogRecord {
  const f = createFlow({ srcIp: '10.0.0.1', dstIp: '10.1.0.7', verdict: 'DROPPED', dropReason: 'NETFILTER_DROP', proto: 17, srcPort: 41000 + i, dstPort: 9999, direction: 'EGRESS', timeMs: Date.parse('2026-11-26T10:01:00Z') + i });
  return flowRecord(toHubbleFlow(f, 'node-a'), FLOW_JSON, undefined);
}

/** n flow-log records in the shape the exporter writes (Hubble JSON with node name and time). */
function records(n: number, tag: string): FlowLogRecord[] {
  return Array.from({ length: n }, (_, i) => {
    const time = `2026-11-26T10:00:${String(i % 60).padStart(2, '0')}.${String(123456789 + i).slice(0, 9)}Z`;
    return {
      flow: {
        time,
        verdict: i % 3 === 0 ? 'DROPPED' : 'FORWARDED',
        ...(i % 3 === 0 ? { Summary: (kernelDrop(i)['flow'] as Record<string, unknown>)['Summary'] } : {}),
        IP: { source: `10.0.${i >> 8}.${i & 255}`, destination: '10.1.0.7', ipVersion: 'IPv4' },
        l4: i % 2 ? { UDP: { source_port: 40000 + i, destination_port: 53 } } : { TCP: { source_port: 30000 + i, destination_port: 8080, flags: { SYN: true } } },
        source: { namespace: `ns-${tag}`, pod_name: `client-${i}`, labels: ['k8s:app=client'], workloads: [{ name: 'client', kind: 'Deployment' }] },
        destination: { namespace: 'server-ns', pod_name: 'server-0' },
        traffic_direction: 'EGRESS',
        node_name: 'node-a',
      },
      node_name: 'node-a',
      time,
    };
  });
}

function config(endpoint: string, protocol: OtlpProtocol, extra: Partial<FlowLogsOtlpConfig> = {}): FlowLogsOtlpConfig {
  return {
    endpoint, protocol, headers: {},
    tls: { caFile: '', certFile: '', keyFile: '', serverName: '', insecureSkipVerify: false },
    timeoutMs: 5_000, queueSize: 10_000, batchSize: 100, flushIntervalMs: 50, compression: 'none',
    ...extra,
  };
}

/** flow_log_records_total{sink="otlp"} as result/reason → value. */
async function counts(metrics: MetricsRegistry): Promise<Record<string, number>> {
  const m = metrics.registry.getSingleMetric(catalog.flowLogRecords.name);
  const out: Record<string, number> = {};
  for (const v of (await m?.get())?.values ?? []) {
    if (v.labels['sink'] !== 'otlp') continue;
    out[`${v.labels['result']}${v.labels['reason'] ? `/${v.labels['reason']}` : ''}`] = v.value;
  }
  return out;
}

function sink(c: FlowLogsOtlpConfig, metrics: MetricsRegistry, tuning?: Parameters<typeof createOtlpFlowSink>[0]['tuning']): OtlpSink {
  return createOtlpFlowSink({ config: c, nodeName: 'node-a', version: '9.9.9-test', protoDir: PROTO_DIR, metrics, log, ...(tuning ? { tuning } : {}) });
}

/** Every record arrived once, in order, with its body, attributes, time and resource. */
function assertExact(got: ReturnType<typeof arrived>, sent: readonly FlowLogRecord[]): void {
  assert.equal(got.length, sent.length, 'record count');
  for (let i = 0; i < sent.length; i++) {
    const g = got[i]!;
    const s = sent[i]! as { flow: Record<string, any> }; // eslint-disable-line @typescript-eslint/no-explicit-any
    assert.equal(g.body, JSON.stringify(sent[i]), `body of record ${i}`);
    assert.deepEqual(g.resource, { 'service.name': 'retina-agent', 'service.version': '9.9.9-test', 'k8s.node.name': 'node-a' });
    assert.equal(g.scope.name, 'retina-ts/flow-logs');
    const frac = String(123456789 + i).slice(0, 9);
    assert.equal(g.timeUnixNano, String(BigInt(Date.parse(`2026-11-26T10:00:${String(i % 60).padStart(2, '0')}Z`)) * 1_000_000n + BigInt(frac)), `time of record ${i}`);
    const l4 = i % 2 ? { 'network.transport': 'udp', 'source.port': 40000 + i, 'destination.port': 53 } : { 'network.transport': 'tcp', 'source.port': 30000 + i, 'destination.port': 8080 };
    assert.deepEqual(g.attributes, {
      'hubble.verdict': s.flow['verdict'], 'hubble.traffic_direction': 'EGRESS',
      ...(i % 3 === 0 ? { 'hubble.drop_reason': 'NETFILTER_DROP' } : {}),
      'source.k8s.namespace.name': s.flow['source']['namespace'], 'source.k8s.pod.name': `client-${i}`,
      'source.k8s.workload.name': 'client', 'source.k8s.workload.kind': 'Deployment',
      'destination.k8s.namespace.name': 'server-ns', 'destination.k8s.pod.name': 'server-0',
      'source.address': s.flow['IP']['source'], 'destination.address': '10.1.0.7', ...l4,
    }, `attributes of record ${i}`);
  }
}

describe('OTLP flow-log sink → a real OpenTelemetry Collector (file exporter as the oracle)', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'otlp-collector-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  for (const protocol of ['grpc', 'http/protobuf', 'http/json'] as const) {
    test(`${protocol}: exactly the records written arrive (count, order, body, attributes, time, resource), all counted written`, async () => {
      const [g, h] = [await freePort(), await freePort()];
      const col = await startCollector({ dir, grpcPort: g, httpPort: h }, `plain-${protocol.replace('/', '-')}`);
      const metrics = createMetricsRegistry({ processMetrics: false });
      const s = sink(config(`http://127.0.0.1:${protocol === 'grpc' ? g : h}`, protocol, { batchSize: 64 }), metrics);
      try {
        const sent = records(1000, protocol);
        for (let i = 0; i < sent.length; i += 37) s.write(sent.slice(i, i + 37)); // drain-sized batches
        await s.idle();
        assertExact(await waitArrived(col.out, sent.length), sent);
        assert.deepEqual(await counts(metrics), { written: 1000 });
      } finally {
        await s[Symbol.asyncDispose]();
        await col.stop();
      }
    });
  }

  test('kernel drops as the pipeline writes them (no field filled in by hand): hubble.drop_reason is the kernel\'s reason', async () => {
    const [g, h] = [await freePort(), await freePort()];
    const col = await startCollector({ dir, grpcPort: g, httpPort: h }, 'kernel-drops');
    const metrics = createMetricsRegistry({ processMetrics: false });
    const s = sink(config(`http://127.0.0.1:${g}`, 'grpc'), metrics);
    try {
      const sent = Array.from({ length: 20 }, (_, i) => kernelDrop(i));
      assert.ok(sent.every((r) => (r['flow'] as Record<string, unknown>)['drop_reason_desc'] === undefined), 'our flows never set drop_reason_desc');
      s.write(sent);
      await s.idle();
      const got = await waitArrived(col.out, sent.length);
      assert.equal(got.length, 20);
      for (const [i, r] of got.entries()) {
        assert.equal(r.body, JSON.stringify(sent[i]));
        assert.equal(r.attributes['hubble.verdict'], 'DROPPED');
        assert.equal(r.attributes['hubble.drop_reason'], 'NETFILTER_DROP');
        assert.equal(r.attributes['destination.port'], 9999);
      }
    } finally {
      await s[Symbol.asyncDispose]();
      await col.stop();
    }
  });

  test('gzip compression over gRPC and HTTP: the collector decodes every record', async () => {
    const [g, h] = [await freePort(), await freePort()];
    const col = await startCollector({ dir, grpcPort: g, httpPort: h }, 'gzip');
    const metrics = createMetricsRegistry({ processMetrics: false });
    const a = sink(config(`http://127.0.0.1:${g}`, 'grpc', { compression: 'gzip' }), metrics);
    const b = sink(config(`http://127.0.0.1:${h}`, 'http/protobuf', { compression: 'gzip' }), metrics);
    try {
      const sent = records(300, 'gzip');
      a.write(sent.slice(0, 150));
      await a.idle();
      await waitArrived(col.out, 150);
      b.write(sent.slice(150));
      await b.idle();
      assertExact(await waitArrived(col.out, 300), sent);
      assert.deepEqual(await counts(metrics), { written: 300 });
    } finally {
      await Promise.all([a[Symbol.asyncDispose](), b[Symbol.asyncDispose]()]);
      await col.stop();
    }
  });

  describe('TLS (a CA made here, mutual TLS) and a bearer token the collector requires', () => {
    let col: Collector;
    let ports: { g: number; h: number };
    let ca: { cert: string; key: string };
    let client: { cert: string; key: string };
    before(async () => {
      ca = makeCa(dir, 'otlp');
      const server = makeLeaf(dir, ca, 'collector');
      client = makeClientCert(dir, ca, 'agent');
      ports = { g: await freePort(), h: await freePort() };
      col = await startCollector({ dir, grpcPort: ports.g, httpPort: ports.h, tls: { ...server, clientCa: ca.cert }, bearerToken: 'flow-logs-token' }, 'tls');
    });
    after(async () => col.stop());

    const tls = (): FlowLogsOtlpConfig['tls'] => ({ caFile: ca.cert, certFile: client.cert, keyFile: client.key, serverName: '', insecureSkipVerify: false });

    test('gRPC and HTTP over TLS with the token: every record arrives', async () => {
      const metrics = createMetricsRegistry({ processMetrics: false });
      const headers = { authorization: 'Bearer flow-logs-token' };
      const a = sink(config(`https://127.0.0.1:${ports.g}`, 'grpc', { tls: tls(), headers }), metrics);
      const b = sink(config(`https://localhost:${ports.h}`, 'http/protobuf', { tls: tls(), headers }), metrics);
      try {
        const sent = records(400, 'tls');
        a.write(sent.slice(0, 200));
        await a.idle();
        await waitArrived(col.out, 200);
        b.write(sent.slice(200));
        await b.idle();
        assertExact(await waitArrived(col.out, 400), sent);
        assert.deepEqual(await counts(metrics), { written: 400 });
      } finally {
        await Promise.all([a[Symbol.asyncDispose](), b[Symbol.asyncDispose]()]);
      }
    });

    test('a wrong token is refused (gRPC UNAUTHENTICATED, HTTP 401): nothing arrives, every record counted dropped{rejected}', async () => {
      const before = arrived(col.out).length;
      const metrics = createMetricsRegistry({ processMetrics: false });
      const headers = { authorization: 'Bearer wrong' };
      const a = sink(config(`https://127.0.0.1:${ports.g}`, 'grpc', { tls: tls(), headers }), metrics);
      const b = sink(config(`https://127.0.0.1:${ports.h}`, 'http/json', { tls: tls(), headers }), metrics);
      try {
        a.write(records(30, 'bad'));
        b.write(records(20, 'bad'));
        await Promise.all([a.idle(), b.idle()]);
        await new Promise((r) => setTimeout(r, 300));
        assert.equal(arrived(col.out).length, before);
        assert.deepEqual(await counts(metrics), { 'dropped/rejected': 50 });
      } finally {
        await Promise.all([a[Symbol.asyncDispose](), b[Symbol.asyncDispose]()]);
      }
    });

    test('a collector certificate the CA did not sign: not verified, nothing arrives; insecureSkipVerify off by default', async () => {
      const before = arrived(col.out).length;
      const other = makeCa(dir, 'other');
      const metrics = createMetricsRegistry({ processMetrics: false });
      const s = sink(config(`https://127.0.0.1:${ports.h}`, 'http/protobuf', { tls: { ...tls(), caFile: other.cert }, headers: { authorization: 'Bearer flow-logs-token' } }), metrics,
        { backoff: { initialMs: 20, maxMs: 50, jitter: 0 }, maxElapsedMs: 400 });
      try {
        s.write(records(10, 'untrusted'));
        await s.idle();
        assert.equal(arrived(col.out).length, before);
        assert.deepEqual(await counts(metrics), { 'dropped/retries_exhausted': 10 });
      } finally {
        await s[Symbol.asyncDispose]();
      }
    });
  });

  for (const protocol of ['grpc', 'http/protobuf'] as const) {
    test(`${protocol}: collector down, then up: the queue's records are delivered, what did not fit is counted dropped{queue_full} exactly`, async () => {
      const [g, h] = [await freePort(), await freePort()];
      const metrics = createMetricsRegistry({ processMetrics: false });
      const s = sink(config(`http://127.0.0.1:${protocol === 'grpc' ? g : h}`, protocol, { queueSize: 500, batchSize: 100 }), metrics,
        { backoff: { initialMs: 20, maxMs: 100, jitter: 0 } });
      let col: Collector | undefined;
      try {
        const sent = records(700, `down-${protocol}`);
        s.write(sent.slice(0, 300));
        await new Promise((r) => setTimeout(r, 300)); // a few failed attempts
        assert.equal(s.pending, 300);
        s.write(sent.slice(300, 700)); // room for 200 of these 400: the queue never grows past 500
        assert.equal(s.pending, 500);
        assert.deepEqual(await counts(metrics), { 'dropped/queue_full': 200 });
        col = await startCollector({ dir, grpcPort: g, httpPort: h }, `down-up-${protocol.replace('/', '-')}`);
        await s.idle();
        assertExact(await waitArrived(col.out, 500), sent.slice(0, 500));
        assert.deepEqual(await counts(metrics), { written: 500, 'dropped/queue_full': 200 });
      } finally {
        await s[Symbol.asyncDispose]();
        await col?.stop();
      }
    });
  }

  describe('disposal while the collector is down: bounded time, every record held counted dropped{closed} exactly', () => {
    /** A port that accepts connections and never answers (a hung collector). */
    const silent = async (): Promise<{ port: number; stop(): Promise<void> }> => {
      const sockets: Socket[] = [];
      const server = createServer((s) => void sockets.push(s));
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const a = server.address();
      return {
        port: typeof a === 'object' && a ? a.port : 0,
        stop: () => new Promise<void>((r) => {
          for (const s of sockets) s.destroy();
          server.close(() => r());
        }),
      };
    };
    const CLOSE_MS = 500;
    const cases = [
      ['grpc', 'refused'], ['http/protobuf', 'refused'], ['grpc', 'silent'], ['http/protobuf', 'silent'],
    ] as const;
    for (const [protocol, down] of cases) {
      test(`${protocol}, collector ${down === 'refused' ? 'not listening' : 'accepting and never answering'}: close ends within closeTimeout (+1 s) and counts all 700 held records dropped{closed}`, async (t) => {
        const hung = down === 'silent' ? await silent() : undefined;
        const port = hung?.port ?? await freePort();
        const metrics = createMetricsRegistry({ processMetrics: false });
        // The request timeout (10 s) and the give-up time (5 min) are far past close's 500 ms.
        const s = sink(config(`http://127.0.0.1:${port}`, protocol, { queueSize: 1000, batchSize: 100, timeoutMs: 10_000 }), metrics,
          { backoff: { initialMs: 20, maxMs: 100, jitter: 0 }, closeTimeoutMs: CLOSE_MS });
        try {
          s.write(records(700, `close-${protocol}-${down}`));
          await new Promise((r) => setTimeout(r, 300)); // a batch in flight or between retries
          assert.equal(s.pending, 700);
          const t0 = performance.now();
          await s[Symbol.asyncDispose]();
          const took = performance.now() - t0;
          t.diagnostic(`close took ${took.toFixed(0)} ms`);
          assert.ok(took < CLOSE_MS + 1000, `close took ${took.toFixed(0)} ms`);
          assert.equal(s.pending, 0);
          assert.deepEqual(await counts(metrics), { 'dropped/closed': 700 });
          s.write(records(5, 'after'));
          assert.deepEqual(await counts(metrics), { 'dropped/closed': 705 }, 'a write after close is counted too');
        } finally {
          await s[Symbol.asyncDispose]();
          await hung?.stop();
        }
      });
    }

    test('http/protobuf: the collector comes back during close: what gets through in time is written, the rest dropped{closed}, together exactly all', async () => {
      const [g, h] = [await freePort(), await freePort()];
      const metrics = createMetricsRegistry({ processMetrics: false });
      const s = sink(config(`http://127.0.0.1:${h}`, 'http/protobuf', { queueSize: 1000, batchSize: 100 }), metrics,
        { backoff: { initialMs: 20, maxMs: 50, jitter: 0 }, closeTimeoutMs: 3000 });
      let col: Collector | undefined;
      try {
        const sent = records(600, 'close-back');
        s.write(sent);
        await new Promise((r) => setTimeout(r, 200));
        const closing = s[Symbol.asyncDispose]();
        col = await startCollector({ dir, grpcPort: g, httpPort: h }, 'close-back');
        await closing;
        const c = await counts(metrics);
        assert.equal((c['written'] ?? 0) + (c['dropped/closed'] ?? 0), 600, JSON.stringify(c));
        assert.deepEqual(Object.keys(c).filter((k) => k !== 'written' && k !== 'dropped/closed'), []);
        const got = await waitArrived(col.out, c['written'] ?? 0, 2000);
        assert.equal(got.length, c['written'] ?? 0, 'the collector has exactly the records counted written');
        assert.deepEqual(got.map((r) => r.body), sent.slice(0, got.length).map((r) => JSON.stringify(r)));
      } finally {
        await s[Symbol.asyncDispose]();
        await col?.stop();
      }
    });
  });
});
