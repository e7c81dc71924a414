/**
 * packetparser on a real kernel, low aggregation: pods A, B, C in their own namespaces, routed by a
 * node namespace where the plugin runs (packetparser-harness.js), the world behind pp-ext (the host
 * interface). Exact packet counts per observation point, TCP flags and timestamps, IPv6, direction
 * and is_reply, the IPs-of-interest filter changed at run time, the endpoint watcher following a
 * veth that comes and goes, lost records counted exactly, and nothing left after stop.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, test } from 'node:test';
import { leftoversAfterStop, metric, sleep } from './netns.js';
import { Harness, Topology, nodeArgv, requirePacketparser, tearDown, total, type PFlow } from './packetparser-topology.js';
import { TCP_PING, TCP_SEND, TCP_SINK, TCP_SLOW_ECHO, UDP_SEND, UDP_SINK } from './traffic.js';

const N = 50;
let topo: Topology;
let h: Harness | undefined;
const helpers: ChildProcess[] = [];

async function sink(script: string, ns: Topology['node'], ip: string, port: string, ...more: string[]): Promise<void> {
  const c = ns.spawnNode(script, [ip, port, ...more]);
  helpers.push(c);
  await new Promise((r) => c.stdout?.once('data', r));
}

before(async () => {
  requirePacketparser();
  topo = new Topology(241);
  const [a, b, c] = [topo.addPod('a', 1), topo.addPod('b', 2), topo.addPod('c', 3)];
  for (const p of [a, b, c, topo.world]) {
    await sink(UDP_SINK, p.ns, p.ip, '7000');
    await sink(UDP_SINK, p.ns, p.ip6, '7000');
    await sink(TCP_SINK, p.ns, p.ip, '7001');
  }
});

after(() => tearDown(helpers, h, topo));

const from = (f: PFlow, src: string, dst: string): boolean => f.src === src && f.dst === dst;

test('low: start attaches the endpoint and host programs', async () => {
  h = new Harness(topo.node);
  const a = topo.pod('a');
  const { status } = await h.start({ hostInterfaces: ['pp-ext'] }, { dataAggregationLevel: 'low' }, [a.ip, a.ip6]);
  assert.deepEqual(status.filter((s) => !s.startsWith('ok')), []);
  const logs = await h.logs();
  const attached = logs.filter((l) => l.msg === 'endpoint attached').map((l) => l.fields['interface']).sort();
  assert.deepEqual(attached, ['pp-a', 'pp-b', 'pp-c']);
  assert.ok(logs.some((l) => l.msg === 'host interface attached' && l.fields['interface'] === 'pp-ext'));
  await h.settle(300);
});

test('low: a UDP burst gives exactly one record per packet per observation point (IPv4 and IPv6)', async (t) => {
  const hh = h as Harness;
  await hh.call({ op: 'runstats' });
  const [a, b] = [topo.pod('a'), topo.pod('b')];
  await a.ns.node(UDP_SEND, [String(N), b.ip, '7000', '100']);
  await a.ns.node(UDP_SEND, [String(N), b.ip6, '7000', '100']);
  await a.ns.node(UDP_SEND, [String(N), topo.world.ip, '7000', '100']);
  const flows = await hh.settle();
  const v4 = flows.filter((f) => from(f, a.ip, b.ip) && f.proto === 17);
  assert.equal(v4.filter((f) => f.obs === 'FROM_ENDPOINT').length, N, 'A veth ingress');
  assert.equal(v4.filter((f) => f.obs === 'TO_ENDPOINT').length, N, 'B veth egress');
  assert.ok(v4.every((f) => f.packets === 1 && f.bytes === 14 + 20 + 8 + 100 && f.dport === 7000 && f.v === 4));
  const v6 = flows.filter((f) => from(f, a.ip6, b.ip6) && f.proto === 17);
  assert.equal(v6.filter((f) => f.obs === 'FROM_ENDPOINT').length, N);
  assert.equal(v6.filter((f) => f.obs === 'TO_ENDPOINT').length, N);
  assert.ok(v6.every((f) => f.v === 6 && f.bytes === 14 + 40 + 8 + 100));
  const out = flows.filter((f) => from(f, a.ip, topo.world.ip));
  assert.equal(out.filter((f) => f.obs === 'FROM_ENDPOINT').length, N);
  assert.equal(out.filter((f) => f.obs === 'TO_NETWORK').length, N, 'host interface egress');
  // A started every one of these: egress at its veth, ingress where B receives; never a reply.
  assert.ok([...v4, ...v6, ...out].every((f) => f.reply === false));
  assert.ok(v4.every((f) => f.dir === (f.obs === 'FROM_ENDPOINT' ? 'EGRESS' : 'INGRESS')));
  assert.ok(out.every((f) => f.dir === 'EGRESS'));
  for (const [name, r] of hh.runStats()) if (r.runs) t.diagnostic(`${name}: ${r.runs} runs, ${Math.round(r.ns / r.runs)} ns per packet (low, one record each)`);
  assert.equal(flows.length, 6 * N, `nothing else (B and C are not of interest): ${JSON.stringify(flows.filter((f) => f.proto !== 17).slice(0, 3))}`);
});

test('low: TCP initiated by A: flags, timestamps, direction and is_reply', async () => {
  const hh = h as Harness;
  const [a, b] = [topo.pod('a'), topo.pod('b')];
  await a.ns.node(TCP_SEND, ['200000', b.ip, '7001']);
  const flows = (await hh.settle()).filter((f) => f.proto === 6);
  const atA = flows.filter((f) => f.obs === 'FROM_ENDPOINT' || f.obs === 'TO_ENDPOINT');
  const aVeth = atA.filter((f) => (f.obs === 'FROM_ENDPOINT' ? f.src : f.dst) === a.ip);
  const syn = aVeth.filter((f) => (f.flags & 0x12) === 0x02);
  const synack = aVeth.filter((f) => (f.flags & 0x12) === 0x12);
  assert.equal(syn.length, 1, 'one SYN at A');
  assert.equal(synack.length, 1, 'one SYN-ACK at A');
  assert.equal(syn[0]?.obs, 'FROM_ENDPOINT');
  assert.ok((syn[0]?.tsval ?? 0) > 0, 'the SYN carries TSval');
  assert.ok((synack[0]?.tsecr ?? 0) === syn[0]?.tsval, 'the SYN-ACK echoes it');
  for (const f of aVeth) {
    const fromA = f.src === a.ip;
    assert.equal(f.reply, !fromA, `is_reply of ${f.src} -> ${f.dst} ${f.obs}`);
    assert.equal(f.dir, 'EGRESS', 'A started it: egress at its veth');
  }
  const bVeth = atA.filter((f) => (f.obs === 'FROM_ENDPOINT' ? f.src : f.dst) === b.ip);
  assert.ok(bVeth.length > 0 && bVeth.every((f) => f.dir === 'INGRESS' && f.reply === (f.src === b.ip)));
  assert.ok(aVeth.some((f) => f.flags & 0x01) && aVeth.some((f) => f.flags & 0x08), 'FIN and PSH seen');
  const bytesFromA = total(aVeth, (f) => f.src === a.ip && f.obs === 'FROM_ENDPOINT').bytes;
  assert.ok(bytesFromA > 200000, `bytes from A ${bytesFromA}`);
});

test('filter: B and C are not of interest until the interest changes at run time', async () => {
  const hh = h as Harness;
  const [a, b, c] = [topo.pod('a'), topo.pod('b'), topo.pod('c')];
  await b.ns.node(UDP_SEND, [String(N), c.ip, '7000', '64']);
  assert.deepEqual(await hh.settle(), [], 'B -> C is not reported');
  await hh.call({ op: 'interest', ips: [c.ip] });
  await b.ns.node(UDP_SEND, [String(N), c.ip, '7000', '64']);
  await a.ns.node(UDP_SEND, [String(N), b.ip, '7000', '64']);
  const flows = await hh.settle();
  assert.equal(total(flows, (f) => from(f, b.ip, c.ip)).records, 2 * N, 'B -> C now is');
  assert.equal(total(flows, (f) => f.src === a.ip).records, 0, 'A no longer is');
  await hh.call({ op: 'interest', ips: [a.ip, a.ip6] });
});

test('filter: a pod\'s address taken out of the filter and put back: its packets stop being reported and start again at once (the pod veth programs keep what the filter said of their pod per CPU and generation)', async () => {
  const hh = h as Harness;
  const [a, b, c] = [topo.pod('a'), topo.pod('b'), topo.pod('c')];
  // One connection (A's source port fixed), reported at A's and B's veths while A is of interest.
  await a.ns.node(UDP_SEND, [String(N), b.ip, '7000', '64', '41999']);
  assert.equal(total(await hh.settle(), (f) => from(f, a.ip, b.ip)).records, 2 * N, 'A -> B while A is of interest');
  await hh.call({ op: 'interest', ips: [c.ip] });
  await a.ns.node(UDP_SEND, [String(N), b.ip, '7000', '64', '41999']);
  assert.equal(total(await hh.settle(), (f) => from(f, a.ip, b.ip)).records, 0, 'the same connection once A is not');
  await hh.call({ op: 'interest', ips: [a.ip, a.ip6] });
  await a.ns.node(UDP_SEND, [String(N), b.ip, '7000', '64', '41999']);
  assert.equal(total(await hh.settle(), (f) => from(f, a.ip, b.ip)).records, 2 * N, 'and again once A is back');
});

test('endpoint watcher: a veth created after start is attached and reported; deleting it detaches cleanly', async () => {
  const hh = h as Harness;
  const linksBefore = hh.bpf().links.length;
  const t0 = Date.now();
  const d = topo.addPod('d', 4);
  await sink(UDP_SINK, d.ns, d.ip, '7000');
  let line: { fields: Record<string, unknown> } | undefined;
  while (!line && Date.now() - t0 < 5000) {
    await sleep(100);
    line = (await hh.logs()).find((l) => l.msg === 'endpoint attached' && l.fields['interface'] === 'pp-d');
  }
  assert.ok(line, 'pp-d attached');
  assert.ok(Date.now() - t0 < 2500, `attached within ~2 s (${Date.now() - t0} ms)`);
  await hh.call({ op: 'interest', ips: [topo.pod('a').ip, d.ip] });
  await topo.pod('a').ns.node(UDP_SEND, [String(N), d.ip, '7000', '64']);
  const flows = await hh.settle();
  assert.equal(total(flows, (f) => f.dst === d.ip && f.obs === 'TO_ENDPOINT').records, N, "D's veth reports what D receives");
  const mode = String(line.fields['mode']);
  if (mode.includes('tcx')) assert.equal(hh.bpf().links.length, linksBefore + 2, 'two TCX links for pp-d');
  topo.removePod('d');
  let gone: unknown;
  for (let i = 0; i < 30 && !gone; i++) {
    await sleep(100);
    gone = (await hh.logs()).find((l) => l.msg === 'endpoint detached' && l.fields['interface'] === 'pp-d');
  }
  assert.ok(gone, 'pp-d detached');
  assert.deepEqual((await hh.logs()).filter((l) => l.level === 'warn' || l.level === 'error'), []);
  assert.equal(hh.bpf().links.length, linksBefore, 'its links are closed');
  await hh.call({ op: 'interest', ips: [topo.pod('a').ip, topo.pod('a').ip6] });
});

test('stop leaves no tc filter, qdisc, link or program of ours', async () => {
  const hh = h as Harness;
  const owned = hh.bpf();
  assert.ok(owned.progs.length >= 4, `the harness held the programs (${owned.progs.length})`);
  const { status } = await hh.call<{ status: string[] }>({ op: 'stop' });
  assert.ok(!status.some((s) => s.startsWith('failed')), status.join('; '));
  assert.deepEqual(await leftoversAfterStop(topo.node, ['pp-a', 'pp-b', 'pp-c', 'pp-ext'], owned), []);
  const logs = await hh.logs();
  assert.equal(logs.filter((l) => l.msg === 'endpoint detached').length, 4, 'a, b, c at stop and d before');
});

test('clsact: attaches through a clsact qdisc and removes it at stop', async () => {
  const hh = h as Harness;
  const a = topo.pod('a');
  await hh.start({ hostInterfaces: ['pp-ext'], tcMode: 'clsact' }, { dataAggregationLevel: 'low' }, [a.ip]);
  assert.match(topo.node.run('tc', ['qdisc', 'show', 'dev', 'pp-a']), /clsact/);
  await a.ns.node(UDP_SEND, [String(N), topo.world.ip, '7000', '64']);
  const flows = await hh.settle();
  assert.equal(total(flows, (f) => f.obs === 'FROM_ENDPOINT').records, N);
  assert.equal(total(flows, (f) => f.obs === 'TO_NETWORK').records, N);
  const owned = hh.bpf();
  await hh.call({ op: 'stop' });
  assert.deepEqual(await leftoversAfterStop(topo.node, ['pp-a', 'pp-b', 'pp-c', 'pp-ext'], owned), []);
  for (const i of ['pp-a', 'pp-ext']) assert.doesNotMatch(topo.node.run('tc', ['qdisc', 'show', 'dev', i]), /clsact/);
});

test('lost records: a 4 KiB ring and a blocked event loop; received + lost = packets seen, exactly', async () => {
  const hh = h as Harness;
  const [a, b] = [topo.pod('a'), topo.pod('b')];
  const M = 400;
  // cpuBudget off: with it on, records that find the ring three quarters full are folded, not lost
  // (packetparser-budget.test.ts).
  await hh.start({ hostInterfaces: ['pp-ext'] }, { dataAggregationLevel: 'low', packetParserRingBufferSize: 4096, cpuBudgetMillicores: 0 }, [a.ip]);
  await hh.settle(300);
  const lost0 = await hh.call<number>({ op: 'lost' });
  await hh.call({ op: 'block', argv: nodeArgv(a.ns, UDP_SEND, [String(M), b.ip, '7000', '64']) });
  const flows = await hh.settle(800);
  await sleep(300);
  const lost = (await hh.call<number>({ op: 'lost' })) - lost0;
  const got = total(flows, (f) => from(f, a.ip, b.ip)).records;
  assert.equal(flows.length, got, 'only the burst');
  assert.ok(lost > 0, `the ring overflowed (got ${got})`);
  assert.equal(got + lost, 2 * M, `received ${got} + lost ${lost} = the ${2 * M} packets at A's and B's veths`);
  await hh.call({ op: 'stop' });
});

test('API-server latency from packetparser records: one handshake per connection, one round trip per request, bounded by the server', async (t) => {
  // The "API server" answers each request after 80 ms, behind the host interface; pod A talks to it.
  // Every packet is seen twice (A's veth and the host interface) and must be matched once.
  const hh = h as Harness;
  const a = topo.pod('a');
  const api = topo.world;
  const [C, R, DELAY] = [3, 5, 80];
  await sink(TCP_SLOW_ECHO, api.ns, api.ip, '7443', String(DELAY));
  await hh.start({ hostInterfaces: ['pp-ext'] }, { dataAggregationLevel: 'low' }, [a.ip], {}, [api.ip]);
  await hh.settle(300);
  const out = await a.ns.node(TCP_PING, [String(C), api.ip, '7443', String(R)]);
  assert.match(out, new RegExp(`done ${C} ${R}`));
  await hh.settle(600);
  const text = await hh.call<string>({ op: 'metrics' });
  const n = (name: string, suffix: string): number => metric(text, `networkobservability_adv_node_apiserver_${name}_${suffix}`);
  const hs = { count: n('tcp_handshake_latency', 'count'), sum: n('tcp_handshake_latency', 'sum') };
  const rtt = { count: n('latency', 'count'), sum: n('latency', 'sum') };
  t.diagnostic(`handshakes ${hs.count} (mean ${(hs.sum / hs.count).toFixed(2)} ms), round trips ${rtt.count} (mean ${(rtt.sum / rtt.count).toFixed(1)} ms)`);
  assert.equal(hs.count, C, 'each SYN matched by its SYN-ACK once, though both were seen at two points');
  assert.ok(hs.sum / C < 20, `handshakes on a veth take well under 20 ms (${hs.sum / C})`);
  // As in Retina, a request's round trip ends at the first packet that echoes its TSval: the server's
  // kernel acknowledges the request at once, and the answer 80 ms later echoes the same TSval and
  // must not count again.
  assert.equal(rtt.count, C * R, 'each request matched once');
  assert.ok(rtt.sum / rtt.count < DELAY / 2, `mean round trip ${rtt.sum / rtt.count} ms: the acknowledgement, not the answer`);
  assert.equal(metric(text, 'networkobservability_adv_node_apiserver_no_response', { no_response: 'no_response' }), 0);
  await hh.call({ op: 'stop' });
});
