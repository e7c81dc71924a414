/**
 * Never break the CNI: our clsact filters share the qdisc with filters that are not ours (a BPF
 * program of the test's own, foreign.bpf.c, standing in for Cilium or Calico eBPF, and a u32 filter).
 * The real agent runs packetforward (external interface) and packetparser (host interface and a pod
 * veth) in clsact mode in a namespace. A foreign filter attached after ours survives our stop (the
 * qdisc we created stays while it holds them) and still sees traffic; after `kill -9` and a restart
 * exactly one set of ours is attached (the dead run's leftovers are removed) and the foreign ones are
 * intact; a clean stop then leaves none of ours. A restart in TCX mode removes clsact leftovers too.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, test } from 'node:test';
import { bpfHelper } from './c-helper.js';
import { Netns, NsAgent, bpfIdsOf, requireKernel, stopAll, vethPair } from './netns.js';
import { attachForeignBpf, attachForeignU32, filters, foreignPackets, hasClsact, isOurs, ourNames } from './tc-shared.js';
import { UDP_SEND, UDP_SINK } from './traffic.js';

const EXT = 'rtbpf-ext';
const POD = 'rtbpf-pod';
const N = 100;
/** One set of ours, by interface and direction (kernel names: 15 characters). */
const EXPECTED: Record<string, Record<'ingress' | 'egress', string[]>> = {
  [EXT]: { ingress: ['packetforward_i', 'packetparser_ho'], egress: ['packetforward_e', 'packetparser_ho'] },
  [POD]: { ingress: ['packetparser_en'], egress: ['packetparser_en'] },
};
const DIRS = ['ingress', 'egress'] as const;

let node: Netns | undefined;
let peer: Netns | undefined;
let pod: Netns | undefined;
let agent: NsAgent | undefined;
const sinks: ChildProcess[] = [];
/** The foreign BPF filters: program id by interface (on ingress). */
const foreign = new Map<string, number>();

const config = (mode: string, aggregation: string): string =>
  `enabledPlugin: [packetforward, packetparser]\nenablePodLevel: true\ndataAggregationLevel: ${aggregation}\nmetricsIntervalDuration: 200ms\n` +
  `packetForwardInterfaces: [${EXT}]\npacketParserHostInterfaces: [${EXT}]\npacketForwardTcMode: ${mode}\npacketParserTcMode: ${mode}\n`;

async function startAgent(mode: string, aggregation = 'low'): Promise<NsAgent> {
  const a = new NsAgent(node as Netns, config(mode, aggregation));
  await a.started(['packetforward', 'packetparser']);
  await a.proc.waitForLog((l) => l.msg === 'endpoint attached' && l['interface'] === POD, `endpoint ${POD} attached`, 30_000);
  return a;
}

/** Our filters' names per interface and direction, and their program ids. */
function ours(): { names: Record<string, Record<string, string[]>>; ids: number[] } {
  const n = node as Netns;
  const names: Record<string, Record<string, string[]>> = {};
  const ids: number[] = [];
  for (const i of [EXT, POD]) {
    names[i] = {};
    for (const d of DIRS) {
      (names[i] as Record<string, string[]>)[d] = ourNames(n, i, d);
      ids.push(...filters(n, i, d).filter(isOurs).map((f) => f.progId ?? -1));
    }
  }
  return { names, ids };
}

/** The foreign filters are all still there, the same programs, and the qdiscs that hold them. */
function assertForeignIntact(): void {
  const n = node as Netns;
  for (const [i, id] of foreign) {
    assert.ok(hasClsact(n, i), `the clsact qdisc on ${i} is still there`);
    assert.ok(filters(n, i, 'ingress').some((f) => f.progId === id && f.progName === 'rtbpf_foreign'), `the foreign BPF filter on ${i} ingress`);
  }
  assert.ok(filters(n, EXT, 'egress').some((f) => f.kind === 'u32'), `the foreign u32 filter on ${EXT} egress`);
}

/** N datagrams from the peer and N from the pod into the node: each foreign program sees at least N more. */
async function assertForeignSeesTraffic(): Promise<void> {
  const before = new Map([...foreign].map(([i, id]) => [i, foreignPackets(id)]));
  await (peer as Netns).node(UDP_SEND, [String(N), '10.233.1.1', '7000', '64']);
  await (pod as Netns).node(UDP_SEND, [String(N), '10.233.2.1', '7000', '64']);
  for (const [i, id] of foreign) {
    const seen = foreignPackets(id) - (before.get(i) ?? 0);
    assert.ok(seen >= N, `the foreign program on ${i} saw ${seen} packets, expected at least ${N}`);
  }
}

before(async () => {
  requireKernel();
  node = new Netns('tco-node');
  peer = new Netns('tco-peer');
  pod = new Netns('tco-pod');
  vethPair(node, EXT, '10.233.1.1', peer, 'rtbpf-gw', '10.233.1.2');
  vethPair(node, POD, '10.233.2.1', pod, 'rtbpf-eth', '10.233.2.2');
  node.run('ip', ['route', 'add', 'default', 'via', '10.233.1.2']);
  for (const ip of ['10.233.1.1', '10.233.2.1']) sinks.push(await node.spawnReady(UDP_SINK, [ip, '7000']));
});

after(async () => {
  try {
    await stopAll(sinks);
    await agent?.[Symbol.asyncDispose]();
  } finally {
    for (const ns of [node, peer, pod]) ns?.destroy();
  }
});

test('clsact: a foreign filter attached after ours survives our stop and still sees traffic', async () => {
  const n = node as Netns;
  assert.equal(hasClsact(n, EXT) || hasClsact(n, POD), false, 'no qdisc before the agent: it creates them');
  agent = await startAgent('clsact');
  assert.deepEqual(ours().names, EXPECTED);
  const obj = bpfHelper('test/ebpf/foreign.bpf.c');
  for (const i of [EXT, POD]) foreign.set(i, attachForeignBpf(n, obj, i, 'ingress', 100));
  attachForeignU32(n, EXT, 'egress', 100);
  const { code } = await agent.terminate();
  assert.equal(code, 0, agent.proc.stderr.slice(-2000));
  assert.deepEqual(ours().ids, [], 'none of ours is left');
  assertForeignIntact();
  await assertForeignSeesTraffic();
});

/** Starts the agent in clsact mode and kills it (-9); returns the ids of the programs its filters left behind. */
async function killedClsactRun(): Promise<number[]> {
  await agent?.[Symbol.asyncDispose]();
  const killed = await startAgent('clsact');
  killed.proc.child.kill('SIGKILL');
  await killed.proc.waitExit(10_000);
  await killed[Symbol.asyncDispose]();
  assert.deepEqual(ours().names, EXPECTED, 'the killed run left its filters behind (the case under test)');
  return ours().ids;
}

test('clsact: after kill -9 and a restart, exactly one set of ours; the foreign filters are intact', async () => {
  const stale = await killedClsactRun();
  agent = await startAgent('clsact');
  const now = ours();
  assert.deepEqual(now.names, EXPECTED, 'one set of ours');
  const held = bpfIdsOf(agent.proc.pid).progs;
  for (const id of now.ids) assert.ok(held.includes(id) && !stale.includes(id), `filter program ${id} belongs to the running agent`);
  const logs = agent.proc.logLines();
  assert.equal(logs.find((l) => l.msg === 'eBPF hooks attached' && l['plugin'] === 'packetforward')?.['staleFiltersRemoved'], 2);
  const removed = logs.filter((l) => l.msg === 'stale tc filters of an earlier run removed').reduce((n, l) => n + Number(l['count']), 0);
  assert.equal(removed, 4, 'packetparser removed two on the host interface and two on the pod veth');
  assertForeignIntact();
  await assertForeignSeesTraffic();
});

test('clsact: a clean stop after the restart leaves none of ours and the foreign filters', async () => {
  const a = agent as NsAgent;
  const { code } = await a.terminate();
  assert.equal(code, 0, a.proc.stderr.slice(-2000));
  assert.deepEqual(ours().ids, []);
  assertForeignIntact();
  await assertForeignSeesTraffic();
});

test('tcx: a restart in TCX mode removes the clsact leftovers of a killed run, and only those', async () => {
  await killedClsactRun();
  agent = await startAgent('tcx');
  assert.deepEqual(ours().ids, [], 'no clsact filter of ours next to the TCX links');
  assertForeignIntact();
  await assertForeignSeesTraffic();
  const { code } = await agent.terminate();
  assert.equal(code, 0, agent.proc.stderr.slice(-2000));
  assertForeignIntact();
});

test('clsact: a restart at high aggregation removes the host programs a killed run left, which it does not attach', async () => {
  await killedClsactRun();
  agent = await startAgent('clsact', 'high');
  // High aggregation: no host programs; the external interface is a veth too, so it gets the endpoint programs.
  assert.deepEqual(ours().names, {
    [EXT]: { ingress: ['packetforward_i', 'packetparser_en'], egress: ['packetforward_e', 'packetparser_en'] },
    [POD]: EXPECTED[POD],
  });
  assertForeignIntact();
  const { code } = await agent.terminate();
  assert.equal(code, 0, agent.proc.stderr.slice(-2000));
  assert.deepEqual(ours().ids, []);
  assertForeignIntact();
});

/**
 * Two runs of ours in one process, one after the other on one interface: the second removes the
 * first's filter as a leftover, and the kernel gives its own filter the same handle and priority.
 * Detaching the first must then leave the second's filter alone.
 */
const TWO_RUNS = `
const [ffi, ifname] = process.argv.slice(1);
const { attachTc, loadSys, openBpfObject } = await import(ffi);
const ifindex = loadSys().ifNameToIndex(ifname);
const load = () => openBpfObject('packetforward', { programs: ['packetforward_ingress'] }).program('packetforward_ingress');
const first = attachTc(load(), ifindex, 'ingress');
const second = attachTc(load(), ifindex, 'ingress');
first[Symbol.dispose]();
console.log(JSON.stringify({ first: [first.handle, first.priority], second: [second.handle, second.priority], staleRemoved: second.staleRemoved }));
`;

test('clsact: detaching an older attachment leaves a newer run’s filter that took over its handle and priority', async () => {
  requireKernel();
  const ns = new Netns('tco-two');
  try {
    ns.run('ip', ['link', 'add', 'rtbpf-two', 'type', 'veth', 'peer', 'name', 'rtbpf-two-p']);
    const ffi = new URL('../../src/ffi/linux/index.js', import.meta.url).href;
    const r = JSON.parse(await ns.node(TWO_RUNS, [ffi, 'rtbpf-two'])) as { first: number[]; second: number[]; staleRemoved: number };
    assert.equal(r.staleRemoved, 1, 'the second run removed the first run’s filter');
    assert.deepEqual(r.second, r.first, 'the same handle and priority (the case under test)');
    assert.deepEqual(ourNames(ns, 'rtbpf-two', 'ingress'), ['packetforward_i'], 'the second run’s filter is still attached');
  } finally {
    ns.destroy();
  }
});
