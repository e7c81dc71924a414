/**
 * The agent's Hubble service end to end, with a grpc-js client: a real API server (the harness), the
 * built `bin/retina-agent` processes on this host, and real kernel traffic between "pods" (network
 * namespaces on a bridge whose IPs are the pods' status IPs, as in pod-flows). Local context: the
 * agents watch the pods of their node. Checks the Hubble flows of a TCP transfer (packetparser), an
 * nftables drop with its kernel reason (dropreason) and DNS as L7 (dns), with the pods' names and
 * workloads; history (number, first, since, until), follow, and a stalled follower that gets a
 * LostEvent without raising the agent's ring-buffer losses; ServerStatus over TCP and the unix
 * socket; Peer Notify listing both nodes; GetNamespaces; UNIMPLEMENTED; enriched flows with pod-level metrics off;
 * hubble disabled = nothing listening; SIGTERM closes the server.
 * Needs root, BTF and the built native objects; never skips.
 */
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { RestClient } from '../../src/k8s/index.js';
import { loadHubbleProtos } from '../../src/server/hubble/index.js';
import { AgentProcess, ROOT, agentEnv, freePort, get } from '../e2e/agent-process.js';
import { dropUdp9999, requireKernel } from '../ebpf/netns.js';
import { DNS_CLIENT, DNS_SERVER, TCP_SEND, TCP_SINK, UDP_SEND } from '../ebpf/traffic.js';
import { deleteNamespace, eventually, startCluster, type Cluster } from './harness.js';
import { uniqueId } from './operator-helpers.js';
import { agentFollowers, followCounted } from './hubble-tools.js';
import { addPods, createNode, deleteNode, type TestPod } from './pod-flows-kube.js';
import { PodNet } from './pod-flows-net.js';
import { holdDropsForThisFile } from '../ebpf/drop-lock.js';

// Its drops (or losses) and the node-level counts, apart from every other lane's (drop-lock.ts).
holdDropsForThisFile();

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const protos = loadHubbleProtos(join(ROOT, 'proto', 'hubble'));
const HOST = '127.0.45.1';
const MAX_FLOWS = 4096;

function unary(client: Obj, method: string, req: Obj = {}): Promise<Obj> {
  return new Promise((resolve, reject) => client[method](req, (e: Error | null, r: Obj) => (e ? reject(e) : resolve(r))));
}

function stream(client: Obj, method: string, req: Obj): Promise<{ msgs: Obj[]; err: grpc.ServiceError | undefined }> {
  return new Promise((resolve) => {
    const msgs: Obj[] = [];
    const call = client[method](req) as grpc.ClientReadableStream<Obj>;
    call.on('data', (m: Obj) => msgs.push(m));
    call.on('error', (err: grpc.ServiceError) => resolve({ msgs, err }));
    call.on('end', () => resolve({ msgs, err: undefined }));
  });
}

const flowsOf = async (client: Obj, req: Obj = {}): Promise<Obj[]> => {
  const r = await stream(client, 'GetFlows', req);
  if (r.err) throw r.err;
  return r.msgs.filter((m) => m['flow']).map((m) => m['flow'] as Obj);
};

/** Sum of lost_events_counter{type="kernel"} in an exposition. */
const kernelLosses = (body: string): number => body.split('\n')
  .filter((l) => l.startsWith('controlplane_networkobservability_lost_events_counter{') && l.includes('type="kernel"'))
  .reduce((s, l) => s + Number(l.split(' ').pop()), 0);

describe('the agent\'s Hubble service against a real API server and kernel', { timeout: 240_000 }, () => {
  let cluster: Cluster;
  let client: RestClient;
  let net: PodNet | undefined;
  let agent: AgentProcess | undefined;
  let plain: AgentProcess | undefined;
  let observer: Obj;
  let httpPort = 0;
  let grpcPort = 0;
  const dir = mkdtempSync(join(tmpdir(), 'hubble-'));
  const socket = join(dir, 'hubble.sock');
  const id = uniqueId('hb');
  const nodes = [{ name: `${id}-a`, ip: '172.18.97.1' }, { name: `${id}-b`, ip: '172.18.97.2' }] as const;
  const nsA = `${id}-a`;
  const nsB = `${id}-b`;
  const pods: Record<'cli' | 'srv', TestPod> = {} as never;

  const startAgent = async (lines: string[], nodeName: string): Promise<{ agent: AgentProcess; port: number }> => {
    const config = join(dir, `${uniqueId('cfg')}.yaml`);
    writeFileSync(config, ['apiServer:', '  host: 127.0.0.1', '  port: 0', 'logLevel: info', 'remoteContext: false', ...lines, ''].join('\n'));
    const a = new AgentProcess({ args: ['--config', config, '--kubeconfig', cluster.kubeconfig], env: agentEnv({ NODE_NAME: nodeName }) });
    return { agent: a, port: await a.listening(30_000) };
  };

  before(async () => {
    requireKernel();
    cluster = await startCluster();
    client = cluster.client;
    for (const n of nodes) await createNode(client, n.name, n.ip);
    net = new PodNet('hb');
    Object.assign(pods, await addPods(client, net, nodes[0].name, [['cli', nsA, 11], ['srv', nsB, 12]], '10.245.0', 'fd00:245::'));
    const srv = pods.srv.ns;
    srv.run('nft', ['-f', '-'], dropUdp9999('hb'));
    await srv.serve(TCP_SINK, [srv.ip4, '8080']);
    await srv.serve(DNS_SERVER, [srv.ip4, srv.ip6]);

    grpcPort = await freePort();
    const plugins = ['packetparser', 'dropreason', 'dns'];
    ({ agent, port: httpPort } = await startAgent([
      'enablePodLevel: true', 'bypassLookupIPOfInterest: true', 'dataAggregationLevel: high', 'packetParserHostInterfaces: []',
      `enabledPlugin: [${plugins.join(', ')}]`,
      'hubble:', '  enabled: true', `  listenAddress: "${HOST}:${grpcPort}"`, `  socketPath: ${socket}`, `  maxFlows: ${MAX_FLOWS}`,
    ], nodes[0].name));
    for (const p of plugins) await agent.waitForLog((l) => l.msg === 'plugin started' && l['plugin'] === p, `plugin ${p} started`, 30_000);
    await agent.waitForLog((l) => l.msg === 'IP cache synced', 'IP cache synced', 30_000);
    observer = new protos.ObserverClient(`${HOST}:${grpcPort}`, grpc.credentials.createInsecure()) as unknown as Obj;
  });

  after(async () => {
    observer?.['close']();
    await agent?.[Symbol.asyncDispose]();
    await plain?.[Symbol.asyncDispose]();
    if (client) {
      await deleteNamespace(client, nsA);
      await deleteNamespace(client, nsB);
      for (const n of nodes) await deleteNode(client, n.name);
    }
    net?.destroy();
    rmSync(dir, { recursive: true, force: true });
    await cluster?.[Symbol.asyncDispose]();
  });

  /** Asserts a Hubble endpoint is this pod: namespace, name, workload, and its app label among its labels. */
  const assertPod = (e: Obj | undefined, p: 'cli' | 'srv'): void => {
    const { labels, ...rest } = e ?? {};
    assert.deepEqual(rest, { namespace: pods[p].namespace, pod_name: pods[p].name, workloads: [{ name: p, kind: 'Deployment' }] });
    assert.ok(Array.isArray(labels) && labels.includes(`k8s:app=${p}`), JSON.stringify(labels));
  };
  const between = (f: Obj): boolean => f['IP']?.['source'] === pods.cli.ns.ip4 && f['IP']?.['destination'] === pods.srv.ns.ip4;

  /**
   * Follows with `req`'s filters, runs `trigger`, and resolves with the flows received until `done`
   * says enough (or rejects after 20 s). Following from before the traffic keeps the test free of
   * the host's other flows (other suites' drops share the ring and can push ours out of history).
   */
  const follow = async (req: Obj, trigger: () => Promise<unknown>, done: (flows: Obj[]) => boolean, what: string, flows: Obj[] = []): Promise<Obj[]> => {
    const call = await followCounted(httpPort, () => observer['GetFlows']({ ...req, follow: true }) as grpc.ClientReadableStream<Obj>);
    let lost = 0;
    try {
      const got = new Promise<void>((resolve, reject) => {
        call.on('data', (m: Obj) => {
          if (m['flow']) flows.push(m['flow'] as Obj);
          if (m['lost_events']) lost += Number(m['lost_events']['num_events_lost'] ?? 0);
          if (done(flows)) resolve();
        });
        call.on('error', (e: grpc.ServiceError) => (e.code === grpc.status.CANCELLED ? undefined : reject(e)));
      });
      await trigger();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([got, new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`no ${what} within 20 s (got ${flows.length} flows${lost ? `; the follower was told it lost ${lost} flows that the ring overwrote first` : ''})`)), 20_000)))]);
      clearTimeout(timer);
      return flows;
    } finally {
      call.cancel();
    }
  };

  it('an nftables drop is a DROPPED flow with its kernel reason, the pods, their workloads and the node', async () => {
    const flows = await follow({ whitelist: [{ source_ip: [pods.cli.ns.ip4], verdict: ['DROPPED'], destination_port: ['9999'] }] },
      () => pods.cli.ns.node(UDP_SEND, ['5', pods.srv.ns.ip4, '9999', '64']), (fs) => fs.some((f) => between(f) && f['l4']?.['UDP']), 'drop');
    const drop = flows.find((f) => between(f)) as Obj;
    assert.equal(drop['Summary'], 'drop reason: NETFILTER_DROP');
    assertPod(drop['source'], 'cli');
    assertPod(drop['destination'], 'srv');
    assert.equal(drop['node_name'], nodes[0].name);
    assert.equal(drop['event_type']['type'], 1);
    assert.equal(drop['IP']['ipVersion'], 'IPv4');
  });

  it('a TCP transfer gives FORWARDED L3/L4 flows between the pods (packetparser)', async () => {
    const flows = await follow({ whitelist: [{ source_ip: [pods.cli.ns.ip4], destination_ip: [pods.srv.ns.ip4], verdict: ['FORWARDED'], destination_port: ['8080'] }] },
      () => pods.cli.ns.node(TCP_SEND, ['20000', pods.srv.ns.ip4, '8080']), (fs) => fs.some((f) => f['l4']?.['TCP']), 'forwarded TCP flow');
    const fwd = flows.find((f) => f['l4']?.['TCP']) as Obj;
    assert.equal(fwd['Type'], 'L3_L4');
    assertPod(fwd['source'], 'cli');
    assertPod(fwd['destination'], 'srv');
    assert.ok(['INGRESS', 'EGRESS'].includes(fwd['traffic_direction']), JSON.stringify(fwd));
  });

  it('DNS is an L7 flow with the query', async () => {
    const isQuery = (f: Obj): boolean => f['l7']?.['dns']?.['query'] === 'svc0.rtbpf.test.' && f['l7']['type'] === 'REQUEST' && between(f);
    const flows = await follow({ whitelist: [{ source_ip: [pods.cli.ns.ip4], protocol: ['dns'] }] },
      () => pods.cli.ns.node(DNS_CLIENT, ['1', pods.srv.ns.ip4, pods.srv.ns.ip6]), (fs) => fs.some(isQuery), 'DNS query'); // asks svc0.rtbpf.test
    const dns = flows.find(isQuery) as Obj;
    assert.equal(dns['Type'], 'L7');
    assert.deepEqual(dns['l7']['dns']['qtypes'], ['A']);
    assertPod(dns['source'], 'cli');
    assert.equal(dns['event_type']['type'], 129);
  });

  it('filters: allow and deny lists pick exactly the flows they name; a bad filter is INVALID_ARGUMENT naming the field', async () => {
    // Drops, DNS and TCP from the client pod; each filter must keep exactly its kind.
    const tcpSeen = (fs: Obj[]): boolean => fs.some((f) => f['l4']?.['TCP']?.['destination_port'] === 8080);
    const got = { drops: [] as Obj[], dns: [] as Obj[], notDropped: [] as Obj[] };
    const enough = (): boolean => got.drops.length >= 3 && got.dns.length >= 1 && tcpSeen(got.notDropped);
    let endTraffic: () => void = () => undefined;
    const trafficDone = new Promise<void>((r) => (endTraffic = r));
    const traffic = (): Promise<void> => sendTraffic().finally(endTraffic);
    const sendTraffic = async (): Promise<void> => {
      // Once the agent counts all three follows (each of them waits only for a stream of its own to be counted).
      await eventually('the three follows counted by the agent', 30_000, async () => (await agentFollowers(httpPort)) >= 3, 50);
      // Up to three rounds: the agent's ring (4 096) takes every veth and kernel drop of the machine, and a filtering
      // follower that falls that far behind beside the other lanes' floods is moved on past what it missed (a full
      // run once saw none of the three drops). Each filter is still checked on every flow it gave.
      for (let round = 0; round < 3 && !enough(); round++) {
        await pods.cli.ns.node(UDP_SEND, ['3', pods.srv.ns.ip4, '9999', '64']);
        await pods.cli.ns.node(DNS_CLIENT, ['1', pods.srv.ns.ip4, pods.srv.ns.ip6]);
        await pods.cli.ns.node(TCP_SEND, ['2000', pods.srv.ns.ip4, '8080']);
        const until = Date.now() + 5000;
        while (!enough() && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
      }
    };
    const [drops, dns, notDropped] = await Promise.all([
      // Their 20 s run from the end of the traffic, as the third's.
      follow({ whitelist: [{ source_pod: [`${nsA}/cli`], verdict: ['DROPPED'] }] }, () => trafficDone, (fs) => fs.length >= 3, 'drops of the cli pod', got.drops),
      follow({ whitelist: [{ source_ip: [pods.cli.ns.ip4], protocol: ['dns'] }] }, () => trafficDone, (fs) => fs.length >= 1, 'DNS flows', got.dns),
      follow({ whitelist: [{ source_ip: [pods.cli.ns.ip4] }], blacklist: [{ verdict: ['DROPPED'] }] }, traffic, tcpSeen, 'TCP flows', got.notDropped),
    ]);
    for (const f of drops) {
      assert.equal(f['verdict'], 'DROPPED');
      assert.equal(f['source']['pod_name'], pods.cli.name);
    }
    assert.ok(dns.every((f) => f['l7']?.['dns']), JSON.stringify(dns[0]));
    assert.ok(notDropped.every((f) => f['verdict'] !== 'DROPPED'));
    const bad = await stream(observer, 'GetFlows', { whitelist: [{ source_ip: ['10.0.0.1', 'x'] }] });
    assert.equal(bad.err?.code, grpc.status.INVALID_ARGUMENT);
    assert.match(bad.err?.details ?? '', /whitelist\[0\]\.source_ip\[1\]/);
  });

  it('number, first, since and until select from the ring; every response carries node_name and time', async () => {
    const all = await stream(observer, 'GetFlows', { number: 5 });
    assert.equal(all.err, undefined);
    assert.equal(all.msgs.length, 5);
    for (const m of all.msgs) {
      assert.equal(m['node_name'], nodes[0].name);
      assert.ok(m['time']['seconds'] > 1_700_000_000, JSON.stringify(m['time']));
    }
    const ms = (f: Obj): number => f['time']['seconds'] * 1000 + (f['time']['nanos'] ?? 0) / 1e6;
    const firsts = await flowsOf(observer, { number: 3, first: true });
    const lasts = await flowsOf(observer, { number: 3 });
    assert.equal(firsts.length, 3);
    assert.equal(lasts.length, 3);
    assert.notDeepEqual(firsts, lasts, 'the ring holds more than 6 flows: its first three are not its last three');
    // Bounds from the newest flows (the oldest may be overwritten meanwhile by the host's traffic).
    const mid = Math.min(...lasts.map(ms));
    const ts = { seconds: Math.floor(mid / 1000), nanos: Math.round((mid % 1000) * 1e6) };
    const since = await flowsOf(observer, { since: ts });
    assert.ok(since.length > 0 && since.every((f) => ms(f) >= mid - 0.001), 'since');
    const until = await flowsOf(observer, { until: ts });
    assert.ok(until.length > 0 && until.every((f) => ms(f) <= mid + 0.001), 'until');
  });

  it('ServerStatus over TCP and over the unix socket', async () => {
    const st = await unary(observer, 'ServerStatus');
    assert.equal(st['max_flows'], MAX_FLOWS);
    assert.ok(st['seen_flows'] > 0 && st['num_flows'] > 0 && st['num_flows'] <= MAX_FLOWS, JSON.stringify(st));
    assert.ok(st['uptime_ns'] > 0);
    assert.match(st['version'], /retina-ts/);
    assert.ok(st['flows_rate'] > 0, 'flows of the last minute');
    const viaSocket = new protos.ObserverClient(`unix:${socket}`, grpc.credentials.createInsecure()) as unknown as Obj;
    try {
      const st2 = await unary(viaSocket, 'ServerStatus');
      assert.ok(st2['seen_flows'] >= st['seen_flows']);
    } finally {
      viaSocket['close']();
    }
  });

  it('a follower that stops reading gets a LostEvent and the agent loses nothing from its kernel rings', async () => {
    const before = kernelLosses((await get(httpPort, '/metrics')).body);
    const follow = observer['GetFlows']({ follow: true }) as grpc.ClientReadableStream<Obj>;
    const msgs: Obj[] = [];
    follow.on('data', (m: Obj) => msgs.push(m));
    follow.on('error', () => undefined);
    await eventually('the follower sees live flows', 20_000, async () => {
      await pods.cli.ns.node(UDP_SEND, ['3', pods.srv.ns.ip4, '9999', '64']);
      return msgs.some((m) => m['flow'] && between(m['flow']));
    }, 500);
    follow.pause();
    // 12 000 drops: far more than the ring (4 096) and than HTTP/2 buffers for a reader that reads nothing.
    const seen0 = (await unary(observer, 'ServerStatus'))['seen_flows'] as number;
    await pods.cli.ns.node(UDP_SEND, ['12000', pods.srv.ns.ip4, '9999', '64'], 60_000);
    await eventually('the ring has moved on', 20_000, async () => (await unary(observer, 'ServerStatus'))['seen_flows'] >= seen0 + 12_000);
    const n = msgs.length;
    follow.resume();
    const lost = await eventually('a LostEvent', 20_000, async () => msgs.slice(n).find((m) => m['lost_events']));
    follow.cancel();
    assert.equal(lost['lost_events']['source'], 'HUBBLE_RING_BUFFER');
    assert.ok(lost['lost_events']['num_events_lost'] > 0);
    const body = (await get(httpPort, '/metrics')).body;
    assert.equal(kernelLosses(body), before, 'the kernel ring buffers lost nothing while the client stalled');
    assert.match(body, /controlplane_networkobservability_hubble_flows_lost_total [1-9]/);
    assert.match(body, /controlplane_networkobservability_hubble_flows_seen_total [1-9]/);
  });

  it('Peer Notify lists both nodes at their InternalIP and the Hubble port', async () => {
    const peer = new protos.PeerClient(`${HOST}:${grpcPort}`, grpc.credentials.createInsecure()) as unknown as Obj;
    const call = peer['Notify']({}) as grpc.ClientReadableStream<Obj>;
    const got: Obj[] = [];
    call.on('data', (m: Obj) => got.push(m));
    call.on('error', () => undefined);
    try {
      await eventually('both nodes', 10_000, async () => nodes.every((n) => got.some((m) => m['name'] === n.name)));
      for (const n of nodes) assert.deepEqual(got.find((m) => m['name'] === n.name), { name: n.name, address: `${n.ip}:${grpcPort}`, type: 'PEER_ADDED' });
    } finally {
      call.cancel();
      peer['close']();
    }
  });

  it('GetNamespaces lists the namespaces of the pods whose flows the agent saw (Hubble UI\'s list), in cluster "default"', async () => {
    const r = await unary(observer, 'GetNamespaces');
    const mine = (r['namespaces'] as Obj[]).filter((n) => n['namespace'] === nsA || n['namespace'] === nsB);
    assert.deepEqual(mine, [{ cluster: 'default', namespace: nsA }, { cluster: 'default', namespace: nsB }].sort((a, b) => a.namespace.localeCompare(b.namespace)));
  });

  it('the RPCs not served answer UNIMPLEMENTED', async () => {
    const r = await stream(observer, 'GetDebugEvents', {});
    assert.equal(r.err?.code, grpc.status.UNIMPLEMENTED);
  });

  it('with pod-level metrics off, the ring still gets enriched flows; with hubble off nothing listens', async () => {
    const port = await freePort();
    const off = await freePort();
    const b = await startAgent([
      'enablePodLevel: false', 'enabledPlugin: [dropreason]',
      'hubble:', '  enabled: true', `  listenAddress: "127.0.45.2:${port}"`,
    ], nodes[0].name);
    plain = b.agent;
    await plain.waitForLog((l) => l.msg === 'plugin started' && l['plugin'] === 'dropreason', 'dropreason started', 30_000);
    await plain.waitForLog((l) => l.msg === 'IP cache synced', 'IP cache synced', 30_000);
    const o2 = new protos.ObserverClient(`127.0.45.2:${port}`, grpc.credentials.createInsecure()) as unknown as Obj;
    try {
      // Drops until one shows up enriched (following would need a second helper; the filter keeps the query small).
      const drop = await eventually('an enriched drop', 20_000, async () => {
        await pods.cli.ns.node(UDP_SEND, ['3', pods.srv.ns.ip4, '9999', '64']);
        return (await flowsOf(o2, { number: 10, whitelist: [{ source_ip: [pods.cli.ns.ip4], verdict: ['DROPPED'] }] })).find((f) => between(f));
      }, 500);
      assertPod(drop['source'], 'cli');
    } finally {
      o2['close']();
    }
    await plain[Symbol.asyncDispose]();
    // The same config without hubble.enabled: the address stays closed.
    const c = await startAgent(['enabledPlugin: []', 'hubble:', `  listenAddress: "127.0.45.2:${off}"`], nodes[0].name);
    plain = c.agent;
    const refused = await new Promise<string>((resolve) => {
      const s = connect({ host: '127.0.45.2', port: off });
      s.once('connect', () => {
        s.destroy();
        resolve('connected');
      });
      s.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
    });
    assert.equal(refused, 'ECONNREFUSED');
  });

  it('SIGTERM ends open streams and closes the server; the agent exits 0', async () => {
    const a = agent as AgentProcess;
    const follow = await followCounted(httpPort, () => observer['GetFlows']({ follow: true }) as grpc.ClientReadableStream<Obj>);
    const ended = new Promise<string>((resolve) => {
      follow.on('data', () => undefined);
      follow.on('end', () => resolve('end'));
      follow.on('error', (e: grpc.ServiceError) => resolve(`error ${e.code}`));
    });
    a.child.kill('SIGTERM');
    const how = await Promise.race([ended, new Promise<string>((r) => setTimeout(() => r('still open'), 10_000))]);
    assert.ok(how === 'end' || how.startsWith('error'), how);
    const exit = await a.waitExit(15_000);
    assert.equal(exit.code, 0);
    const refused = await new Promise<string>((resolve) => {
      const s = connect({ host: HOST, port: grpcPort });
      s.once('connect', () => {
        s.destroy();
        resolve('connected');
      });
      s.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
    });
    assert.equal(refused, 'ECONNREFUSED');
  });
});
