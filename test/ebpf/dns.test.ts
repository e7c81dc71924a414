/**
 * dns on a real kernel: a DNS server in one namespace, a client in another, the agent on the router
 * between them (so every message is forwarded: seen arriving and leaving, counted once) and then on
 * the client itself (messages it sends and receives). Counts are exact. UDP and TCP, IPv4 and IPv6.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, test } from 'node:test';
import { Netns, NsAgent, leftoversAfterStop, metric, requireKernel, settled, stopAll, vethPair } from './netns.js';
import { DNS_CLIENT, DNS_SERVER } from './traffic.js';

const N = 25;
let client: Netns | undefined;
let router: Netns | undefined;
let server: Netns | undefined;
const helpers: ChildProcess[] = [];
const agents: NsAgent[] = [];

before(async () => {
  requireKernel();
  client = new Netns('dns-c');
  router = new Netns('dns-r');
  server = new Netns('dns-s');
  vethPair(client, 'rtbpf-c', '10.234.1.2', router, 'rtbpf-rc', '10.234.1.1', ['fd00:234:1::2', 'fd00:234:1::1']);
  vethPair(server, 'rtbpf-s', '10.234.2.2', router, 'rtbpf-rs', '10.234.2.1', ['fd00:234:2::2', 'fd00:234:2::1']);
  router.run('sysctl', ['-qw', 'net.ipv4.ip_forward=1']);
  router.run('sysctl', ['-qw', 'net.ipv6.conf.all.forwarding=1']);
  client.run('ip', ['route', 'add', 'default', 'via', '10.234.1.1']);
  client.run('ip', ['-6', 'route', 'add', 'default', 'via', 'fd00:234:1::1']);
  server.run('ip', ['route', 'add', 'default', 'via', '10.234.2.1']);
  server.run('ip', ['-6', 'route', 'add', 'default', 'via', 'fd00:234:2::1']);
  const srv = server.spawnNode(DNS_SERVER, ['10.234.2.2', 'fd00:234:2::2']);
  helpers.push(srv);
  await new Promise((r) => srv.stdout?.once('data', r));
});

after(async () => {
  try {
    await stopAll(helpers);
    for (const a of agents) await a[Symbol.asyncDispose]();
  } finally {
    client?.destroy();
    router?.destroy();
    server?.destroy();
  }
});

async function exactCounts(where: Netns): Promise<void> {
  const agent = new NsAgent(where, 'enabledPlugin: [dns]\nmetricsIntervalDuration: 200ms\n');
  agents.push(agent);
  await agent.started(['dns']);
  const read = () => {
    const text = agent.metrics();
    return { req: metric(text, 'networkobservability_dns_request_count'), resp: metric(text, 'networkobservability_dns_response_count') };
  };
  const t0 = read();
  const out = JSON.parse(await (client as Netns).node(DNS_CLIENT, [String(N), '10.234.2.2', 'fd00:234:2::2'])) as Record<string, number>;
  assert.deepEqual(out, { udp4: N, udp6: N, tcp: N });
  await settled(() => read().req + read().resp);
  const t1 = read();
  assert.equal(t1.req - t0.req, 3 * N, 'dns_request_count');
  assert.equal(t1.resp - t0.resp, 3 * N, 'dns_response_count');
  const { code, owned } = await agent.terminate();
  assert.equal(code, 0, agent.proc.stderr.slice(-2000));
  assert.ok(owned.progs.length > 0, 'the agent held its socket filter program');
  assert.deepEqual(await leftoversAfterStop(undefined, [], owned), []);
}

test('on the router: each forwarded request and response counted once', async () => {
  await exactCounts(router as Netns);
});

test('on the client: each request sent and response received counted once', async () => {
  await exactCounts(client as Netns);
});
