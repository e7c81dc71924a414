/**
 * packetparser with pipeline workers (pipelineWorkers: 2) on a real kernel: the ring's raw records
 * go to worker threads, which decode and count them; their adv_* counts equal what a module on the
 * main thread counts from the same records decoded there (while a consumer wants flows here), and
 * the packets the test sent (with no consumer here: the main thread then decodes nothing). Nothing
 * is lost, every record handed over is counted, and stopping leaves no worker behind.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, test } from 'node:test';
import { Harness, Topology, requirePacketparser, tearDown, total } from './packetparser-topology.js';
import { TCP_SEND, TCP_SINK, UDP_SEND, UDP_SINK } from './traffic.js';

const N = 3000;
let topo: Topology;
let h: Harness | undefined;
const helpers: ChildProcess[] = [];
const spec = {
  contextOptions: [
    { metricName: 'forward_count', sourceLabels: ['ip'], destinationLabels: ['ip'] },
    { metricName: 'forward_bytes', sourceLabels: ['ip', 'port'], destinationLabels: ['ip', 'port'] },
    { metricName: 'tcp_flag_gauges', sourceLabels: ['ip'], destinationLabels: ['ip'] },
  ],
  namespaces: { exclude: [] },
};

interface WorkerCounts {
  readonly workers: string[];
  readonly check: string[];
  readonly stats: { handed: number; counted: number; lostBacklog: number; lostExit: number; workers: number; perWorker: number[] };
  /** Records handed to the sink, those pushed in place from the ring, those whose kernel-written peer_hash differs from peerHash(). */
  readonly hashes: { checked: number; inPlace: number; wrong: number };
}

async function sink(script: string, ns: Topology['node'], ip: string, port: string): Promise<void> {
  const c = ns.spawnNode(script, [ip, port]);
  helpers.push(c);
  await new Promise((r) => c.stdout?.once('data', r));
}

/** The value of the adv_forward_count series from `src` to `dst` summed over directions. */
const forwarded = (lines: readonly string[], src: string, dst: string): number =>
  lines.filter((l) => l.startsWith('networkobservability_adv_forward_count{') && l.includes(`source_ip="${src}"`) && l.includes(`destination_ip="${dst}"`))
    .reduce((a, l) => a + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);

before(async () => {
  requirePacketparser();
  topo = new Topology(238, false);
  const [a, b] = [topo.addPod('a', 1), topo.addPod('b', 2)];
  for (const p of [a, b]) {
    await sink(UDP_SINK, p.ns, p.ip, '7000');
    await sink(TCP_SINK, p.ns, p.ip, '7001');
  }
});

after(() => tearDown(helpers, h, topo));

test('two workers count what the main thread counts from the same records, UDP and TCP', async () => {
  h = new Harness(topo.node);
  const [a, b] = [topo.pod('a'), topo.pod('b')];
  const { status } = await h.call<{ status: string[] }>({
    op: 'start', config: { hostInterfaces: [], tcMode: 'auto', conntrackMaxEntries: 65536 }, agent: { dataAggregationLevel: 'low' }, interest: null, timing: {},
    workers: 2, workerSpec: spec,
  });
  assert.deepEqual(status.filter((s) => !s.startsWith('ok')), []);
  await h.settle(300);
  await a.ns.node(UDP_SEND, [String(N), b.ip, '7000', '64']);
  await b.ns.node(TCP_SEND, ['200', a.ip, '7001']);
  const flows = await h.settle();
  const udp = total(flows, (f) => f.src === a.ip && f.dst === b.ip && f.proto === 17);
  assert.equal(udp.packets, 2 * N, 'A veth ingress and B veth egress, one record per packet');
  const c = await h.call<WorkerCounts>({ op: 'workerCounts' });
  assert.equal(c.stats.workers, 2);
  assert.equal(c.stats.lostBacklog + c.stats.lostExit, 0);
  assert.equal(c.stats.counted, c.stats.handed);
  assert.equal(c.stats.handed, flows.length, 'every record the ring gave was handed over once');
  assert.deepEqual(c.hashes, { checked: flows.length, inPlace: flows.length, wrong: 0 }, 'copied in runs from the ring; the kernel\'s peer_hash is peerHash() of the addresses');
  assert.ok(c.check.length > 5, `${c.check.length} series`);
  assert.deepEqual(c.workers, c.check, 'the workers\' counts equal the main thread\'s');
  assert.equal(forwarded(c.workers, a.ip, b.ip), total(flows, (f) => f.src === a.ip && f.dst === b.ip).packets);
  await h.call({ op: 'stop' });
});

test('with no consumer on the main thread the workers alone decode: their counts are the packets sent', async () => {
  const hh = h as Harness;
  const [a, b] = [topo.pod('a'), topo.pod('b')];
  await hh.call({
    op: 'start', config: { hostInterfaces: [], tcMode: 'auto', conntrackMaxEntries: 65536 }, agent: { dataAggregationLevel: 'low' }, interest: null, timing: {},
    workers: 2, workerSpec: spec, workersOnly: true,
  });
  await hh.settle(300);
  const before0 = await hh.call<WorkerCounts>({ op: 'workerCounts' });
  const base = forwarded(before0.workers, a.ip, b.ip);
  await a.ns.node(UDP_SEND, [String(N), b.ip, '7000', '64']);
  let c = await hh.call<WorkerCounts>({ op: 'workerCounts' });
  const deadline = Date.now() + 15_000;
  while (forwarded(c.workers, a.ip, b.ip) - base < 2 * N && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 200));
    c = await hh.call<WorkerCounts>({ op: 'workerCounts' });
  }
  assert.equal(forwarded(c.workers, a.ip, b.ip) - base, 2 * N, 'each packet at A\'s and B\'s veth');
  assert.deepEqual(c.check, [], 'nothing decoded on the main thread');
  assert.equal((await hh.flows()).length, 0);
  assert.equal(c.stats.lostBacklog + c.stats.lostExit, 0);
  assert.equal(c.stats.counted, c.stats.handed);
  await hh.call({ op: 'stop' });
});
