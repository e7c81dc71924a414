/**
 * packetparser's endpoint watcher follows link notifications, not a poll: a pod veth created while
 * the plugin runs is attached within tens of milliseconds of the link's creation (before the test
 * has even finished configuring the pod), so the pod's very first packets are counted; deleting it
 * detaches at once. The plugin's slow resync is set to an hour here, so nothing but the events can
 * do it.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, test } from 'node:test';
import { sleep } from './netns.js';
import { Harness, Topology, requirePacketparser, tearDown, total } from './packetparser-topology.js';
import { UDP_SEND, UDP_SINK } from './traffic.js';

const N = 20;
// Measured from the moment the test starts creating the link (spawning `ip`), so a loaded 2-core
// machine adds to it: 53-92 ms quiet, up to about 350 ms with other builds running. The 1 s poll this
// replaced took 713-922 ms typically (and lost the first packets, which the count above catches).
const BOUND_MS = 500;
let topo: Topology;
let h: Harness | undefined;
const helpers: ChildProcess[] = [];

before(async () => {
  requirePacketparser();
  topo = new Topology(243, false);
  const a = topo.addPod('a', 1);
  const c = a.ns.spawnNode(UDP_SINK, [a.ip, '7000']);
  helpers.push(c);
  await new Promise((r) => c.stdout?.once('data', r));
});

after(() => tearDown(helpers, h, topo));

async function logLine(hh: Harness, msg: string, iface: string, timeoutMs = 5000): Promise<{ at: number; fields: Record<string, unknown> } | undefined> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const hit = (await hh.logs()).find((l) => l.msg === msg && l.fields['interface'] === iface);
    if (hit) return hit;
    await sleep(20);
  }
  return undefined;
}

test('links: veths created after start are attached within tens of ms, their first packets counted, and detached when deleted', async (t) => {
  h = new Harness(topo.node);
  const a = topo.pod('a');
  const pods = [['d', 4], ['e', 5], ['f', 6]] as const;
  const interest = [a.ip, ...pods.map(([, n]) => `10.243.${n}.2`)];
  const { status } = await h.start({ hostInterfaces: ['pp-ext'] }, { dataAggregationLevel: 'low' }, interest, { vethResyncMs: 3_600_000 });
  assert.deepEqual(status.filter((s) => !s.startsWith('ok')), []);
  await h.settle(300);
  const latencies: number[] = [];
  for (const [name, n] of pods) {
    const created = Date.now();
    const p = topo.addPod(name, n); // the link exists from its first command on; then addresses, routes, neighbours
    const configured = Date.now();
    // The pod's first packets, sent as soon as it is configured (without waiting for the attach).
    await p.ns.node(UDP_SEND, [String(N), a.ip, '7000', '64']);
    const line = await logLine(h, 'endpoint attached', `pp-${name}`);
    assert.ok(line, `pp-${name} attached`);
    latencies.push(line.at - created);
    t.diagnostic(`pp-${name}: attached ${line.at - created} ms after its creation began (configuring the pod took ${configured - created} ms)`);
    const flows = await h.settle();
    assert.equal(total(flows, (f) => f.src === p.ip && f.obs === 'FROM_ENDPOINT').records, N, `pp-${name}: its first ${N} packets are all seen on its veth`);
  }
  assert.ok(Math.max(...latencies) < BOUND_MS, `every veth attached within ${BOUND_MS} ms of its creation: ${latencies.join(', ')} ms`);

  for (const [name] of pods) {
    const t0 = Date.now();
    topo.removePod(name);
    const gone = await logLine(h, 'endpoint detached', `pp-${name}`, 3000);
    assert.ok(gone, `pp-${name} detached`);
    t.diagnostic(`pp-${name}: detached ${gone.at - t0} ms after its deletion began`);
    assert.ok(gone.at - t0 < BOUND_MS, `detached within ${BOUND_MS} ms`);
  }
  assert.deepEqual((await h.logs()).filter((l) => l.level === 'warn' || l.level === 'error'), []);
  await h.call({ op: 'stop' });
});
