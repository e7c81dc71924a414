/**
 * The plugin manager's restart path with a real runtime failure: packetforward runs in the agent
 * (a real process in its own namespace), attached to one veth; the veth is deleted under it, taking
 * the tc programs with it (a lost attachment). The plugin must report the failure, the manager must
 * show it as failed in /readyz (naming the interface), count it, dispose the plugin and retry with
 * backoff; once the interface is back, the retry attaches to it again and the agent is ready.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Netns, NsAgent, metric, requireKernel, vethPair } from './netns.js';

let node: Netns | undefined;
let peer: Netns | undefined;
let agent: NsAgent | undefined;

before(() => {
  requireKernel();
  node = new Netns('lost-node');
  peer = new Netns('lost-peer');
  vethPair(node, 'rtbpf-lost', '10.232.9.1', peer, 'rtbpf-lostp', '10.232.9.2');
});

after(async () => {
  try {
    await agent?.[Symbol.asyncDispose]();
  } finally {
    node?.destroy();
    peer?.destroy();
  }
});

test('an interface deleted under packetforward fails the plugin, which is restarted once the interface is back', async () => {
  const a = new NsAgent(node as Netns, 'enabledPlugin: [packetforward]\npacketForwardInterfaces: [rtbpf-lost]\nmetricsIntervalDuration: 200ms\n');
  agent = a;
  await a.started(['packetforward']);
  assert.equal(a.readyz().status, 'ready');

  (node as Netns).run('ip', ['link', 'del', 'rtbpf-lost']);
  const failed = await a.until(() => a.readyz().plugins.find((p) => p.name === 'packetforward' && p.state === 'failed'), 'packetforward failed in /readyz');
  assert.match(failed.lastError ?? '', /interface rtbpf-lost \(ifindex \d+\) is gone/);
  assert.equal(a.readyz().status, 'not ready');
  await agent.proc.waitForLog((l) => l.msg === 'plugin failed while running; stopping it' && l['plugin'] === 'packetforward', 'the runtime failure logged');
  // The retry runs while the interface is missing, and fails (retryable: not permanent).
  await agent.proc.waitForLog((l) => l.msg === 'plugin failed; retrying' && /rtbpf-lost does not exist/.test(String(l['error'])), 'a retry that fails');
  const text = agent.metrics();
  assert.ok(metric(text, 'controlplane_networkobservability_plugin_manager_failed_to_reconcile', { reason: 'packetforward' }) >= 2);
  assert.equal(metric(text, 'controlplane_networkobservability_plugin_up', { plugin: 'packetforward' }), 0);
  assert.doesNotMatch(text, /networkobservability_forward_count\{/, 'the failed plugin left no series');

  vethPair(node as Netns, 'rtbpf-lost', '10.232.9.1', peer as Netns, 'rtbpf-lostp', '10.232.9.2');
  await a.until(() => (a.readyz().status === 'ready' ? true : undefined), 'ready again after the interface came back', 90_000);
  await a.until(() => (a.proc.logLines().filter((l) => l.msg === 'plugin started' && l['plugin'] === 'packetforward').length === 2 ? true : undefined), 'a second "plugin started"');
  const { code } = await agent.terminate();
  assert.equal(code, 0);
});
