/**
 * packetparser and a veth it cannot attach to, in the real agent (its own namespace, clsact mode):
 * a root qdisc that holds the handle clsact needs (ffff:) stands in the way, so creating the clsact
 * qdisc, and with it the attach, fails for real. The veth must show as a degraded source in /readyz, naming the
 * interface and the error, and in interface_attach_failed{plugin,interface}; both clear when the
 * veth attaches on a later retry (the qdisc removed) or goes (deleted).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Netns, NsAgent, metric, requireKernel, vethPair, type Readiness } from './netns.js';

const GAUGE = 'controlplane_networkobservability_interface_attach_failed';

let node: Netns | undefined;
let podA: Netns | undefined;
let podB: Netns | undefined;
let agent: NsAgent | undefined;

before(() => {
  requireKernel();
  node = new Netns('ppfail-node');
  podA = new Netns('ppfail-a');
  podB = new Netns('ppfail-b');
  vethPair(node, 'rtbpf-ppfa', '10.232.11.1', podA, 'rtbpf-ppfa-p', '10.232.11.2');
  vethPair(node, 'rtbpf-ppfb', '10.232.12.1', podB, 'rtbpf-ppfb-p', '10.232.12.2');
  for (const v of ['rtbpf-ppfa', 'rtbpf-ppfb']) node.run('tc', ['qdisc', 'replace', 'dev', v, 'root', 'handle', 'ffff:', 'pfifo_fast']);
});

after(async () => {
  try {
    await agent?.[Symbol.asyncDispose]();
  } finally {
    node?.destroy();
    podA?.destroy();
    podB?.destroy();
  }
});

function packetparser(): Readiness['plugins'][number] {
  const a = agent as NsAgent;
  const r = a.readyz();
  const p = r.plugins.find((x) => x.name === 'packetparser');
  assert.ok(p, JSON.stringify(r));
  return p;
}

test('a veth that cannot be attached shows in /readyz and in interface_attach_failed, and clears when it attaches or goes', async () => {
  agent = new NsAgent(node as Netns, 'enabledPlugin: [packetparser]\nenablePodLevel: true\ndataAggregationLevel: high\npacketParserTcMode: clsact\nmetricsIntervalDuration: 200ms\n');
  await agent.started(['packetparser']);
  const a = agent;
  const p = packetparser();
  assert.equal(p.state, 'degraded');
  assert.deepEqual(Object.keys(p.degraded ?? {}).sort(), ['veth rtbpf-ppfa', 'veth rtbpf-ppfb']);
  assert.match(p.degraded?.['veth rtbpf-ppfa'] ?? '', /^cannot attach to rtbpf-ppfa \(ifindex \d+\): veth rtbpf-ppfa: cannot create clsact qdisc on ifindex \d+: E[A-Z]+ \(\d+\)$/);
  let text = a.metrics();
  assert.equal(metric(text, GAUGE, { plugin: 'packetparser', interface: 'rtbpf-ppfa' }), 1);
  assert.equal(metric(text, GAUGE, { plugin: 'packetparser', interface: 'rtbpf-ppfb' }), 1);

  // The obstacle removed: the next retry attaches, and that veth's problem clears (the other stays).
  (node as Netns).run('tc', ['qdisc', 'del', 'dev', 'rtbpf-ppfa', 'root']);
  await a.until(() => (packetparser().degraded?.['veth rtbpf-ppfa'] === undefined ? true : undefined), 'rtbpf-ppfa to clear');
  assert.deepEqual(Object.keys(packetparser().degraded ?? {}), ['veth rtbpf-ppfb']);
  text = a.metrics();
  assert.doesNotMatch(text, /interface_attach_failed\{plugin="packetparser",interface="rtbpf-ppfa"\}/);
  assert.equal(metric(text, GAUGE, { plugin: 'packetparser', interface: 'rtbpf-ppfb' }), 1);

  // The failing veth deleted: its problem and its series go, and the plugin runs clean.
  (node as Netns).run('ip', ['link', 'del', 'rtbpf-ppfb']);
  await a.until(() => (packetparser().state === 'running' ? true : undefined), 'packetparser running');
  assert.doesNotMatch(a.metrics(), /interface_attach_failed\{/);
  const { code } = await a.terminate();
  assert.equal(code, 0);
});
