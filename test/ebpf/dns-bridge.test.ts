/**
 * dns on a node shaped like one with the bridge CNI, on a real kernel: the agent's namespace has a
 * bridge with two pods on it (A, a client; B, a DNS server) and its own DNS server on the bridge; a
 * third pod (D) on a routed veth is created after the agent started. Each message is counted exactly
 * once: A's queries to the node's server arrive on A's port and again on the bridge (the port's copy is
 * kept), the node's answers leave through the bridge and again through the port (the bridge's copy,
 * from retina_dns_egress); A to B is forwarded across the bridge (counted arriving on A's port, declined
 * leaving B's); D's answers leave through a veth that appeared while the agent ran, so they are counted
 * only if the egress program followed it. The egress program is on the bridge and D's veth, never on the
 * bridge's ports (what the node sends to A leaves the bridge device first): a pod E's veth, made after
 * the start and up before it joins the bridge (as a CNI may), is attached and then detached when it
 * becomes a port, and the node's answers to E are still counted once, from the bridge.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, test } from 'node:test';
import { Netns, NsAgent, leftoversAfterStop, metric, requireKernel, settled, stopAll, vethPair } from './netns.js';
import { DNS_CLIENT, DNS_SERVER } from './traffic.js';

const N = 20;
let node: Netns | undefined;
const pods: Netns[] = [];
const helpers: ChildProcess[] = [];
let agent: NsAgent | undefined;

/** A pod on the node's bridge: `port` in the node, eth0 in the pod. */
function bridgePod(n: Netns, tag: string, port: string, last: number): Netns {
  const p = new Netns(tag);
  pods.push(p);
  n.run('ip', ['link', 'add', port, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', p.name]);
  n.run('ip', ['link', 'set', port, 'master', 'rtbpf-br', 'up']);
  p.run('ip', ['addr', 'add', `10.235.0.${last}/24`, 'dev', 'eth0']);
  p.run('ip', ['-6', 'addr', 'add', `fd00:235::${last}/64`, 'dev', 'eth0', 'nodad']);
  p.run('ip', ['link', 'set', 'eth0', 'up']);
  return p;
}

async function server(n: Netns, v4: string, v6: string): Promise<void> {
  const srv = n.spawnNode(DNS_SERVER, [v4, v6]);
  helpers.push(srv);
  await new Promise((r) => srv.stdout?.once('data', r));
}

before(async () => {
  requireKernel();
  node = new Netns('dnsb-n');
  node.run('ip', ['link', 'add', 'rtbpf-br', 'type', 'bridge']);
  node.run('ip', ['addr', 'add', '10.235.0.1/24', 'dev', 'rtbpf-br']);
  node.run('ip', ['-6', 'addr', 'add', 'fd00:235::1/64', 'dev', 'rtbpf-br', 'nodad']);
  node.run('ip', ['link', 'set', 'rtbpf-br', 'up']);
  bridgePod(node, 'dnsb-a', 'rtbpf-ba', 2);
  const b = bridgePod(node, 'dnsb-b', 'rtbpf-bb', 3);
  await server(node, '10.235.0.1', 'fd00:235::1');
  await server(b, '10.235.0.3', 'fd00:235::3');
});

after(async () => {
  try {
    await stopAll(helpers);
    await agent?.[Symbol.asyncDispose]();
  } finally {
    for (const p of pods) p.destroy();
    node?.destroy();
  }
});

test('bridge, pods and a routed veth made after start: every query and answer counted once', async () => {
  const n = node as Netns;
  const [a] = pods as [Netns];
  agent = new NsAgent(n, 'enabledPlugin: [dns]\nmetricsIntervalDuration: 200ms\n');
  await agent.started(['dns']);
  const read = () => {
    const text = (agent as NsAgent).metrics();
    return { req: metric(text, 'networkobservability_dns_request_count'), resp: metric(text, 'networkobservability_dns_response_count') };
  };
  const exchange = async (what: string, client: Netns, v4: string, v6: string): Promise<void> => {
    const t0 = read();
    const out = JSON.parse(await client.node(DNS_CLIENT, [String(N), v4, v6])) as Record<string, number>;
    assert.deepEqual(out, { udp4: N, udp6: N, tcp: N }, `${what}: every query answered`);
    await settled(() => read().req + read().resp);
    const t1 = read();
    assert.deepEqual({ requests: t1.req - t0.req, responses: t1.resp - t0.resp }, { requests: 3 * N, responses: 3 * N }, what);
  };
  const attachedTo = (): string[] => (agent as NsAgent).proc.logLines().filter((l) => l.msg === 'interface attached').map((l) => String(l['interface']));
  await agent.proc.waitForLog((l) => l.msg === 'interface attached' && l['interface'] === 'rtbpf-br', 'retina_dns_egress on the bridge');
  assert.deepEqual(attachedTo().filter((i) => i.startsWith('rtbpf-')), ['rtbpf-br'], 'on the bridge, not on its ports');
  await exchange('pod A to the node\'s server on the bridge', a, '10.235.0.1', 'fd00:235::1');
  await exchange('pod A to pod B across the bridge', a, '10.235.0.3', 'fd00:235::3');

  // A routed pod whose veth appears now: the node's answers to it leave through that veth alone.
  const d = new Netns('dnsb-d');
  pods.push(d);
  vethPair(n, 'rtbpf-bd', '10.235.9.1', d, 'eth0', '10.235.9.2', ['fd00:235:9::1', 'fd00:235:9::2']);
  await agent.proc.waitForLog((l) => l.msg === 'interface attached' && l['interface'] === 'rtbpf-bd', 'retina_dns_egress on the new veth');
  await server(n, '10.235.9.1', 'fd00:235:9::1');
  await exchange('pod D (routed, veth made after start) to the node\'s server', d, '10.235.9.1', 'fd00:235:9::1');

  // Pod E: its veth up outside the bridge first (attached), then made a port (detached).
  const e = new Netns('dnsb-e');
  pods.push(e);
  n.run('ip', ['link', 'add', 'rtbpf-be', 'type', 'veth', 'peer', 'name', 'eth0', 'netns', e.name]);
  n.run('ip', ['link', 'set', 'rtbpf-be', 'up']);
  await agent.proc.waitForLog((l) => l.msg === 'interface attached' && l['interface'] === 'rtbpf-be', 'retina_dns_egress on E\'s veth before it joins the bridge');
  n.run('ip', ['link', 'set', 'rtbpf-be', 'master', 'rtbpf-br']);
  const gone = await agent.proc.waitForLog((l) => l.msg === 'interface detached' && l['interface'] === 'rtbpf-be', 'E\'s veth detached once a bridge port');
  assert.equal(gone['why'], 'no longer chosen');
  e.run('ip', ['addr', 'add', '10.235.0.5/24', 'dev', 'eth0']);
  e.run('ip', ['-6', 'addr', 'add', 'fd00:235::5/64', 'dev', 'eth0', 'nodad']);
  e.run('ip', ['link', 'set', 'eth0', 'up']);
  await exchange('pod E (a bridge port made after start) to the node\'s server on the bridge', e, '10.235.0.1', 'fd00:235::1');

  const { code, owned } = await agent.terminate();
  assert.equal(code, 0, agent.proc.stderr.slice(-2000));
  assert.ok(owned.links.length > 0 || owned.progs.length > 0, 'the agent held its programs');
  assert.deepEqual(await leftoversAfterStop(n, ['rtbpf-br', 'rtbpf-ba', 'rtbpf-bb', 'rtbpf-bd', 'rtbpf-be'], owned), []);
});
