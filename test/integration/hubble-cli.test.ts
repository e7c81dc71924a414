/**
 * The real `hubble` CLI (both pins: Cilium v1.18.4 and v1.19.7) and `hubble-relay` (v1.18.4), built by hack/hubble/build.sh, against
 * two of our agents on this host: a real API server (the harness), real kernel traffic between "pods"
 * (network namespaces whose IPs are the pods' status IPs). Agent A (node A: packetparser, dropreason,
 * dns) and agent B (node B: dropreason) listen on 127.0.49.1 and 127.0.49.2, the InternalIPs of their
 * Node objects, so A's peer service hands both to the relay. Both see the kernel's drops (one kernel)
 * and name them with their own node.
 * Checks `hubble observe -o json` (pods, verdict, drop reason), its filters (--pod, --namespace,
 * --verdict, --protocol dns, --last N, --follow), `hubble status`, and one merged stream of both
 * nodes through one relay (`hubble observe` and `hubble list nodes` against it), each with both CLIs;
 * with the 1.19 CLI, --cel-expression on the kernel's drops and its text output (which asks for a
 * field mask) printing what it prints from whole flows. Agent A also serves Cilium's hubble_* metrics
 * (local context, pod context and the pods' app label from its own pod watch).
 * Needs root, BTF, the built native objects and the hubble tools; never skips.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { RestClient } from '../../src/k8s/index.js';
import { AgentProcess, agentEnv, freePort, get } from '../e2e/agent-process.js';
import { dropUdp9999, requireKernel } from '../ebpf/netns.js';
import { DNS_CLIENT, DNS_SERVER, UDP_SEND } from '../ebpf/traffic.js';
import { deleteNamespace, eventually, startCluster, type Cluster } from './harness.js';
import { uniqueId } from './operator-helpers.js';
import { addPods, createNode, deleteNode, type TestPod } from './pod-flows-kube.js';
import { PodNet } from './pod-flows-net.js';
import { HUBBLE_CLIS, followCounted, hubble, hubbleTools } from './hubble-tools.js';
import { holdDropsForThisFile } from '../ebpf/drop-lock.js';

// Its drops (or losses) and the node-level counts, apart from every other lane's (drop-lock.ts).
holdDropsForThisFile();

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** `-o json` lines → their flows (lost events and others dropped). */
const jsonFlows = (out: string): Obj[] => out.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as Obj).filter((m) => m['flow']).map((m) => m['flow'] as Obj);

describe('the real hubble CLI and hubble-relay against two agents', { timeout: 300_000 }, () => {
  let cluster: Cluster;
  let client: RestClient;
  let net: PodNet | undefined;
  const agents: AgentProcess[] = [];
  let relay: ChildProcess | undefined;
  let relayLog = '';
  let port = 0;
  let relayPort = 0;
  /** Node A's hubble_* metrics port (hubble.metrics.listenAddress). */
  let metricsPort = 0;
  const dir = mkdtempSync(join(tmpdir(), 'hubble-cli-'));
  const id = uniqueId('hc');
  const nodes = [{ name: `${id}-a`, ip: '127.0.49.1' }, { name: `${id}-b`, ip: '127.0.49.2' }] as const;
  const nsA = `${id}-a`;
  const nsB = `${id}-b`;
  const pods: Record<'cli' | 'srv', TestPod> = {} as never;
  const server = (): string => `${nodes[0].ip}:${port}`;

  const startAgent = async (lines: string[], node: { name: string; ip: string }, hubbleLines: string[] = []): Promise<AgentProcess> => {
    const config = join(dir, `${uniqueId('cfg')}.yaml`);
    writeFileSync(config, ['apiServer:', '  host: 127.0.0.1', '  port: 0', 'logLevel: info', 'remoteContext: false', ...lines,
      'hubble:', '  enabled: true', `  listenAddress: "${node.ip}:${port}"`, ...hubbleLines.map((l) => `  ${l}`), ''].join('\n'));
    const a = new AgentProcess({ args: ['--config', config, '--kubeconfig', cluster.kubeconfig], env: agentEnv({ NODE_NAME: node.name }) });
    agents.push(a);
    await a.listening(30_000);
    return a;
  };

  before(async () => {
    requireKernel();
    for (const c of HUBBLE_CLIS) hubbleTools(c.pin); // both built, or fail now
    cluster = await startCluster();
    client = cluster.client;
    for (const n of nodes) await createNode(client, n.name, n.ip);
    net = new PodNet('hc');
    Object.assign(pods, await addPods(client, net, nodes[0].name, [['cli', nsA, 21], ['srv', nsB, 22]], '10.246.0', 'fd00:246::'));
    const srv = pods.srv.ns;
    srv.run('nft', ['-f', '-'], dropUdp9999('hc'));
    await srv.serve(DNS_SERVER, [srv.ip4, srv.ip6]);
    port = await freePort();
    metricsPort = await freePort();
    // Node A also serves Cilium's hubble_* metrics with the pods' app label (local context: its own pod watch carries every label).
    const a = await startAgent(['enablePodLevel: true', 'bypassLookupIPOfInterest: true', 'dataAggregationLevel: high', 'packetParserHostInterfaces: []',
      'enabledPlugin: [packetparser, dropreason, dns]', 'metricsPodLabelsAllowlist: [app]'], nodes[0],
    // The largest ring: node A's agent sees every veth and every kernel drop of the machine (pod level), and the
    // other lanes' floods (datagrams to closed ports are drops too) can push 4 096 flows past ours in a second.
    ['maxFlows: 65536', 'metrics:', `  listenAddress: "127.0.0.1:${metricsPort}"`, '  enabled: ["drop:sourceContext=pod;destinationContext=pod", "dns:query;sourceContext=pod-name"]']);
    const b = await startAgent(['enablePodLevel: false', 'enabledPlugin: [dropreason]'], nodes[1]);
    for (const [ag, plugins] of [[a, ['packetparser', 'dropreason', 'dns']], [b, ['dropreason']]] as const) {
      for (const p of plugins) await ag.waitForLog((l) => l.msg === 'plugin started' && l['plugin'] === p, `plugin ${p} started`, 30_000);
      await ag.waitForLog((l) => l.msg === 'IP cache synced', 'IP cache synced', 30_000);
    }
  });

  after(async () => {
    relay?.kill('SIGKILL');
    for (const a of agents) await a[Symbol.asyncDispose]();
    if (client) {
      await deleteNamespace(client, nsA);
      await deleteNamespace(client, nsB);
      for (const n of nodes) await deleteNode(client, n.name);
    }
    net?.destroy();
    rmSync(dir, { recursive: true, force: true });
    await cluster?.[Symbol.asyncDispose]();
  });

  const drops = (n: number): Promise<unknown> => pods.cli.ns.node(UDP_SEND, [String(n), pods.srv.ns.ip4, '9999', '64']);
  const between = (f: Obj): boolean => f['IP']?.['source'] === pods.cli.ns.ip4 && f['IP']?.['destination'] === pods.srv.ns.ip4;
  const startRelay = async (): Promise<void> => {
    relayPort = await freePort();
    const health = await freePort();
    relay = spawn(join(hubbleTools(), 'hubble-relay'), ['serve', '--peer-service', server(), '--disable-client-tls', '--disable-server-tls',
      '--listen-address', `${nodes[0].ip}:${relayPort}`, '--health-listen-address', `${nodes[0].ip}:${health}`, '--gops=false', '--retry-timeout', '2s'], { stdio: ['ignore', 'pipe', 'pipe'] });
    relay.stdout?.on('data', (d: Buffer) => (relayLog += d.toString()));
    relay.stderr?.on('data', (d: Buffer) => (relayLog += d.toString()));
  };

  it('hubble_* metrics in local context: the kernel\'s drops by pod (namespace/name) with the pods\' app label, counted exactly', async () => {
    const value = async (): Promise<number> => {
      const r = await get(metricsPort, '/metrics');
      assert.equal(r.status, 200);
      const want = `hubble_drop_total{reason="POLICY_DENIED",protocol="UDP",source="${nsA}/${pods.cli.name}",source_label_app="cli",destination="${nsB}/${pods.srv.name}",destination_label_app="srv"} `;
      const line = r.body.split('\n').find((l) => l.startsWith(want));
      return line ? Number(line.slice(want.length)) : 0;
    };
    const before = await value();
    await drops(7);
    const got = await eventually('the 7 drops in hubble_drop_total', 20_000, async () => ((await value()) - before >= 7 ? (await value()) - before : undefined), 200);
    assert.equal(got, 7);
  });

  for (const cli of HUBBLE_CLIS) {
  const cliTools = (): string => hubbleTools(cli.pin);
  it(`hubble status and hubble observe -o json: an nftables drop with its pods, verdict and kernel reason (${cli.label})`, async () => {
    const status = await hubble(cliTools(), ['status', '--server', server()]);
    assert.match(status, /Healthcheck \(via [^)]+\): Ok/, status);
    assert.match(status, /Current\/Max Flows: [\d,]+\/65,536/, status);
    await drops(5);
    let seen = 'none yet';
    const flows = await eventually('the drops in hubble observe', 60_000, async () => {
      // Between the two pods' addresses: the other lanes' drops to port 9999 can outnumber --last 1000 (see the relay case).
      const fs = jsonFlows(await hubble(cliTools(), ['observe', '--server', server(), '-o', 'json', '--last', '1000', '--verdict', 'DROPPED', '--to-port', '9999', '--from-ip', pods.cli.ns.ip4, '--to-ip', pods.srv.ns.ip4]));
      seen = `${fs.length} dropped flows to port 9999, ${fs.filter(between).length} of them between the pods`;
      return fs.filter(between).length >= 5 && fs;
    }, 500).catch((e: unknown) => {
      // A CI run timed out here (20 s then) with nothing to say why: what the last observe gave, and node A's log.
      throw new Error(`${(e as Error).message}; the last observe: ${seen}; node A's agent's log tail:\n${agents[0]?.stderr.slice(-3000)}`, { cause: e });
    });
    const drop = flows.find(between) as Obj;
    assert.equal(drop['verdict'], 'DROPPED');
    assert.equal(drop['Summary'], 'drop reason: NETFILTER_DROP');
    assert.equal(drop['source']['namespace'], nsA);
    assert.equal(drop['source']['pod_name'], pods.cli.name);
    assert.deepEqual(drop['source']['workloads'], [{ name: 'cli', kind: 'Deployment' }]);
    assert.equal(drop['destination']['pod_name'], pods.srv.name);
    assert.equal(drop['node_name'], nodes[0].name);
    assert.equal(drop['l4']['UDP']['destination_port'], 9999);
    assert.ok(flows.every((f) => f['verdict'] === 'DROPPED' && f['l4']?.['UDP']?.['destination_port'] === 9999), 'only what the filters name');
  });

  it(`filters: --pod, --namespace, --protocol dns and --last N give exactly the flows they name (${cli.label})`, async () => {
    await drops(4);
    await pods.cli.ns.node(DNS_CLIENT, ['1', pods.srv.ns.ip4, pods.srv.ns.ip6]);
    // Until the cli pod's UDP query is among them: the DNS flows of one exchange arrive over a drain or two, and any
    // one of them (the answer, the TCP query) could come first (a loaded run read the --protocol dns flows then).
    const udpQuery = (f: Obj): boolean => f['l7']?.['dns']?.['query'] === 'svc0.rtbpf.test.' && Boolean(f['l4']?.['UDP']) && f['source']?.['pod_name'] === pods.cli.name;
    const byPod = await eventually('flows of the cli pod, its UDP DNS query among them', 20_000, async () => {
      const fs = jsonFlows(await hubble(cliTools(), ['observe', '--server', server(), '-o', 'json', '--last', '2000', '--pod', `${nsA}/${pods.cli.name}`]));
      return fs.some(udpQuery) && fs;
    }, 500);
    // --pod matches either side.
    assert.ok(byPod.every((f) => f['source']?.['pod_name'] === pods.cli.name || f['destination']?.['pod_name'] === pods.cli.name), JSON.stringify(byPod.find((f) => f['source']?.['pod_name'] !== pods.cli.name && f['destination']?.['pod_name'] !== pods.cli.name)));
    const byNs = jsonFlows(await hubble(cliTools(), ['observe', '--server', server(), '-o', 'json', '--last', '2000', '--namespace', nsB]));
    assert.ok(byNs.length > 0 && byNs.every((f) => f['source']?.['namespace'] === nsB || f['destination']?.['namespace'] === nsB));
    const dns = jsonFlows(await hubble(cliTools(), ['observe', '--server', server(), '-o', 'json', '--last', '2000', '--protocol', 'dns', '--from-pod', `${nsA}/${pods.cli.name}`]));
    // DNS_CLIENT asks svc0 over UDP and tcp0 over TCP: every flow is a DNS record, the UDP query among them.
    assert.ok(dns.length > 0 && dns.every((f) => /^(svc0|tcp0)\.rtbpf\.test\.$/.test(f['l7']?.['dns']?.['query'] ?? '')), JSON.stringify(dns.find((f) => !f['l7']?.['dns'])));
    assert.ok(dns.some((f) => f['l7']['dns']['query'] === 'svc0.rtbpf.test.' && f['l4']?.['UDP']));
    const dropsFrom = ['--verdict', 'DROPPED', '--from-pod', `${nsA}/${pods.cli.name}`];
    const three = jsonFlows(await hubble(cliTools(), ['observe', '--server', server(), '-o', 'json', '--last', '3', ...dropsFrom]));
    if (three.length !== 3) {
      // A loaded run read 1: what --last 3 gave, and the ring's drops to the port whatever their pods (one without its
      // source pod would not match --from-pod), for the message.
      const brief = (f: Obj): string => `${f['time']} ${f['verdict']} ${f['IP']?.['source']}>${f['IP']?.['destination']} ${f['source']?.['pod_name'] ?? '-'} ${f['Summary'] ?? ''}`;
      const all = jsonFlows(await hubble(cliTools(), ['observe', '--server', server(), '-o', 'json', '--last', '1000', '--verdict', 'DROPPED', '--to-port', '9999']));
      const fromPod = jsonFlows(await hubble(cliTools(), ['observe', '--server', server(), '-o', 'json', '--last', '1000', ...dropsFrom]));
      assert.fail(`--last 3 gave ${three.length} flows:\n${three.map(brief).join('\n')}\n--last 1000 gives ${fromPod.length} from the pod, ${all.length} to port 9999, the last 20 of these:\n${all.slice(-20).map(brief).join('\n')}`);
    }
    const none = jsonFlows(await hubble(cliTools(), ['observe', '--server', server(), '-o', 'json', '--last', '100', '--namespace', 'no-such-namespace']));
    assert.deepEqual(none, []);
  });

  it(`--follow shows exactly the new flows that match, as they happen (${cli.label})`, async () => {
    const portA = await (agents[0] as AgentProcess).listening();
    const c = await followCounted(portA, () => spawn(join(cliTools(), 'hubble'), ['observe', '--server', server(), '-o', 'json', '--follow', '--verdict', 'DROPPED', '--from-pod', `${nsA}/${pods.cli.name}`, '--to-port', '9999'], { stdio: ['ignore', 'pipe', 'pipe'] }));
    let out = '';
    c.stdout.on('data', (d: Buffer) => (out += d.toString()));
    try {
      // The earlier tests' drops are history: a follower without --last sees none of them.
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(jsonFlows(out).length, 0, out);
      await drops(7);
      const got = await eventually('7 followed flows', 20_000, async () => {
        const fs = jsonFlows(out);
        return fs.length >= 7 && fs;
      }, 250);
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(jsonFlows(out).length, 7, 'one flow per dropped packet, nothing else');
      assert.ok(got.every((f) => f['verdict'] === 'DROPPED' && f['l4']['UDP']['destination_port'] === 9999 && f['source']['pod_name'] === pods.cli.name && f['node_name'] === nodes[0].name));
    } finally {
      c.kill('SIGINT');
    }
  });

  it(`one hubble-relay merges both agents: observe and list nodes name both nodes (${cli.label})`, async () => {
    if (relay === undefined) await startRelay(); // one relay (v1.18.4), read by each CLI
    const viaRelay = `${nodes[0].ip}:${relayPort}`;
    const listed = await eventually('both nodes connected to the relay', 30_000, async () => {
      const out = await hubble(cliTools(), ['list', 'nodes', '--server', viaRelay]).catch(() => '');
      return nodes.every((n) => new RegExp(`${n.name}\\s+Connected`).test(out)) && out;
    }, 1000).catch((e: Error) => { throw new Error(`${e.message}\nrelay log:\n${relayLog.slice(-2000)}`); });
    assert.match(listed, /Connected/);
    await drops(5);
    // Narrowed to the two pods' addresses: every agent here sees every drop of the machine, and the other lanes' drops to
    // port 9999 can outnumber --last 500 within seconds (a full run never saw this case's 5 through the relay).
    const merged = await eventually('drops of both nodes through the relay', 30_000, async () => {
      const fs = jsonFlows(await hubble(cliTools(), ['observe', '--server', viaRelay, '-o', 'json', '--last', '500', '--verdict', 'DROPPED', '--to-port', '9999', '--from-ip', pods.cli.ns.ip4, '--to-ip', pods.srv.ns.ip4]));
      const names = new Set(fs.filter(between).map((f) => f['node_name'] as string));
      return nodes.every((n) => names.has(n.name)) && fs;
    }, 1000);
    for (const n of nodes) assert.ok(merged.filter((f) => f['node_name'] === n.name && between(f)).length >= 5, `≥ 5 drops from ${n.name}`);
    // Node B's agent watches only its node's pods (local context) and there are none: its flows carry the IPs alone.
    const fromB = merged.find((f) => f['node_name'] === nodes[1].name && between(f)) as Obj;
    assert.equal(fromB['source'], undefined);
    const fromA = merged.find((f) => f['node_name'] === nodes[0].name && between(f)) as Obj;
    assert.equal(fromA['source']['pod_name'], pods.cli.name);
  });
  }

  it('hubble 1.19: --cel-expression on the kernel\'s drops; the text output with its field mask prints what whole flows print', async () => {
    const cli19 = hubbleTools('v1.19');
    await drops(3);
    const cel = `_flow.verdict == Verdict.DROPPED && _flow.l4.UDP.destination_port == 9999u && _flow.source.pod_name == "${pods.cli.name}"`;
    // The two queries side by side, until they see the same ring: the drops arrive over a drain or two,
    // so one query can be answered before the last of them and the other after.
    const classic = ['observe', '--server', server(), '-o', 'json', '--last', '2000', '--verdict', 'DROPPED', '--to-port', '9999', '--from-pod', `${nsA}/${pods.cli.name}`];
    let counts = '';
    const [viaCel, same] = await eventually('the drops through --cel-expression, as many as the classic flags name', 20_000, async () => {
      const fs = jsonFlows(await hubble(cli19, ['observe', '--server', server(), '-o', 'json', '--last', '2000', '--cel-expression', cel]));
      const cs = jsonFlows(await hubble(cli19, classic));
      const again = jsonFlows(await hubble(cli19, ['observe', '--server', server(), '-o', 'json', '--last', '2000', '--cel-expression', cel]));
      counts = `CEL ${fs.length}, classic ${cs.length}, CEL again ${again.length}`;
      return fs.length >= 3 && fs.length === again.length && [fs, cs] as const;
    }, 500);
    assert.ok(viaCel.every((f) => f['verdict'] === 'DROPPED' && f['l4']['UDP']['destination_port'] === 9999 && f['source']['pod_name'] === pods.cli.name && f['Summary'] === 'drop reason: NETFILTER_DROP'));
    assert.equal(viaCel.length, same.length, `the CEL filter and the classic flags name the same flows (${counts})`);
    const args = ['observe', '--server', server(), '--last', '5', '--verdict', 'DROPPED', '--from-pod', `${nsA}/${pods.cli.name}`];
    const masked = await hubble(cli19, args);
    const whole = await hubble(cli19, [...args, '--use-default-field-masks=false']);
    assert.equal(masked, whole);
    assert.ok(masked.includes(`${nsA}/${pods.cli.name}`) && masked.includes('DROPPED'), masked);
  });

});
