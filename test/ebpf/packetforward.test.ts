/**
 * packetforward on a real kernel: the agent runs in a namespace whose default route leaves through
 * a veth; N UDP datagrams each way; forward_count deltas equal the interface's own rx/tx packet
 * counters; traffic on another (pod-like) veth is not counted; after SIGTERM no tc filter of ours.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, test } from 'node:test';
import { Netns, NsAgent, leftoversAfterStop, metric, requireKernel, steady, stopAll, vethPair } from './netns.js';
import { UDP_SEND, UDP_SINK } from './traffic.js';

const N = 200;
let node: Netns | undefined;
let peer: Netns | undefined;
let pod: Netns | undefined;
let agent: NsAgent | undefined;
const sinks: ChildProcess[] = [];

before(async () => {
  requireKernel();
  node = new Netns('fwd-node');
  peer = new Netns('fwd-peer');
  pod = new Netns('fwd-pod');
  vethPair(node, 'rtbpf-ext', '10.232.1.1', peer, 'rtbpf-gw', '10.232.1.2');
  vethPair(node, 'rtbpf-pod', '10.232.2.1', pod, 'rtbpf-eth', '10.232.2.2');
  node.run('ip', ['route', 'add', 'default', 'via', '10.232.1.2']);
  // Sinks on both ends so nothing is dropped with an ICMP reply.
  for (const [ns, ip] of [[node, '10.232.1.1'], [peer, '10.232.1.2'], [node, '10.232.2.1']] as const) {
    const sink = ns.spawnNode(UDP_SINK, [ip, '7000']);
    sinks.push(sink);
    await new Promise((r) => sink.stdout?.once('data', r));
  }
});

after(async () => {
  try {
    await stopAll(sinks);
    await agent?.[Symbol.asyncDispose]();
  } finally {
    node?.destroy();
    peer?.destroy();
    pod?.destroy();
  }
});

function reading(): { ingress: number; egress: number; rx: number; tx: number } {
  const text = (agent as NsAgent).metrics();
  return {
    ingress: metric(text, 'networkobservability_forward_count', { direction: 'ingress' }),
    egress: metric(text, 'networkobservability_forward_count', { direction: 'egress' }),
    rx: (node as Netns).ifStat('rtbpf-ext', 'rx_packets'),
    tx: (node as Netns).ifStat('rtbpf-ext', 'tx_packets'),
  };
}

for (const mode of ['tcx', 'clsact'] as const) {
  test(`${mode}: the agent starts`, async () => {
    await agent?.[Symbol.asyncDispose]();
    agent = new NsAgent(node as Netns, `enabledPlugin: [packetforward]\nmetricsIntervalDuration: 200ms\npacketForwardTcMode: ${mode}\n`);
    await agent.started(['packetforward']);
    const line = await agent.proc.waitForLog((l) => l.msg === 'eBPF hooks attached', 'hooks attached');
    assert.equal(line['mode'], mode);
  });

  test(`${mode}: N datagrams each way: forward deltas equal the interface counters`, async () => {
    const t0 = await steady(reading);
    await (node as Netns).node(UDP_SEND, [String(N), '10.232.1.2', '7000', '100']);
    await (peer as Netns).node(UDP_SEND, [String(N), '10.232.1.1', '7000', '100']);
    const t1 = await steady(reading);
    const d = { ingress: t1.ingress - t0.ingress, egress: t1.egress - t0.egress, rx: t1.rx - t0.rx, tx: t1.tx - t0.tx };
    assert.equal(d.ingress, d.rx, `ingress ${d.ingress} vs rx_packets ${d.rx}`);
    assert.equal(d.egress, d.tx, `egress ${d.egress} vs tx_packets ${d.tx}`);
    assert.ok(d.ingress >= N && d.egress >= N, `at least N each way: ${JSON.stringify(d)}`);
    const bytes = metric((agent as NsAgent).metrics(), 'networkobservability_forward_bytes', { direction: 'egress' });
    assert.ok(bytes >= N * 128, `forward_bytes egress ${bytes}`);
  });

  test(`${mode}: pod veth traffic is not counted`, async () => {
    const t0 = await steady(reading);
    await (pod as Netns).node(UDP_SEND, [String(N), '10.232.2.1', '7000', '100']);
    const t1 = await steady(reading);
    assert.equal(t1.ingress - t0.ingress, t1.rx - t0.rx);
    assert.equal(t1.egress - t0.egress, t1.tx - t0.tx);
    assert.ok(t1.ingress - t0.ingress < N, 'the pod traffic did not show up on the external interface');
  });

  test(`${mode}: after SIGTERM no tc filter, program or link of ours is left`, async () => {
    const ag = agent as NsAgent;
    const { code, owned } = await ag.terminate();
    assert.equal(code, 0, ag.proc.stderr.slice(-2000));
    assert.ok(owned.progs.length === 2, 'the agent held its two programs');
    assert.deepEqual(await leftoversAfterStop(node, ['rtbpf-ext'], owned), []);
    assert.equal((node as Netns).run('tc', ['qdisc', 'show', 'dev', 'rtbpf-ext']).includes('clsact'), false, 'the clsact qdisc we added is gone');
  });
}
