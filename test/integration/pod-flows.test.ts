/**
 * Pod-level flows end to end: a real API server (the harness), the operator (in process), the built
 * `bin/retina-agent` as a process in the host namespace with enablePodLevel and remote context, and
 * real kernel traffic between "pods" — network namespaces on a bridge (pod-flows-net.ts) whose IPs
 * (IPv4 and IPv6) are the pods' status IPs (pod-flows-kube.ts), so the operator makes their
 * RetinaEndpoints and the agent enriches their flows. Checks adv_* series by pod, namespace and
 * workload (forward: packetparser; drop: dropreason with an nftables rule; DNS: dns), IPv6, a
 * MetricsConfiguration change without a restart, and a deleted pod's series going away. The same
 * agent serves Cilium's hubble_* metrics (hubble.metrics.enabled, pod context) and puts the pods'
 * `app` label (metricsPodLabelsAllowlist, carried by the RetinaEndpoints) on adv_* and hubble_*.
 * Needs root, BTF and the built native objects; never skips.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { collectionPath, objectPath, resources, type MetricsConfiguration, type RestClient } from '../../src/k8s/index.js';
import { AgentProcess, agentEnv, get } from '../e2e/agent-process.js';
import { parseExposition, series, type Sample } from '../e2e/exposition.js';
import { dropUdp9999, requireKernel } from '../ebpf/netns.js';
import { DNS_CLIENT, DNS_SERVER, TCP_SEND, TCP_SINK, UDP_SEND } from '../ebpf/traffic.js';
import { deleteNamespace, eventually, listAll, startCluster, untilStable, type Cluster } from './harness.js';
import { startOperator, uniqueId } from './operator-helpers.js';
import { addPods, createNode, deleteNode, waitForEndpoints, type TestPod } from './pod-flows-kube.js';
import { PodNet } from './pod-flows-net.js';
import { holdDropsForThisFile } from '../ebpf/drop-lock.js';

// Its drops (or losses) and the node-level counts, apart from every other lane's (drop-lock.ts).
holdDropsForThisFile();

const N = 30;
const CTX = ['namespace', 'podname', 'workload'];
const CTX_IP = [...CTX, 'ip'];
const ADV = 'networkobservability_adv_';

/** Sends one UDP datagram to argv[2]:argv[3] every 100 ms until killed; prints "ready" first. */
const UDP_DRIP = `
import dgram from 'node:dgram';
const [host, port] = process.argv.slice(1);
const s = dgram.createSocket(host.includes(':') ? 'udp6' : 'udp4');
s.on('error', () => {});
console.log('ready');
setInterval(() => s.send(Buffer.from('drip'), Number(port), host), 100);
`;


describe('pod-level flows against a real API server and kernel', { timeout: 240_000 }, () => {
  let cluster: Cluster;
  let client: RestClient;
  let operator: Awaited<ReturnType<typeof startOperator>> | undefined;
  let agent: AgentProcess | undefined;
  let net: PodNet | undefined;
  let port = 0;
  /** Where the agent serves hubble_* (hubble.metrics.listenAddress, port 0: read from its log). */
  let hubblePort = 0;
  const dir = mkdtempSync(join(tmpdir(), 'pod-flows-'));
  const id = uniqueId('pf');
  const node = `${id}-node`;
  const nsA = `${id}-a`;
  const nsB = `${id}-b`;
  const mcName = `${id}-mc`;
  const pods: Record<'cli' | 'srv' | 'gone', TestPod> = {} as never;

  const mcSpec = (drop: { src: string[]; dst: string[] }): MetricsConfiguration['spec'] => ({
    contextOptions: [
      { metricName: 'forward_count', sourceLabels: CTX_IP, destinationLabels: CTX_IP },
      { metricName: 'drop_count', sourceLabels: drop.src, destinationLabels: drop.dst },
      { metricName: 'dns_request_count', sourceLabels: CTX, destinationLabels: CTX },
      { metricName: 'dns_response_count', sourceLabels: CTX, destinationLabels: CTX },
    ],
    namespaces: { include: [nsA, nsB] },
  });

  const scrape = async (): Promise<readonly Sample[]> => {
    const r = await get(port, '/metrics');
    assert.equal(r.status, 200);
    // Only the adv_* lines: process gauges may read `Nan`, which the strict reader refuses.
    return parseExposition(r.body.split('\n').filter((l) => l.startsWith(ADV)).join('\n')).samples;
  };
  const find = async (name: string, labels: Record<string, string>): Promise<Sample[]> => series({ types: new Map(), samples: await scrape() }, ADV + name, labels);
  const hubbleScrape = async (): Promise<readonly Sample[]> => {
    const r = await get(hubblePort, '/metrics');
    assert.equal(r.status, 200);
    return parseExposition(r.body).samples;
  };
  const findHubble = async (name: string, labels: Record<string, string>): Promise<Sample[]> => series({ types: new Map(), samples: await hubbleScrape() }, name, labels);
  const appliedLines = (): number => (agent as AgentProcess).logLines().filter((l) => l.msg === 'advanced metrics spec applied').length;

  before(async () => {
    requireKernel();
    cluster = await startCluster();
    client = cluster.client;
    // Only one MetricsConfiguration is honoured cluster-wide: leftovers of other runs would win.
    for (const m of await listAll<MetricsConfiguration>(client, resources.metricsConfigurations)) {
      await client.request('DELETE', objectPath(resources.metricsConfigurations, undefined, m.metadata.name)).catch(() => undefined);
    }
    await createNode(client, node);
    net = new PodNet();
    Object.assign(pods, await addPods(client, net, node, [['cli', nsA, 11], ['srv', nsB, 12], ['gone', nsA, 13]], '10.247.0', 'fd00:247::'));
    const srv = pods.srv.ns;
    // The server drops UDP to 9999; so does the pod to delete (its series as a destination).
    for (const p of [srv, pods.gone.ns]) p.run('nft', ['-f', '-'], dropUdp9999('pf'));
    await srv.serve(TCP_SINK, [srv.ip4, '8080']);
    await srv.serve(TCP_SINK, [srv.ip6, '8080']);
    await srv.serve(DNS_SERVER, [srv.ip4, srv.ip6]);

    operator = await startOperator(cluster.kubeconfig, { RETINA_LEADERELECTIONID: uniqueId('retina-op') });
    await waitForEndpoints(client, pods, (p) => p.ns.ip6);
    await client.request('POST', collectionPath(resources.metricsConfigurations), {
      body: { apiVersion: 'retina.sh/v1alpha1', kind: 'MetricsConfiguration', metadata: { name: mcName }, spec: mcSpec({ src: CTX_IP, dst: CTX_IP }) },
    });
    await eventually('MetricsConfiguration Accepted', 30_000, async () => {
      const m = await client.request<MetricsConfiguration>('GET', objectPath(resources.metricsConfigurations, undefined, mcName));
      return m.status?.state === 'Accepted';
    });

    const plugins = ['packetparser', 'dropreason', 'dns', 'tcpretrans'];
    const config = join(dir, 'config.yaml');
    writeFileSync(config, [
      'apiServer:', '  host: 127.0.0.1', '  port: 0', 'logLevel: info',
      'enablePodLevel: true', 'remoteContext: true', 'dataAggregationLevel: high', 'conntrackReportInterval: 1s',
      `enabledPlugin: [${plugins.join(', ')}]`, 'metricsIntervalDuration: 1s',
      'packetParserHostInterfaces: []', 'metricsPodLabelsAllowlist: [app]',
      'hubble:', '  metrics:', '    listenAddress: 127.0.0.1:0', '    enabled:',
      '      - "drop:sourceContext=pod;destinationContext=pod"', '      - "flow:sourceContext=pod-name;destinationContext=ip;labelsContext=source_namespace,destination_namespace"', '',
    ].join('\n'));
    agent = new AgentProcess({ args: ['--config', config, '--kubeconfig', cluster.kubeconfig], env: agentEnv({ NODE_NAME: node }) });
    port = await agent.listening(30_000);
    const serving = await agent.waitForLog((l) => l.msg === 'serving hubble metrics', 'the hubble metrics server', 30_000);
    hubblePort = Number(String(serving['address']).split(':').pop());
    // packetparser is checked by its own case, so the other cases run even when it cannot start.
    for (const p of plugins.filter((x) => x !== 'packetparser')) await agent.waitForLog((l) => l.msg === 'plugin started' && l['plugin'] === p, `plugin ${p} started`, 30_000);
    await agent.waitForLog((l) => l.msg === 'advanced metrics spec applied' && l['source'] === `MetricsConfiguration ${mcName}`, 'the MetricsConfiguration applied', 30_000);
  });

  after(async () => {
    await agent?.[Symbol.asyncDispose]();
    await operator?.[Symbol.asyncDispose]();
    if (client) {
      await client.request('DELETE', objectPath(resources.metricsConfigurations, undefined, mcName)).catch(() => undefined);
      await deleteNamespace(client, nsA);
      await deleteNamespace(client, nsB);
      await deleteNode(client, node);
    }
    net?.destroy();
    rmSync(dir, { recursive: true, force: true });
    await cluster?.[Symbol.asyncDispose]();
  });

  const side = (p: keyof typeof pods, prefix: 'source' | 'destination', ip?: string): Record<string, string> => ({
    [`${prefix}_namespace`]: pods[p].namespace, [`${prefix}_podname`]: pods[p].name,
    [`${prefix}_workload_kind`]: 'Deployment', [`${prefix}_workload_name`]: p,
    ...(ip ? { [`${prefix}_ip`]: ip } : {}),
  });
  const total = (xs: readonly Sample[]): number => xs.reduce((s, x) => s + x.value, 0);

  it('dropreason: an nftables DROP in the server pod gives adv_drop_count for the client and server pods (IPv4)', async () => {
    const { cli, srv } = pods;
    await cli.ns.node(UDP_SEND, [String(N), srv.ns.ip4, '9999', '64']);
    const labels = { reason: 'NETFILTER_DROP', ...side('cli', 'source', cli.ns.ip4), ...side('srv', 'destination', srv.ns.ip4) };
    const got = await eventually('adv_drop_count for cli -> srv (IPv4)', 20_000, async () => {
      const s = await find('drop_count', labels);
      return total(s) >= N && s;
    });
    assert.equal(total(got), N, `exactly the ${N} dropped datagrams: ${JSON.stringify(got)}`);
    // The pods' app label (metricsPodLabelsAllowlist), from their RetinaEndpoints, on both sides.
    assert.ok(got.every((x) => x.labels['source_label_app'] === 'cli' && x.labels['destination_label_app'] === 'srv'), JSON.stringify(got));
    // Cilium's hubble_drop_total, pod context (namespace/name), the same N drops (an nftables drop is Cilium's POLICY_DENIED).
    const hubble = await eventually('hubble_drop_total for cli -> srv', 20_000, async () => {
      const s = await findHubble('hubble_drop_total', {
        source: `${cli.namespace}/${cli.name}`, destination: `${srv.namespace}/${srv.name}`, reason: 'POLICY_DENIED', protocol: 'UDP', source_label_app: 'cli', destination_label_app: 'srv',
      });
      return total(s) >= N && s;
    });
    assert.equal(total(hubble), N, JSON.stringify(hubble));
    const flows = await findHubble('hubble_flows_processed_total', { type: 'Drop', verdict: 'DROPPED', source: cli.name, destination: srv.ns.ip4, source_namespace: cli.namespace, destination_namespace: srv.namespace });
    assert.equal(total(flows), N, JSON.stringify(flows));
  });

  it('IPv6 flows are enriched too: drops over IPv6 carry the pods\' names and workloads', async () => {
    const { cli, srv } = pods;
    await cli.ns.node(UDP_SEND, [String(N), srv.ns.ip6, '9999', '64']);
    const labels = { reason: 'NETFILTER_DROP', ...side('cli', 'source', cli.ns.ip6), ...side('srv', 'destination', srv.ns.ip6) };
    const got = await eventually('adv_drop_count for cli -> srv (IPv6)', 20_000, async () => {
      const s = await find('drop_count', labels);
      return total(s) >= N && s;
    });
    assert.equal(total(got), N);
  });

  it('dns: queries from the client pod to the DNS pod give adv_dns_request_count and adv_dns_response_count with the query', async () => {
    const { cli, srv } = pods;
    const out = JSON.parse(await cli.ns.node(DNS_CLIENT, ['3', srv.ns.ip4, srv.ns.ip6])) as Record<string, number>;
    assert.deepEqual(out, { udp4: 3, udp6: 3, tcp: 3 });
    const request = { query: 'svc1.rtbpf.test.', query_type: 'A', ...side('cli', 'source'), ...side('srv', 'destination') };
    // UDP over IPv4 and over IPv6 each asked once.
    await eventually('adv_dns_request_count for svc1', 20_000, async () => total(await find('dns_request_count', request)) >= 2);
    await new Promise((r) => setTimeout(r, 500));
    const req = await find('dns_request_count', request);
    assert.equal(total(req), 2, `each query counted once, though it crossed two veths and the bridge: ${JSON.stringify(req)}`);
    const resp = await eventually('adv_dns_response_count for svc1', 20_000, async () => {
      const s = (await find('dns_response_count', { query: 'svc1.rtbpf.test.', return_code: 'NOERROR', response: '192.0.2.1', num_response: '1' }))
        .filter((x) => [x.labels['source_podname'], x.labels['destination_podname']].includes(pods.cli.name) && [x.labels['source_podname'], x.labels['destination_podname']].includes(pods.srv.name));
      return total(s) >= 2 && s;
    });
    assert.equal(total(resp), 2, JSON.stringify(resp));
    assert.ok((await find('dns_request_count', { query: 'tcp0.rtbpf.test.' })).length > 0, 'DNS over TCP too');
  });

  // packetparser filters in the kernel by the IPs of interest (bypassLookupIPOfInterest is false), so
  // these series also show that the pods' IPv4 and IPv6 addresses reached its filter map. The
  // ground truth is nftables: counters in each pod count what it sends to the other.
  it('packetparser: adv_forward_count between the pods equals what each pod sent, packet for packet, IPv4 and IPv6', async (t) => {
    const a = agent as AgentProcess;
    await a.waitForLog((l) => l['plugin'] === 'packetparser' && (l.msg === 'plugin started' || l.msg === 'plugin failed; not retrying'), 'packetparser started or failed', 30_000);
    const failed = a.logLines().find((l) => l['plugin'] === 'packetparser' && l.msg.startsWith('plugin failed'));
    assert.equal(failed, undefined, `packetparser did not start: ${String(failed?.['error']).slice(0, 300)}`);
    const { cli, srv } = pods;
    const sentByCli = cli.ns.countSent([srv.ns.ip4, srv.ns.ip6]);
    const sentBySrv = srv.ns.countSent([cli.ns.ip4, cli.ns.ip6]);
    const pairs = [[cli.ns.ip4, srv.ns.ip4], [cli.ns.ip6, srv.ns.ip6]] as const;
    const fwd = async (from: 'cli' | 'srv', to: 'cli' | 'srv', ipFrom: string, ipTo: string): Promise<number> =>
      total(await find('forward_count', { ...side(from, 'source', ipFrom), ...side(to, 'destination', ipTo) }));
    // Earlier cases sent cli -> srv traffic too: start from counts that no longer move (the sweep
    // reports a quiet connection's last packets within about two report intervals).
    const base = async (): Promise<number[]> => Promise.all(pairs.flatMap(([c, s]) => [fwd('cli', 'srv', c, s), fwd('srv', 'cli', s, c)]));
    const before = await untilStable(base);
    const sent0 = pairs.map(([c, s]) => [sentByCli.read(s), sentBySrv.read(c)]);
    await cli.ns.node(TCP_SEND, ['100000', srv.ns.ip4, '8080']);
    await cli.ns.node(TCP_SEND, ['100000', srv.ns.ip6, '8080']);
    for (const [i, [c, s]] of pairs.entries()) {
      // Read the counters at every check: the kernel may still send a neighbour probe after the transfer.
      const want = (): number[] => [sentByCli.read(s) - (sent0[i]?.[0] ?? 0), sentBySrv.read(c) - (sent0[i]?.[1] ?? 0)];
      // Veths carry GSO packets: 100 kB is a handful of skbs, which both sides count alike.
      assert.ok((want()[0] ?? 0) >= 4, `SYN, data and FIN from cli to ${s} (${want()[0]})`);
      let last = '';
      const got = await eventually(`adv_forward_count ${c} <-> ${s} = the nftables counts`, 20_000, async () => {
        const g = [await fwd('cli', 'srv', c, s) - (before[2 * i] ?? 0), await fwd('srv', 'cli', s, c) - (before[2 * i + 1] ?? 0)];
        const w = want();
        last = `metrics ${JSON.stringify(g)}, nftables ${JSON.stringify(w)}`;
        return JSON.stringify(g) === JSON.stringify(w) && g;
      }, 200).catch((e: unknown) => assert.fail(`${String(e)}; last: ${last}`));
      t.diagnostic(`${c} -> ${s}: ${got[0]} packets, ${s} -> ${c}: ${got[1]} (nftables: the same)`);
    }
  });

  it('a ring-buffer overflow forced on purpose is counted exactly: parsed_packets + lost_events = the packets the hooks saw', async (t) => {
    // A second agent: packetparser alone, one record per packet (low), a 4 KiB ring (34 records).
    // It is frozen (SIGSTOP) while the client sends a burst, so the ring fills and the rest is lost.
    const { cli, srv } = pods;
    const config = join(dir, 'overflow.yaml');
    writeFileSync(config, [
      'apiServer:', '  host: 127.0.0.1', '  port: 0', 'enablePodLevel: true', 'remoteContext: true', 'dataAggregationLevel: low',
      'enabledPlugin: [packetparser]', 'metricsIntervalDuration: 1s', 'packetParserRingBufferSize: 4096',
      // cpuBudget off: with it on, records that find the ring three quarters full are folded, not lost
      'cpuBudget: 0', `packetParserHostInterfaces: [${(net as PodNet).bridge}]`, '',
    ].join('\n'));
    await using second = new AgentProcess({ args: ['--config', config, '--kubeconfig', cluster.kubeconfig], env: agentEnv({ NODE_NAME: node }) });
    const p2 = await second.listening(30_000);
    await second.waitForLog((l) => l.msg === 'plugin started' && l['plugin'] === 'packetparser', 'packetparser started', 30_000);
    const counters = async (): Promise<{ parsed: number; lost: number }> => {
      const body = (await get(p2, '/metrics')).body;
      const pick = (name: string, extra = ''): number => body.split('\n').filter((l) => l.startsWith(`controlplane_networkobservability_${name}`) && l.includes(extra))
        .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
      return { parsed: pick('parsed_packets_counter'), lost: pick('lost_events_counter{', 'type="kernel",reason="packetparser"') };
    };
    // The pods' addresses reach its filter map once its cache has them: until then nothing is parsed.
    await eventually('the second agent parses the pods\' packets', 30_000, async () => {
      await cli.ns.node(UDP_SEND, ['5', srv.ns.ip4, '9999', '16']);
      return (await counters()).parsed >= 10;
    }, 500);
    let c0 = await counters();
    for (let stable = 0; stable < 2;) {
      await new Promise((r) => setTimeout(r, 1200));
      const c = await counters();
      stable = c.parsed === c0.parsed && c.lost === c0.lost ? stable + 1 : 0;
      c0 = c;
    }
    const M = 2000;
    process.kill(second.pid, 'SIGSTOP');
    try {
      await cli.ns.node(UDP_SEND, [String(M), srv.ns.ip4, '9999', '16']);
    } finally {
      process.kill(second.pid, 'SIGCONT');
    }
    // Each datagram is seen twice: leaving the client (its veth) and reaching the server (its veth).
    const got = await eventually('parsed + lost account for the burst', 15_000, async () => {
      const c = await counters();
      const d = { parsed: c.parsed - c0.parsed, lost: c.lost - c0.lost };
      return d.parsed + d.lost >= 2 * M && d;
    }, 300);
    await new Promise((r) => setTimeout(r, 1500));
    const c1 = await counters();
    const d = { parsed: c1.parsed - c0.parsed, lost: c1.lost - c0.lost };
    t.diagnostic(`burst of ${M} datagrams, ${2 * M} hook runs: ${d.parsed} parsed, ${d.lost} lost (first reading ${JSON.stringify(got)})`);
    assert.ok(d.lost > 0, 'the ring overflowed');
    assert.equal(d.parsed + d.lost, 2 * M);
  });

  it('a changed MetricsConfiguration changes the labels without restarting the agent', async () => {
    const a = agent as AgentProcess;
    const pid = a.pid;
    const before = appliedLines();
    const drip = await pods.cli.ns.serve(UDP_DRIP, [pods.srv.ns.ip4, '9999']);
    try {
      const t0 = Date.now();
      await client.request('PATCH', objectPath(resources.metricsConfigurations, undefined, mcName), {
        contentType: 'application/merge-patch+json', body: { spec: mcSpec({ src: ['namespace', 'podname'], dst: ['podname', 'port'] }) },
      });
      await eventually('the new spec applied', 20_000, () => appliedLines() > before, 50);
      const applied = Date.now() - t0;
      const s = await eventually('adv_drop_count with the new labels', 20_000, async () => {
        const x = await find('drop_count', { reason: 'NETFILTER_DROP', source_podname: pods.cli.name, destination_podname: pods.srv.name, destination_port: '9999' });
        return x.length > 0 && x;
      }, 100);
      const visible = Date.now() - t0;
      console.log(JSON.stringify({ figure: 'metricsconfiguration-propagation', appliedMs: applied, newLabelsScrapedMs: visible }));
      for (const x of s) {
        assert.deepEqual(Object.keys(x.labels).sort(), [
          'destination_label_app', 'destination_podname', 'destination_port', 'direction', 'reason', 'source_label_app', 'source_namespace', 'source_podname',
        ]);
      }
      assert.equal((await find('drop_count', { source_ip: pods.cli.ns.ip4 })).length, 0, 'the old label set is gone');
      assert.equal(a.pid, pid);
      assert.equal(a.exit, undefined, 'the agent kept running');
    } finally {
      drip.kill('SIGKILL');
    }
  });

  // The spec in force (previous case) labels drop_count's destination with podname and port only:
  // without the namespace, the deleted pod's destination series must go too.
  it('a deleted pod\'s series disappear within 60 s, also where its side has podname without namespace', async () => {
    const { gone, srv, cli } = pods;
    await gone.ns.node(UDP_SEND, [String(N), srv.ns.ip4, '9999', '64']);
    await cli.ns.node(UDP_SEND, [String(N), gone.ns.ip4, '9999', '64']);
    const mentions = async (): Promise<Sample[]> => (await scrape()).filter((x) => Object.values(x.labels).includes(gone.name));
    await eventually('series of the pod to delete', 20_000, async () => (await find('drop_count', { source_podname: gone.name })).length > 0);
    await eventually('series of the pod to delete as a destination', 20_000, async () => (await find('drop_count', { source_podname: cli.name, destination_podname: gone.name })).length > 0);
    const hubbleMentions = async (): Promise<Sample[]> => (await hubbleScrape()).filter((x) => Object.values(x.labels).some((v) => v === gone.name || v === `${gone.namespace}/${gone.name}` || v === gone.ns.ip4));
    await eventually('hubble series of the pod to delete, both sides', 20_000, async () => {
      const m = await hubbleMentions();
      return m.some((x) => x.labels['source'] === `${gone.namespace}/${gone.name}`) && m.some((x) => x.labels['destination'] === `${gone.namespace}/${gone.name}`);
    });
    const t0 = Date.now();
    await client.request('DELETE', objectPath(resources.pods, gone.namespace, gone.name), { body: { gracePeriodSeconds: 0 } });
    await eventually('no series of the deleted pod', 60_000, async () => (await mentions()).length === 0, 100);
    const removedMs = Date.now() - t0;
    await eventually('no hubble series of the deleted pod', 60_000, async () => (await hubbleMentions()).length === 0, 100);
    const hubbleRemovedMs = Date.now() - t0;
    console.log(JSON.stringify({ figure: 'deleted-pod-series-removal', ms: removedMs, hubbleMs: hubbleRemovedMs }));
    assert.ok(removedMs < 60_000);
    assert.ok((await find('drop_count', { source_podname: pods.cli.name })).length > 0, 'the other pods keep their series');
    assert.ok((await findHubble('hubble_drop_total', { source: `${cli.namespace}/${cli.name}` })).length > 0, 'the other pods keep their hubble series');
  });
});
