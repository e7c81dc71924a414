/**
 * The chart, the image and the agent on a real kubelet (issue 23): `make image`'s archive imported
 * into the real node's containerd, `helm install` of charts/retina with only image.* overridden, and
 * the operator Deployment and the Linux agent DaemonSet Running and Ready as real pods through the
 * chart's own probes, RBAC, mounts, capabilities and in-cluster config (the ServiceAccount admission
 * gives them projected tokens; the API server is reached through the `kubernetes` Service, i.e. kube-proxy).
 * Needs root and the node's tools (make node-bins); never skips: a node that cannot come up fails.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { promisify } from 'node:util';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { request as httpsRequest } from 'node:https';
import { after, before, describe, it } from 'node:test';
import { collectionPath, objectPath, resources, type KubeObject, type MetricsConfiguration, type RestClient, type RetinaEndpoint } from '../../src/k8s/index.js';
import { get } from '../e2e/agent-process.js';
import { parseExposition, series, type Sample } from '../e2e/exposition.js';
import { bpfIdsOf, leftoversAfterStop, sh } from '../ebpf/netns.js';
import { DNS_SERVER, TCP_SEND, TCP_SINK, UDP_SEND, UDP_SINK } from '../ebpf/traffic.js';
import { PodNs } from '../integration/pod-flows-net.js';
import { extract, pcapLines } from '../capture/workload-run.js';
import { CHART, ROOT, profileFile, tool } from '../chart/helm.js';
import { createNamespace, eventually, listAll, untilStable } from '../integration/harness.js';
import { API_SERVICE_IP, BRIDGE, DNS_SERVICE_IP, NODE_IP, NODE_NAME, POD_CIDR6_PREFIX, POD_CIDR_PREFIX, importImage, startNode, type RealNode } from './node.js';
import { startPrometheus } from './prometheus.js';
import { hooksOnNode, podPids, stillLoaded, type Hooks } from './hooks.js';
import { IMAGE_ARCHIVE, IMAGE_VERSION, RELEASE, RELEASE_NS, SLEEPER, agentPods, daemonSetsRes, deploymentsRes, containerCgroup, getText, netnsOf, podExec, podLog, readyPod, scriptDeployment, type Pod } from './workloads.js';

const N = 40;
const ADV = 'networkobservability_adv_';
const CTX = ['namespace', 'podname', 'workload'];
const CTX_IP = [...CTX, 'ip'];

/** argv[2] A queries rn<i>.real-node.test over UDP/IPv4 to argv[3]:53, one at a time; prints "answers N". */
/** UDP datagrams to argv[1]:argv[2] at argv[3] per second for argv[4] ms (batches every 10 ms); prints "sent N in T ms". */
const UDP_PACED = `
import dgram from 'node:dgram';
const [host, port, rate, ms] = [process.argv[1], Number(process.argv[2]), Number(process.argv[3]), Number(process.argv[4])];
const s = dgram.createSocket('udp4');
s.on('error', () => {});
const buf = Buffer.alloc(64, 0x61);
const t0 = Date.now();
let sent = 0;
while (Date.now() - t0 < ms) {
  const due = Math.floor(((Date.now() - t0) / 1000) * rate);
  const batch = [];
  for (; sent < due; sent++) batch.push(new Promise((r) => s.send(buf, port, host, r)));
  await Promise.all(batch);
  await new Promise((r) => setTimeout(r, 10));
}
s.close();
console.log('sent', sent, 'in', Date.now() - t0, 'ms');
`;

const DNS_UDP4 = `
import dgram from 'node:dgram';
const [n, host] = [Number(process.argv[1]), process.argv[2]];
const s = dgram.createSocket('udp4');
let got = 0;
for (let i = 0; i < n; i++) {
  const labels = ['rn' + i, 'real-node', 'test'].map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l)]));
  const h = Buffer.alloc(12); h.writeUInt16BE(i, 0); h.writeUInt16BE(0x0100, 2); h.writeUInt16BE(1, 4);
  await new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('no answer')), 5000);
    s.once('message', () => { clearTimeout(t); got++; resolve(); });
    s.send(Buffer.concat([h, ...labels, Buffer.from([0, 0, 1, 0, 1])]), 53, host);
  });
}
s.close();
console.log('answers', got);
`;
/** Reads the pod's /etc/resolv.conf and resolves argv[1] with getaddrinfo (address family argv[2], default IPv4); prints {nameserver, search, address}. */
const RESOLV_LOOKUP = `
import { readFileSync } from 'node:fs';
import { promises as dns } from 'node:dns';
const conf = readFileSync('/etc/resolv.conf', 'utf8');
const { address } = await dns.lookup(process.argv[1], { family: Number(process.argv[2] ?? 4) });
console.log(JSON.stringify({ nameserver: /^nameserver\\s+(\\S+)/m.exec(conf)?.[1], search: /^search\\s+(.*)$/m.exec(conf)?.[1]?.trim(), address }));
`;

/** argv[2] A queries for the absolute name argv[1] to the pod's nameserver, one at a time; prints the answers' addresses. */
const DNS_A_QUERIES = `
import { readFileSync } from 'node:fs';
import dgram from 'node:dgram';
const [name, n] = [process.argv[1], Number(process.argv[2])];
const server = /^nameserver\\s+(\\S+)/m.exec(readFileSync('/etc/resolv.conf', 'utf8'))[1];
const s = dgram.createSocket('udp4');
const q = name.split('.').map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l)]));
const out = [];
for (let i = 0; i < n; i++) {
  const h = Buffer.alloc(12); h.writeUInt16BE(0x5200 + i, 0); h.writeUInt16BE(0x0100, 2); h.writeUInt16BE(1, 4);
  const r = await new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('no answer')), 5000);
    s.once('message', (m) => { clearTimeout(t); resolve(m); });
    s.send(Buffer.concat([h, ...q, Buffer.from([0, 0, 1, 0, 1])]), 53, server);
  });
  const rcode = r.readUInt16BE(2) & 0xf, an = r.readUInt16BE(6);
  out.push(rcode === 0 && an === 1 ? [...r.subarray(r.length - 4)].join('.') : 'rcode ' + rcode + ' answers ' + an);
}
s.close();
console.log(JSON.stringify(out));
`;
const run = promisify(execFile);
const PROM = '127.0.0.1:19393';
const AGENT_PORT = 10093; // the chart's default (config.apiServer.port), on the node's host network

describe('real node: helm install of the chart with the real image', { timeout: 1_500_000 }, () => {
  let node: RealNode;
  let client: RestClient;
  let imageRef = '';
  const helm = (args: string[]): ReturnType<typeof tool> => tool('helm', [...args, '--kubeconfig', node.kubeconfig], {}, 600_000);

  before(async () => {
    if (!existsSync(IMAGE_ARCHIVE)) throw new Error(`${IMAGE_ARCHIVE} is missing: run make image`);
    node = await startNode();
    client = node.client;
    const out = await importImage(IMAGE_ARCHIVE);
    imageRef = `docker.io/library/retina-ts:${IMAGE_VERSION}`;
    assert.ok(out.split('\n').includes(imageRef), `containerd has no ${imageRef} after the import: ${out}`);
  });

  after(async () => {
    await node?.[Symbol.asyncDispose]();
  });

  it('helm install (image.* only): operator and Linux agent Ready through the chart\'s probes; RBAC, token, mounts and capabilities as a kubelet gives them', async (t) => {
    const repo = imageRef.slice(0, imageRef.lastIndexOf(':'));
    const t0 = Date.now();
    const inst = await helm(['install', RELEASE, CHART, '-n', RELEASE_NS, '--set', `image.linux.repository=${repo}`, '--set', `image.linux.tag=${IMAGE_VERSION}`, '--set', 'image.linux.pullPolicy=Never']);
    assert.equal(inst.code, 0, `helm install: ${inst.stderr}\n${inst.stdout}`);
    const ready = await eventually('the agent DaemonSet and the operator Deployment Ready', 300_000, async () => {
      const [ds] = await listAll<KubeObject & { status: { numberReady?: number; desiredNumberScheduled?: number } }>(client, daemonSetsRes, RELEASE_NS, { labelSelector: `app.kubernetes.io/instance=${RELEASE}` });
      const [op] = await listAll<KubeObject & { spec: { replicas: number }; status: { readyReplicas?: number } }>(client, deploymentsRes, RELEASE_NS, { labelSelector: `app.kubernetes.io/instance=${RELEASE}` });
      return ds && op && ds.status.desiredNumberScheduled === 1 && ds.status.numberReady === 1 && op.status.readyReplicas === op.spec.replicas && Date.now();
    }, 250).catch(async (e: unknown) => assert.fail(`${String(e)}\n${await diagnosis(client)}`));
    t.diagnostic(`helm install -> all agents and the operator Ready: ${ready - t0} ms`);
    console.log(JSON.stringify({ figure: 'real-node-helm-install-to-ready', ms: ready - t0 }));

    const [agent] = await agentPods(client);
    assert.ok(agent, 'an agent pod');
    assert.equal(agent.spec.nodeName, NODE_NAME);
    assert.equal(agent.status?.podIP, NODE_IP, 'host network: the node\'s address');
    for (const c of agent.status?.containerStatuses ?? []) assert.equal(c.restartCount, 0, `${c.name} restarted: ${JSON.stringify(c.lastState)}`);
    assert.ok(agent.spec.volumes?.some((v) => v.name.startsWith('kube-api-access-') && v.projected), 'the ServiceAccount admission gave the pod its projected token');
    const log = await podLog(client, agent);
    const started = log.filter((l) => l['msg'] === 'plugin started').map((l) => String(l['plugin'])).sort();
    assert.deepEqual(started, ['dns', 'dropreason', 'linuxutil', 'packetforward'], `the chart's default plugins all started in the pod:\n${log.map((l) => JSON.stringify(l)).join('\n').slice(-4000)}`);

    const m = await get(AGENT_PORT, '/metrics');
    assert.equal(m.status, 200);
    const text = m.body.split('\n').filter((l) => l.startsWith('networkobservability_')).join('\n');
    const e = parseExposition(text);
    assert.ok(series(e, 'networkobservability_forward_count').length > 0, 'packetforward series');
    assert.ok(series(e, 'networkobservability_tcp_state').length > 0 || series(e, 'networkobservability_ip_connection_stats').length > 0, 'linuxutil series');
  });

  // ---- advanced-remote: real pods, real veths, real Services ----
  const nsA = 'rn-a';
  const nsB = 'rn-b';
  const pods = {} as Record<'cli' | 'srv', { name: string; namespace: string; ip: string; ip6: string; ns: PodNs }>;
  let svcIp = '';
  const scrape = async (): Promise<readonly Sample[]> => {
    const r = await get(AGENT_PORT, '/metrics');
    assert.equal(r.status, 200);
    return parseExposition(r.body.split('\n').filter((l) => l.startsWith('networkobservability_')).join('\n')).samples;
  };
  const find = async (name: string, labels: Record<string, string>): Promise<Sample[]> => series({ types: new Map(), samples: await scrape() }, name, labels);
  const total = (xs: readonly Sample[]): number => xs.reduce((a, x) => a + x.value, 0);
  const side = (p: 'cli' | 'srv', prefix: 'source' | 'destination', ip?: string): Record<string, string> => ({
    [`${prefix}_namespace`]: pods[p].namespace, [`${prefix}_podname`]: pods[p].name,
    [`${prefix}_workload_kind`]: 'Deployment', [`${prefix}_workload_name`]: p,
    ...(ip ? { [`${prefix}_ip`]: ip } : {}),
  });

  it('helm upgrade to the advanced-remote profile: the agent rolls, real pods get RetinaEndpoints from the operator', async (t) => {
    const repo = imageRef.slice(0, imageRef.lastIndexOf(':'));
    const up = await helm(['upgrade', RELEASE, CHART, '-n', RELEASE_NS, '-f', profileFile('advanced-remote'), '--set', `image.linux.repository=${repo}`, '--set', `image.linux.tag=${IMAGE_VERSION}`, '--set', 'image.linux.pullPolicy=Never']);
    assert.equal(up.code, 0, `helm upgrade: ${up.stderr}`);
    await eventually('the upgraded agent Ready', 300_000, async () => {
      const [ds] = await listAll<KubeObject & { metadata: { generation?: number }; status: { numberReady?: number; updatedNumberScheduled?: number; observedGeneration?: number } }>(client, daemonSetsRes, RELEASE_NS);
      return ds && ds.status.observedGeneration === ds.metadata.generation && ds.status.updatedNumberScheduled === 1 && ds.status.numberReady === 1;
    }, 500).catch(async (e: unknown) => assert.fail(`${String(e)}\n${await diagnosis(client)}`));
    await eventually('the upgraded agent pod serving', 60_000, async () => (await get(AGENT_PORT, '/readyz')).status === 200, 500);

    for (const n of [nsA, nsB]) await createNamespace(client, n);
    await client.request('POST', collectionPath(deploymentsRes, nsA), { body: scriptDeployment(nsA, 'cli', imageRef, [{ name: 'main', script: SLEEPER }]) });
    await client.request('POST', collectionPath(deploymentsRes, nsB), {
      body: scriptDeployment(nsB, 'srv', imageRef, [
        { name: 'sink', script: TCP_SINK, args: ['0.0.0.0', '8080'], readyPort: 8080 },
        { name: 'dns', script: DNS_SERVER, args: ['$(POD_IP)', '::1'] },
        { name: 'udp', script: UDP_SINK, args: ['0.0.0.0', '7000'] },
      ]),
    });
    await client.request('POST', collectionPath(resources.services, nsB), {
      body: { apiVersion: 'v1', kind: 'Service', metadata: { name: 'srv', namespace: nsB }, spec: { selector: { app: 'srv' }, ports: [{ name: 'tcp', port: 80, targetPort: 8080, protocol: 'TCP' }] } },
    });
    for (const [app, namespace] of [['cli', nsA], ['srv', nsB]] as const) {
      const p = await readyPod(client, namespace, app);
      assert.equal(p.spec.nodeName, NODE_NAME);
      assert.ok(p.status.podIP.startsWith(POD_CIDR_PREFIX), `${app}: a bridge CNI address (${p.status.podIP})`);
      const ip6 = ((p.status as { podIPs?: { ip: string }[] }).podIPs ?? []).map((x) => x.ip).find((ip) => ip.includes(':')) ?? '';
      assert.ok(ip6.startsWith(POD_CIDR6_PREFIX), `${app}: dual stack, an IPv6 address from the bridge CNI's second range (${JSON.stringify(p.status)})`);
      const netns = netnsOf(p.status.podIP);
      pods[app] = { name: p.metadata.name, namespace, ip: p.status.podIP, ip6, ns: new PodNs(netns, '', p.status.podIP, ip6) };
    }
    svcIp = (await client.request<{ spec: { clusterIP: string } }>('GET', objectPath(resources.services, nsB, 'srv'))).spec.clusterIP;
    // The server pod drops UDP to 9999 (the dropped pod of the suite).
    pods.srv.ns.run('nft', ['-f', '-'], 'table inet rndrop {\n chain input {\n  type filter hook input priority 0;\n  udp dport 9999 drop\n }\n}\n');

    await eventually('RetinaEndpoints of both pods from the real Pods', 60_000, async () => {
      const res = [...await listAll<RetinaEndpoint>(client, resources.retinaEndpoints, nsA), ...await listAll<RetinaEndpoint>(client, resources.retinaEndpoints, nsB)];
      return Object.values(pods).every((p) => res.some((r) => r.metadata.name === p.name && r.spec.podIPs?.includes(p.ip) && r.spec.podIPs.includes(p.ip6)));
    }, 500);
    const mc = {
      apiVersion: 'retina.sh/v1alpha1', kind: 'MetricsConfiguration', metadata: { name: 'real-node' },
      spec: {
        contextOptions: [
          { metricName: 'forward_count', sourceLabels: CTX_IP, destinationLabels: CTX_IP },
          { metricName: 'forward_bytes', sourceLabels: CTX_IP, destinationLabels: CTX_IP },
          { metricName: 'drop_count', sourceLabels: CTX_IP, destinationLabels: CTX_IP },
          { metricName: 'dns_request_count', sourceLabels: CTX, destinationLabels: CTX },
          { metricName: 'dns_response_count', sourceLabels: CTX, destinationLabels: CTX },
        ],
        namespaces: { include: [nsA, nsB] },
      },
    };
    await client.request('POST', collectionPath(resources.metricsConfigurations), { body: mc });
    await eventually('MetricsConfiguration Accepted', 60_000, async () => (await client.request<MetricsConfiguration>('GET', objectPath(resources.metricsConfigurations, undefined, 'real-node'))).status?.state === 'Accepted');
    const [agent] = await agentPods(client);
    assert.ok(agent);
    await eventually('the agent applied the MetricsConfiguration', 60_000, async () => (await podLog(client, agent)).some((l) => l['msg'] === 'advanced metrics spec applied'), 1000);
    t.diagnostic(`cli ${pods.cli.ip} (${pods.cli.ns.name}), srv ${pods.srv.ip} (${pods.srv.ns.name}), Service srv ${svcIp}`);
  });

  it('an nftables DROP in the server pod: adv_drop_count by pod and workload and the node\'s drop_count are exact', async () => {
    const { cli, srv } = pods;
    assert.ok(cli && srv, 'the pods of the previous case');
    const labels = { reason: 'NETFILTER_DROP', ...side('cli', 'source', cli.ip), ...side('srv', 'destination', srv.ip) };
    const nodeDrops = async (): Promise<number> => total(await find('networkobservability_drop_count', { reason: 'NETFILTER_DROP' }));
    // The node-wide counter moves once per metricsIntervalDuration (the chart's 10s) and also sees every
    // other drop on the machine (other suites' netns tests): read it once it held still for a whole
    // interval, before and after a burst; up to three bursts until one is exact.
    const settled = async (): Promise<number> => {
      let v = await nodeDrops();
      for (let i = 0; i < 5; i++) {
        await new Promise((r) => setTimeout(r, 11_000));
        const w = await nodeDrops();
        if (w === v) return v;
        v = w;
      }
      return v; // never still: the burst cannot be exact and is tried again
    };
    const tries: string[] = [];
    for (let burst = 1; ; burst++) {
      const pod0 = total(await find(`${ADV}drop_count`, labels));
      const node0 = await settled();
      await cli.ns.node(UDP_SEND, [String(N), srv.ip, '9999', '64']);
      const got = await eventually('adv_drop_count cli -> srv', 30_000, async () => {
        const v = total(await find(`${ADV}drop_count`, labels)) - pod0;
        return v >= N && v;
      }, 250);
      assert.equal(got, N, `adv_drop_count: exactly the ${N} datagrams`);
      const nodeDelta = (await settled()) - node0;
      if (nodeDelta === N) break;
      tries.push(`burst ${burst}: node drop_count +${nodeDelta}`);
      assert.ok(burst < 3, `node-level drop_count never moved by exactly ${N}: ${tries.join('; ')}`);
    }
  });

  /**
   * adv_forward_count between the two pods' addresses of one family, both directions, against nftables
   * counters (table `table`) of what each pod sent, around `send` (a TCP exchange cli -> srv).
   */
  const forwardExact = async (family: 'ip' | 'ip6', table: string, send: () => Promise<string>): Promise<number[]> => {
    const { cli, srv } = pods;
    const sentByCli = cli.ns.countSent([srv[family]], table);
    const sentBySrv = srv.ns.countSent([cli[family]], table);
    const fwd = async (from: 'cli' | 'srv', to: 'cli' | 'srv'): Promise<number> => total(await find(`${ADV}forward_count`, { ...side(from, 'source', pods[from][family]), ...side(to, 'destination', pods[to][family]) }));
    const pair = async (): Promise<number[]> => [await fwd('cli', 'srv'), await fwd('srv', 'cli')];
    const before = await untilStable(pair);
    const s0 = [sentByCli.read(srv[family]), sentBySrv.read(cli[family])];
    assert.match(await send(), /sent \d+/);
    const want = (): number[] => [sentByCli.read(srv[family]) - (s0[0] ?? 0), sentBySrv.read(cli[family]) - (s0[1] ?? 0)];
    assert.ok((want()[0] ?? 0) >= 4, `SYN, data and FIN from cli (${family}: ${want()[0]})`);
    let last = '';
    return eventually(`adv_forward_count (${family}) = the nftables counts`, 30_000, async () => {
      const g = (await pair()).map((v, i) => v - (before[i] ?? 0));
      const w = want();
      last = `metrics ${JSON.stringify(g)}, nftables ${JSON.stringify(w)}`;
      return JSON.stringify(g) === JSON.stringify(w) && g;
    }, 250).catch((e: unknown) => assert.fail(`${String(e)}; last: ${last}`));
  };

  it('pod to pod over the bridge veths: adv_forward_count equals the nftables counts of what each pod sent, both directions', async (t) => {
    const got = await forwardExact('ip', 'pfcount', () => pods.cli.ns.node(TCP_SEND, ['100000', pods.srv.ip, '8080']));
    t.diagnostic(`cli -> srv ${got[0]} packets, srv -> cli ${got[1]}`);
  });

  it('IPv6 (dual stack): pod to pod over the bridge veths: adv_forward_count by pod names equals the nftables counts of what each pod sent, both directions; a dropped IPv6 datagram counted in adv_drop_count', async (t) => {
    const { cli, srv } = pods;
    // a TCP sink on the server pod's IPv6 address (the pod's containers listen on IPv4), run in its network namespace
    const sink = await srv.ns.serve(TCP_SINK, [srv.ip6, '8086']);
    t.after(() => sink.kill('SIGKILL'));
    const got = await forwardExact('ip6', 'pfcount6', () => cli.ns.node(TCP_SEND, ['100000', srv.ip6, '8086']));
    // the server pod's nftables rule drops UDP to 9999 in the inet family: IPv6 too
    const dropLabels = { reason: 'NETFILTER_DROP', ...side('cli', 'source', cli.ip6), ...side('srv', 'destination', srv.ip6) };
    const d0 = total(await find(`${ADV}drop_count`, dropLabels));
    const f6 = total(await find(`${ADV}forward_count`, { ...side('cli', 'source', cli.ip6), ...side('srv', 'destination', srv.ip6) }));
    await cli.ns.node(UDP_SEND, [String(N), srv.ip6, '9999', '64']);
    const dropped = await eventually('adv_drop_count (IPv6) cli -> srv', 30_000, async () => {
      const v = total(await find(`${ADV}drop_count`, dropLabels)) - d0;
      return v >= N && v;
    }, 250);
    const firstSeen = total(await find(`${ADV}forward_count`, { ...side('cli', 'source', cli.ip6), ...side('srv', 'destination', srv.ip6) })) - f6;
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal(total(await find(`${ADV}drop_count`, dropLabels)) - d0, N, `adv_drop_count (IPv6): exactly the ${N} datagrams`);
    // The dropped datagrams left the client pod: adv_forward_count counts them once, at the client's veth.
    // At dataAggregationLevel high the kernel reports a UDP flow's first datagram at once and holds the
    // rest until the report interval (30 s) and the next sweep: wait for all N, so that no later case
    // between the same two addresses finds them in its window (the 39 of docs/real-node.md).
    const fwd6 = async (): Promise<number> => total(await find(`${ADV}forward_count`, { ...side('cli', 'source', cli.ip6), ...side('srv', 'destination', srv.ip6) }));
    const late0 = Date.now();
    const held = await eventually('adv_forward_count of the dropped datagrams (IPv6)', 60_000, async () => {
      const v = (await fwd6()) - (f6 ?? 0);
      return v >= N && v;
    }, 500);
    assert.equal(held, N, `adv_forward_count: the ${N} datagrams, once`);
    t.diagnostic(`IPv6 ${cli.ip6} -> ${srv.ip6}: cli -> srv ${got[0]} packets, srv -> cli ${got[1]}; ${dropped} dropped; their forward records: ${firstSeen} at once, all ${N} ${Date.now() - late0} ms after the drops were counted`);
  });

  /**
   * Traffic from the client pod through a ClusterIP Service to the server pod, exact (docs/real-node.md):
   * adv_forward_count and adv_forward_bytes against nftables counters of what each pod sent (the
   * client's to the Service address, the server's to the client). Each packet once, under both pods'
   * names, except a connection's first packet (the SYN), which leaves the client before conntrack
   * knows the connection: it is counted once, to the Service's address. Bytes: the agent counts the
   * frame at the veth (skb->len with the 14-byte Ethernet header), nftables the IP packet.
   */
  const serviceExact = async (family: 'ip' | 'ip6', svc: string, table: string, send: () => Promise<string>): Promise<number[][]> => {
    const { cli, srv } = pods;
    const cliSide = side('cli', 'source', cli[family]);
    const counters = (p: PodNs, ip: string): (() => [number, number]) => {
      p.countSent([ip], table);
      return () => {
        const j = JSON.parse(p.run('nft', ['-j', 'list', 'counter', 'inet', table, 'to_0'])) as { nftables: { counter?: { packets: number; bytes: number } }[] };
        const c = j.nftables.find((x) => x.counter)?.counter;
        if (!c) throw new Error(`no nftables counter ${table} in ${p.name}`);
        return [c.packets, c.bytes];
      };
    };
    const sentByCli = counters(cli.ns, svc);
    const sentBySrv = counters(srv.ns, cli[family]);
    const sets = [
      { ...cliSide, ...side('srv', 'destination', srv[family]) }, // the client's packets, translated to the backend
      { ...cliSide, destination_ip: svc }, // the first packet of each connection
      { ...side('srv', 'source', srv[family]), ...side('cli', 'destination', cli[family]) }, // the server's replies, at its veth
      { source_ip: svc, ...side('cli', 'destination', cli[family]) }, // replies after the reverse NAT: never (the server's veth counted them)
    ];
    const read = async (): Promise<number[][]> => {
      const all = await scrape();
      const sum = (name: string, l: Record<string, string>): number => total(series({ types: new Map(), samples: all }, name, l));
      return sets.map((l) => [sum(`${ADV}forward_count`, l), sum(`${ADV}forward_bytes`, l)]);
    };
    const before = await untilStable(read);
    const c0 = sentByCli();
    const s0 = sentBySrv();
    assert.match(await send(), /sent \d+/);
    const want = (): [[number, number], [number, number]] => {
      const [cp, cb] = sentByCli().map((v, i) => v - (c0[i] ?? 0)) as [number, number];
      const [sp, sb] = sentBySrv().map((v, i) => v - (s0[i] ?? 0)) as [number, number];
      return [[cp, cb], [sp, sb]];
    };
    const [[cp0]] = want();
    assert.ok(cp0 >= 4, `SYN, data and FIN from cli to the Service (${cp0})`);
    let last = '';
    const got = await eventually(`adv_forward_count/_bytes through the Service (${family}) = the pods' nftables counts`, 30_000, async () => {
      const g = (await read()).map((pair, i) => pair.map((v, j) => v - (before[i]?.[j] ?? 0)));
      const [[cp, cb], [sp, sb]] = want();
      const first = g[1] ?? [0, 0];
      // the client's packets: all but the first (translated) + the first (to the Service address); bytes + 14 per frame
      const w = [[cp - (first[0] ?? 0), cb + 14 * cp - (first[1] ?? 0)], [1, first[1] ?? 0], [sp, sb + 14 * sp], [0, 0]];
      last = `metrics ${JSON.stringify(g)}, want ${JSON.stringify(w)} (nftables: cli ${cp} packets ${cb} bytes, srv ${sp} packets ${sb} bytes)`;
      return JSON.stringify(g) === JSON.stringify(w) && (first[1] ?? 0) > 0 && (first[1] ?? 0) < 200 && g;
    }, 250).catch(async (e: unknown) => assert.fail(`${String(e)}; last: ${last}; series:\n${(await scrape()).filter((x) => x.name === `${ADV}forward_count` && [cli[family], srv[family], svc].some((ip) => x.labels['source_ip'] === ip || x.labels['destination_ip'] === ip)).map((x) => `${JSON.stringify(x.labels)} ${x.value}`).join('\n')}`));
    return got;
  };

  it('through the ClusterIP Service (kube-proxy nftables): the bytes reach the server pod; each packet counted once under both pods\' names (the SYN once, to the Service), packets and bytes exact against the pods\' nftables counters', async (t) => {
    const { cli } = pods;
    const got = await serviceExact('ip', svcIp, 'svcount', () => cli.ns.node(TCP_SEND, ['50000', svcIp, '80']));
    const [srvPod] = await listAll<Pod>(client, resources.pods, nsB, { labelSelector: 'app=srv' });
    assert.ok(srvPod);
    const log = await getText(client, `/api/v1/namespaces/${nsB}/pods/${srvPod.metadata.name}/log?container=sink`);
    assert.match(log, /got 50000/, 'the sink in the server pod read the 50 000 bytes sent to the Service');
    t.diagnostic(`Service ${svcIp}: cli -> srv ${JSON.stringify(got[0])} (packets, bytes), cli -> Service ${JSON.stringify(got[1])} (the SYN), srv -> cli ${JSON.stringify(got[2])}, Service -> cli ${JSON.stringify(got[3])}`);
  });

  it('IPv6 through a SingleStack IPv6 ClusterIP Service (kube-proxy\'s ip6 DNAT): each packet counted once under both pods\' names (the SYN once, to the Service), exact against the pods\' nftables counters', async (t) => {
    const { cli, srv } = pods;
    const sink = await srv.ns.serve(TCP_SINK, [srv.ip6, '8087']);
    t.after(() => sink.kill('SIGKILL'));
    await client.request('POST', collectionPath(resources.services, nsB), {
      body: { apiVersion: 'v1', kind: 'Service', metadata: { name: 'srv6', namespace: nsB }, spec: { ipFamilyPolicy: 'SingleStack', ipFamilies: ['IPv6'], selector: { app: 'srv' }, ports: [{ name: 'tcp', port: 80, targetPort: 8087, protocol: 'TCP' }] } },
    });
    const svc6 = (await client.request<{ spec: { clusterIP: string } }>('GET', objectPath(resources.services, nsB, 'srv6'))).spec.clusterIP;
    assert.ok(svc6.startsWith('fd51:252::'), `an IPv6 ClusterIP from fd51:252::/112 (${svc6})`);
    // kube-proxy programs the Service a moment after it exists: no packet to it before its DNAT to the pod is there
    await eventually('kube-proxy\'s ip6 table DNATs the Service to the server pod', 30_000, async () => {
      const table = sh('nft', ['list', 'table', 'ip6', 'kube-proxy']);
      return table.includes(svc6) && table.includes(srv.ip6);
    }, 500);
    const got = await serviceExact('ip6', svc6, 'svcount6', () => cli.ns.node(TCP_SEND, ['100000', svc6, '80']));
    t.diagnostic(`IPv6 Service ${svc6}: cli -> srv ${JSON.stringify(got[0])} (packets, bytes), cli -> Service ${JSON.stringify(got[1])} (the SYN), srv -> cli ${JSON.stringify(got[2])}, Service -> cli ${JSON.stringify(got[3])}`);
  });

  it('DNS: queries from the client pod to the DNS container of the server pod give adv_dns_request_count and adv_dns_response_count', async () => {
    const { cli } = pods;
    const out = await cli.ns.node(DNS_UDP4, ['3', pods.srv.ip]);
    assert.equal(out.trim(), 'answers 3');
    const request = { query: 'rn0.real-node.test.', query_type: 'A', ...side('cli', 'source'), ...side('srv', 'destination') };
    await eventually('adv_dns_request_count for rn0', 30_000, async () => total(await find(`${ADV}dns_request_count`, request)) >= 1, 250);
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal(total(await find(`${ADV}dns_request_count`, request)), 1, 'one query for rn0, counted once');
    const resp = await eventually('adv_dns_response_count for rn0', 30_000, async () => {
      const v = total(await find(`${ADV}dns_response_count`, { query: 'rn0.real-node.test.', return_code: 'NOERROR', response: '192.0.2.1' }));
      return v >= 1 && v;
    }, 250);
    assert.equal(resp, 1);
  });

  it('cluster DNS (a CoreDNS pod behind the kube-dns Service): the client pod resolves the Service name through kubelet\'s clusterDNS; the agent counts each query and answer once, with both pods\' names', async (t) => {
    const { cli } = pods;
    const fqdn = `srv.${nsB}.svc.cluster.local`;
    const dnsPod = (await listAll<Pod>(client, resources.pods, 'kube-system', { labelSelector: 'k8s-app=kube-dns' })).find((p) => p.status?.phase === 'Running');
    if (!dnsPod?.status?.podIP?.startsWith(POD_CIDR_PREFIX)) assert.fail(`no CoreDNS pod Running on the bridge: ${JSON.stringify(dnsPod?.status)}`);
    const dnsSide = (prefix: 'source' | 'destination'): Record<string, string> => ({
      [`${prefix}_namespace`]: 'kube-system', [`${prefix}_podname`]: dnsPod.metadata.name,
      [`${prefix}_workload_kind`]: 'Deployment', [`${prefix}_workload_name`]: 'coredns',
    });
    const exec = async (script: string, args: string[]): Promise<string> => {
      const r = await podExec(node.kubeconfig, cli.namespace, cli.name, 'main', ['/usr/local/bin/node', '--input-type=module', '-e', script, ...args]);
      assert.equal(r.status.status, 'Success', `exec in ${cli.name}: ${JSON.stringify(r.status)} ${r.stderr.slice(-1000)}`);
      return r.stdout.trim();
    };
    // getaddrinfo through the pod's resolv.conf (kubelet's: nameserver, search <ns>.svc.cluster.local ..., ndots:5)
    const looked = JSON.parse(await exec(RESOLV_LOOKUP, [`srv.${nsB}`])) as { nameserver: string; search: string; address: string };
    assert.equal(looked.nameserver, DNS_SERVICE_IP, 'kubelet\'s clusterDNS (the kube-dns Service) in the pod\'s resolv.conf');
    assert.match(looked.search, new RegExp(`^${nsA}\\.svc\\.cluster\\.local svc\\.cluster\\.local cluster\\.local`));
    assert.equal(looked.address, svcIp, `srv.${nsB} resolved through the search path to the Service's ClusterIP`);
    const request = { query: `${fqdn}.`, query_type: 'A', ...side('cli', 'source') };
    const response = { query: `${fqdn}.`, return_code: 'NOERROR', response: svcIp, ...side('cli', 'destination') };
    const all = async (): Promise<Sample[]> => [...await find(`${ADV}dns_request_count`, { query: `${fqdn}.` }), ...await find(`${ADV}dns_response_count`, { query: `${fqdn}.` })];
    const counts = async (): Promise<number[]> => [total(await find(`${ADV}dns_request_count`, request)), total(await find(`${ADV}dns_response_count`, response))];
    const before = await untilStable(counts, 2); // the lookup's own queries counted first
    const Q = 5;
    const answers = JSON.parse(await exec(DNS_A_QUERIES, [fqdn, String(Q)])) as string[];
    assert.deepEqual(answers, Array<string>(Q).fill(svcIp), 'CoreDNS answered every query with the ClusterIP');
    let last = '';
    await eventually(`adv_dns_request_count and adv_dns_response_count +${Q}`, 30_000, async () => {
      const d = (await counts()).map((v, i) => v - (before[i] ?? 0));
      last = JSON.stringify(d);
      return d[0] === Q && d[1] === Q;
    }, 250).catch(async (e: unknown) => assert.fail(`${String(e)}; last deltas [requests, responses] ${last}; series:\n${(await all()).map((x) => JSON.stringify(x)).join('\n')}`));
    await new Promise((r) => setTimeout(r, 1000));
    const series_ = (await all()).map((x) => JSON.stringify(x)).join('\n');
    assert.deepEqual((await counts()).map((v, i) => v - (before[i] ?? 0)), [Q, Q], `each query and answer counted once:\n${series_}`);
    // the queries go to the kube-dns Service's ClusterIP (the agent sees them on the client's veth, before
    // kube-proxy's DNAT): the destination is the Service, in kube-system; the answers come from the CoreDNS
    // pod (the Service's endpoint, the reply un-NATed on the bridge after the agent saw it), named from its real Pod object
    assert.ok(total(await find(`${ADV}dns_request_count`, { ...request, destination_namespace: 'kube-system' })) >= Q, `requests to the kube-dns Service:\n${series_}`);
    assert.ok(total(await find(`${ADV}dns_response_count`, { ...response, ...dnsSide('source') })) >= Q, `responses from ${dnsPod.metadata.name}:\n${series_}`);
    t.diagnostic(`${cli.name} -> kube-dns ${DNS_SERVICE_IP} -> ${dnsPod.metadata.name} ${dnsPod.status?.podIP ?? ''}: srv.${nsB} = ${looked.address}; ${Q} A queries for ${fqdn} counted`);
    t.diagnostic(series_);
  });

  it('a new pod: time from its creation to its first enriched series', async (t) => {
    const t0 = Date.now();
    await client.request('POST', collectionPath(deploymentsRes, nsA), { body: scriptDeployment(nsA, 'late', imageRef, [{ name: 'main', script: SLEEPER }]) });
    const late = await readyPod(client, nsA, 'late');
    const running = Date.now() - t0;
    const ns = new PodNs(netnsOf(late.status.podIP), '', late.status.podIP, '');
    const first = await eventually('an adv_ series naming the new pod', 60_000, async () => {
      await ns.node(UDP_SEND, ['1', pods.srv.ip, '9999', '16']);
      return (await find(`${ADV}drop_count`, { source_podname: late.metadata.name, source_workload_name: 'late' })).length > 0 && Date.now();
    }, 200);
    t.diagnostic(`pod created -> Ready ${running} ms, -> first enriched series ${first - t0} ms`);
    console.log(JSON.stringify({ figure: 'real-node-pod-created-to-first-enriched-series', ms: first - t0, readyMs: running }));
  });

  // Debian's prometheus (2.42) is built without Kubernetes service discovery: the chart's job runs with
  // its kubernetes_sd_configs replaced by a file_sd file holding what role: pod discovery gives for the
  // cluster's real Pods (one target per container port, or one per pod without ports; the same
  // __meta_kubernetes_* labels), so the chart's relabeling meets the real API objects.
  it('a real Prometheus with the chart\'s scrape job over the real Pods\' discovery labels: exactly the agent, up == 1, pod series', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'rn-prom-'));
    const jobs = parse(readFileSync(join(CHART, 'scrape', 'prometheus-job.yaml'), 'utf8')) as Record<string, unknown>[];
    assert.equal(jobs.length, 1);
    const { kubernetes_sd_configs: sd, ...job } = jobs[0] as Record<string, unknown>;
    assert.deepEqual(sd, [{ role: 'pod' }]);
    const all = await listAll<Pod>(client, resources.pods);
    writeFileSync(join(dir, 'pods.json'), JSON.stringify(podDiscovery(all)));
    writeFileSync(join(dir, 'prometheus.yml'), JSON.stringify({ global: { scrape_interval: '2s', evaluation_interval: '2s' }, scrape_configs: [{ ...job, scrape_interval: '2s', scrape_timeout: '2s', file_sd_configs: [{ files: [join(dir, 'pods.json')] }] }] }));
    const prom = spawn('prometheus', [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=${PROM}`, '--log.level=warn'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let promErr = '';
    prom.stderr.on('data', (d: Buffer) => (promErr += d.toString()));
    const exited = new Promise((r) => prom.once('exit', r));
    const api = async (path: string, params: Record<string, string> = {}): Promise<{ status: string; data: unknown }> => {
      const r = await fetch(`http://${PROM}${path}?${new URLSearchParams(params).toString()}`);
      return (await r.json()) as { status: string; data: unknown };
    };
    try {
      type Target = { labels: Record<string, string>; health: string; scrapeUrl: string; lastError: string };
      const active = await eventually('the scrape job\'s targets scraped', 60_000, async () => {
        if (prom.exitCode !== null) throw new Error(`prometheus exited ${prom.exitCode}: ${promErr.slice(-2000)}`);
        const a = ((await api('/api/v1/targets')).data as { activeTargets: Target[] }).activeTargets;
        return a.length > 0 && a.every((x) => x.health !== 'unknown') && a;
      }, 1000);
      const [agent] = await agentPods(client);
      assert.ok(agent);
      t.diagnostic(`targets: ${active.map((x) => `${x.scrapeUrl} ${x.health} ${JSON.stringify(x.labels)}`).join('; ')}`);
      assert.deepEqual(active.map((x) => [x.labels['job'], x.labels['instance'], x.labels['namespace'], x.labels['pod'], x.scrapeUrl, x.health]),
        [['network-observability', NODE_NAME, RELEASE_NS, agent.metadata.name, `http://${NODE_IP}:${AGENT_PORT}/metrics`, 'up']], 'exactly the agent, named by its node');
      await eventually('up == 1', 30_000, async () => ((await api('/api/v1/query', { query: 'up{job="network-observability"} == 1' })).data as { result: unknown[] }).result.length === 1, 1000);
      const adv = await eventually('pod-level series through Prometheus', 30_000, async () => {
        const r = (await api('/api/v1/query', { query: `sum by (source_podname) (networkobservability_adv_forward_count{source_namespace="${nsA}"})` })).data as { result: { metric: Record<string, string> }[] };
        return r.result.length > 0 && r.result;
      }, 1000);
      assert.ok(adv.some((x) => x.metric['source_podname'] === pods.cli.name), JSON.stringify(adv));
    } finally {
      if (prom.exitCode === null) prom.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('retina-agent diagnose through pods/exec (API server -> kubelet -> containerd\'s stream server) in the agent pod', async (t) => {
    const [agent] = await agentPods(client);
    assert.ok(agent);
    // the chart's agent container: `retina`, as Retina names it (agent.linux.containerName)
    const { status, stdout: out, stderr: err } = await podExec(node.kubeconfig, RELEASE_NS, agent.metadata.name, agent.status?.containerStatuses?.[0]?.name ?? 'retina',
      ['/usr/local/bin/node', '/app/retina-agent.mjs', 'diagnose', '--config', '/retina/config/config.yaml']);
    assert.equal(status.status, 'Success', `diagnose exited: ${JSON.stringify(status)} ${err.slice(-1000)}`);
    type Section = { ok: boolean; error?: string; data?: Record<string, unknown> };
    const doc = JSON.parse(out) as { schema: string; sections: Record<string, Section> };
    assert.equal(doc.schema, 'retina-ts/diagnose/v1');
    const k8s = doc.sections['kubernetes'];
    assert.ok(k8s?.ok, `kubernetes section: ${k8s?.error}`);
    assert.equal(k8s.data?.['reachable'], true, `in-cluster config reaches the API server: ${JSON.stringify(k8s.data)}`);
    assert.equal(k8s.data?.['server'], `https://${API_SERVICE_IP}:443`, 'in-cluster: the kubernetes Service, through kube-proxy');
    const running = doc.sections['agent'];
    assert.ok(running?.ok, `agent section: ${running?.error}`);
    assert.equal(running.data?.['running'], true, `the running agent answered: ${JSON.stringify(running.data).slice(0, 500)}`);
    t.diagnostic(`sections: ${Object.entries(doc.sections).map(([k, v]) => `${k}=${v.ok ? 'ok' : v.error ?? 'failed'}`).join(', ')}`);
  });

  // The capture Job runs in the real image on the real node and writes its tarball to the node's disk;
  // `capture download` brings it back through a helper pod and pods/exec.
  it('kubectl-retina capture create: the Job\'s pod runs the real image on the node, captures exactly the filtered packets, and writes its tarball to the node\'s disk; capture download brings it back through pods/exec', async (t) => {
    const captureNs = 'rn-capture';
    const PORT = 39_617;
    const hadLogDir = existsSync('/var/log/retina');
    await createNamespace(client, captureNs);
    try {
      const t0 = Date.now();
      const created = await run(`${ROOT}bin/kubectl-retina`, ['capture', 'create', '--name', 'rn-cap', '--namespace', captureNs, '--node-names', NODE_NAME, '--duration', '6s',
        '--host-path', 'rn', '--interfaces', 'lo', '--include-filter', `127.0.0.1:${PORT}`, '--include-metadata=false', '--debug=true', '--kubeconfig', node.kubeconfig],
      { env: { ...process.env, RETINA_AGENT_IMAGE: imageRef }, timeout: 120_000 }).catch((e: unknown) => assert.fail(`capture create: ${String((e as { stderr?: string }).stderr ?? e)}`));
      assert.ok(created.stdout.length >= 0);
      const pod = await eventually('the capture pod Running', 120_000, async () => {
        const ps = await listAll<Pod>(client, resources.pods, captureNs, { labelSelector: 'capture-name=rn-cap' });
        return ps.find((p) => p.status?.phase === 'Running' || p.status?.phase === 'Succeeded');
      }, 250);
      assert.equal(pod.spec.nodeName, NODE_NAME);
      // Running is not capturing yet: tcpdump listens a moment later (seconds on a busy host). The
      // workload logs "capturing" once every tcpdump says it listens.
      await eventually('the capture workload\'s "capturing" log line', 30_000, async () =>
        (await podLog(client, pod)).some((l) => l['msg'] === 'capturing'), 200);
      const s = createSocket('udp4');
      for (let i = 0; i < 15; i++) await new Promise<void>((res, rej) => s.send(Buffer.from(`rn-${i}`), PORT, '127.0.0.1', (e) => (e ? rej(e) : res())));
      for (let i = 0; i < 10; i++) await new Promise<void>((res, rej) => s.send(Buffer.from(`other-${i}`), PORT + 1, '127.0.0.1', (e) => (e ? rej(e) : res())));
      s.close();
      // Without the operator's retina-capture ServiceAccount the pod cannot annotate itself (kubectl-retina
      // says so at create; download then lists the node's directory): the tarball is found on the disk.
      await eventually('the capture pod Succeeded', 60_000, async () =>
        (await client.request<Pod>('GET', objectPath(resources.pods, captureNs, pod.metadata.name))).status?.phase === 'Succeeded', 500);
      const dir = '/var/log/retina/captures/rn';
      const tarballs = existsSync(dir) ? sh('ls', [dir]).split('\n').filter((f) => f.endsWith('.tar.gz')) : [];
      assert.equal(tarballs.length, 1, `one tarball in ${dir} on the node's disk: ${tarballs.join(', ')}`);
      assert.match(tarballs[0] ?? '', new RegExp(`^rn-cap-${NODE_NAME}-\\d{14}UTC\\.tar\\.gz$`));
      const tarball = join(dir, tarballs[0] ?? '');
      const x = extract(tarball);
      const pcap = x.manifest.files[0]?.name ?? '';
      const lines = pcapLines(join(x.folder, pcap));
      assert.equal(lines.length, 15, lines.join('\n'));
      assert.ok(lines.every((l) => l.includes(`.${PORT}`)), 'only the filtered port');
      t.diagnostic(`capture create -> the Job's pod done, its tarball verified: ${Date.now() - t0} ms (6 s capturing)`);

      // download: a helper pod on the node mounts the directory and the tarball streams out through
      // pods/exec (API server -> kubelet -> containerd's stream server); its image is busybox, built from
      // Debian's busybox-static and imported (the node has no registry for Retina's default image)
      const bb = (await run('bash', [`${ROOT}hack/node/build.sh`, 'busybox-image'])).stdout.trim();
      const bbRef = (await importImage(bb)).split('\n').find((r) => r.startsWith('docker.io/retina-ts-node/busybox:'));
      assert.ok(bbRef, `the busybox image in containerd after importing ${bb}`);
      const out = mkdtempSync(join(tmpdir(), 'rn-download-'));
      try {
        const t1 = Date.now();
        const dl = await run(`${ROOT}bin/kubectl-retina`, ['capture', 'download', '--name', 'rn-cap', '--namespace', captureNs, '--output', out, '--download-image', bbRef, '--kubeconfig', node.kubeconfig], { timeout: 180_000 })
          .catch((e: unknown) => assert.fail(`capture download: ${String((e as { stderr?: string }).stderr ?? e)}`));
        const got = sh('find', [out, '-type', 'f']).split('\n').filter(Boolean);
        assert.deepEqual(got, [join(out, 'rn-cap', tarballs[0] ?? '')], `the one tarball under <output>/<capture>/: ${dl.stdout}${dl.stderr}`);
        assert.ok(readFileSync(got[0] ?? '').equals(readFileSync(tarball)), 'byte for byte the tarball on the node\'s disk');
        assert.deepEqual(pcapLines(join(extract(got[0] ?? '').folder, pcap)), lines, 'the downloaded pcap holds the same 15 packets');
        const helpers = await listAll<Pod>(client, resources.pods, captureNs, { labelSelector: 'retina.sh/download-for' });
        assert.deepEqual(helpers.filter((p) => !p.metadata.deletionTimestamp).map((p) => p.metadata.name), [], 'the helper pod deleted');
        t.diagnostic(`capture download through pods/exec with ${bbRef}: ${Date.now() - t1} ms`);
      } finally {
        rmSync(out, { recursive: true, force: true });
      }
    } finally {
      await client.request('DELETE', objectPath(resources.namespaces, undefined, captureNs)).catch(() => undefined);
      await eventually(`namespace ${captureNs} gone`, 120_000, async () => client.request('GET', objectPath(resources.namespaces, undefined, captureNs)).then(() => false, () => true), 500).catch(() => undefined);
      rmSync(hadLogDir ? '/var/log/retina/captures/rn' : '/var/log/retina', { recursive: true, force: true });
    }
  });

  it('the agent pod\'s own cgroup: RSS and CPU idle and under 50 000 packets/s between two pods', async (t) => {
    const [agent] = await agentPods(client);
    assert.ok(agent?.metadata.uid);
    const mem = containerCgroup(agent, 'memory');
    const cpu = containerCgroup(agent, 'cpuacct');
    // resident = anonymous (total_rss) + file pages mapped (total_mapped_file: node's own text, the bundle)
    const rssMiB = (): number => {
      const stat = readFileSync(`${mem}/memory.stat`, 'utf8');
      const v = (k: string): number => Number(new RegExp(`^${k} (\\d+)$`, 'm').exec(stat)?.[1] ?? NaN);
      return (v('total_rss') + v('total_mapped_file')) / 1048576;
    };
    const cpuNs = (): number => Number(readFileSync(`${cpu}/cpuacct.usage`, 'utf8'));
    const window = async (ms: number, load?: () => Promise<string>): Promise<{ cores: number; rssMiB: number; out?: string }> => {
      const c0 = cpuNs();
      const t0 = process.hrtime.bigint();
      const out = load ? await load() : (await new Promise((r) => setTimeout(r, ms)), undefined);
      const wallNs = Number(process.hrtime.bigint() - t0);
      return { cores: (cpuNs() - c0) / wallNs, rssMiB: rssMiB(), ...(out ? { out } : {}) };
    };
    // the process's own resident set too: the image's files are shared page cache, charged to whichever
    // pod's cgroup read them first (the operator's, for node and the bundle), so the cgroup undercounts them
    const pid = Number(readFileSync(`${mem}/cgroup.procs`, 'utf8').trim().split('\n')[0]);
    const vmRssMiB = (): number => Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024;
    // The agent's own CPU is small either way (the programs run in the senders' softirq, charged to no
    // pod): an idle window that another helper's load or the previous case's cleanup (a namespace's
    // pods and RetinaEndpoints going) made busy is measured again, once.
    const figs: unknown[] = [];
    let last = { idleCores: 0, busyCores: 0, idleRssMiB: 0 };
    for (let attempt = 1; attempt <= 2; attempt++) {
      const idle = await window(10_000);
      const idleVmRss = vmRssMiB();
      const busy = await window(10_000, () => pods.cli.ns.node(UDP_PACED, [pods.srv.ip, '7000', '50000', '10000'], 60_000));
      const busyVmRss = vmRssMiB();
      const sent = /sent (\d+) in (\d+) ms/.exec(busy.out ?? '');
      assert.ok(sent, `the paced sender's report: ${busy.out}`);
      const rate = Number(sent[1]) / (Number(sent[2]) / 1000);
      const fig = { figure: 'real-node-agent-cgroup', attempt, idle: { cpuCores: +idle.cores.toFixed(3), cgroupRssMiB: +idle.rssMiB.toFixed(1), vmRssMiB: +idleVmRss.toFixed(1) }, load: { packetsPerSecond: Math.round(rate), cpuCores: +busy.cores.toFixed(3), cgroupRssMiB: +busy.rssMiB.toFixed(1), vmRssMiB: +busyVmRss.toFixed(1) } };
      figs.push(fig);
      t.diagnostic(JSON.stringify(fig));
      console.log(JSON.stringify(fig));
      last = { idleCores: idle.cores, busyCores: busy.cores, idleRssMiB: idle.rssMiB };
      if (busy.cores > idle.cores) break;
    }
    assert.ok(last.idleRssMiB > 10 && last.idleRssMiB < 512, 'a plausible RSS under the chart\'s limit');
    assert.ok(last.busyCores > last.idleCores, `the agent works for the traffic: ${JSON.stringify(figs)}`);
  });

  it('Hubble Relay as the chart\'s Deployment (hubble.relay, its image imported): hubble observe through its Service returns the test pods\' flows', async (t) => {
    const { cli, srv } = pods;
    const tools = (await run('bash', [`${ROOT}hack/hubble/build.sh`], { env: { ...process.env, HUBBLE_BUILD_IF_MISSING: 'no' } })).stdout.trim();
    const archive = (await run('bash', [`${ROOT}hack/node/build.sh`, 'relay-image'], { env: { ...process.env, HUBBLE_BUILD_IF_MISSING: 'no' } })).stdout.trim();
    const relayRef = (await importImage(archive)).split('\n').find((r) => r.startsWith('docker.io/retina-ts-node/hubble-relay:'));
    assert.ok(relayRef, `the relay image in containerd after importing ${archive}`);
    const t0 = Date.now();
    const up = await helm(['upgrade', RELEASE, CHART, '-n', RELEASE_NS, '--reuse-values', '--set', 'hubble.enabled=true', '--set', 'hubble.relay.enabled=true', '--set', `hubble.relay.image=${relayRef}`]);
    assert.equal(up.code, 0, `helm upgrade: ${up.stderr}`);
    await eventually('the relay Deployment and the rolled agent Ready', 300_000, async () => {
      const [ds] = await listAll<KubeObject & { metadata: { generation?: number }; status: { numberReady?: number; updatedNumberScheduled?: number; observedGeneration?: number } }>(client, daemonSetsRes, RELEASE_NS);
      const relay = (await listAll<KubeObject & { status: { readyReplicas?: number } }>(client, deploymentsRes, RELEASE_NS, { labelSelector: 'app.kubernetes.io/component=hubble-relay' }))[0];
      return ds && ds.status.observedGeneration === ds.metadata.generation && ds.status.updatedNumberScheduled === 1 && ds.status.numberReady === 1 && relay?.status.readyReplicas === 1;
    }, 500).catch(async (e: unknown) => assert.fail(`${String(e)}\n${await diagnosis(client)}`));
    t.diagnostic(`helm upgrade with hubble.relay -> relay and agent Ready: ${Date.now() - t0} ms`);
    const relayIp = (await client.request<{ spec: { clusterIP: string } }>('GET', objectPath(resources.services, RELEASE_NS, `${RELEASE}-hubble-relay`))).spec.clusterIP;
    const server = `${relayIp}:80`;
    const hubble = async (args: string[]): Promise<string> => (await run(join(tools, 'hubble'), [...args, '--server', server], { env: { ...process.env, HUBBLE_CONFIG: '/dev/null' }, timeout: 30_000, maxBuffer: 64 << 20 })).stdout;
    // the relay found the agent through the peer Service (a name CoreDNS answers) and the node's address
    await eventually('hubble list nodes through the relay names the node', 60_000, async () => (await hubble(['list', 'nodes']).catch(() => '')).includes(NODE_NAME), 1000);
    await cli.ns.node(UDP_SEND, ['7', srv.ip, '9999', '32']);
    await cli.ns.node(TCP_SEND, ['1000', srv.ip, '8080']);
    type Flow = { verdict?: string; source?: { namespace?: string; pod_name?: string }; destination?: { namespace?: string; pod_name?: string }; l4?: { UDP?: { destination_port?: number }; TCP?: { destination_port?: number } } };
    const flows = async (): Promise<Flow[]> => (await hubble(['observe', '-o', 'json', '--last', '5000', '--from-pod', `${cli.namespace}/${cli.name}`, '--to-pod', `${srv.namespace}/${srv.name}`]))
      .split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l) as { flow?: Flow }).filter((m) => m.flow).map((m) => m.flow as Flow);
    const got = await eventually('the pods\' flows through the relay', 30_000, async () => {
      const fs = await flows();
      const drops = fs.filter((f) => f.verdict === 'DROPPED' && f.l4?.UDP?.destination_port === 9999);
      const tcp = fs.filter((f) => f.verdict === 'FORWARDED' && f.l4?.TCP?.destination_port === 8080);
      return drops.length >= 7 && tcp.length > 0 && { fs, drops, tcp };
    }, 1000);
    assert.ok(got.fs.every((f) => f.source?.pod_name === cli.name && f.source.namespace === cli.namespace && f.destination?.pod_name === srv.name && f.destination.namespace === srv.namespace), 'every flow names both pods');
    t.diagnostic(`through the relay at ${server}: ${got.fs.length} flows cli -> srv, ${got.drops.length} dropped to 9999, ${got.tcp.length} TCP to 8080`);
  });

  // ---- lifecycle: each way the agent's process goes is followed by exactly one set of hooks ----
  /** The release's agent pod once Ready and serving, other than `not` (a uid) or restarted more than `restartsAbove` times. */
  const readyAgent = async (what: string, pred: (p: Pod) => boolean): Promise<Pod> => {
    const pod = await eventually(what, 180_000, async () => {
      const ps = (await agentPods(client)) as (Pod & { status?: { conditions?: { type: string; status: string }[] } })[];
      return ps.find((p) => !p.metadata.deletionTimestamp && pred(p) && p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
    }, 250).catch(async (e: unknown) => assert.fail(`${String(e)}\n${await diagnosis(client)}`));
    await eventually('the agent serving /readyz', 60_000, async () => (await get(AGENT_PORT, '/readyz', 2000)).status === 200, 250);
    return pod;
  };
  /** Waits until the agent's hooks are `want`'s shape (attached, programs) and no killed run's filter is left; fails naming the last difference. */
  const sameSetAs = async (want: Hooks, pod: Pod): Promise<Hooks> => {
    let last = '';
    return eventually('exactly one set of hooks, the new agent\'s', 60_000, () => {
      const h = hooksOnNode(podPids(pod));
      last = JSON.stringify({ attached: h.attached, progNames: h.progNames, strayFilters: h.strayFilters, oldProgramsLoaded: stillLoaded(want.progIds) });
      return JSON.stringify(h.attached) === JSON.stringify(want.attached) && JSON.stringify(h.progNames) === JSON.stringify(want.progNames)
        && h.strayFilters.length === 0 && stillLoaded(want.progIds).length === 0 && h;
    }, 500).catch((e: unknown) => assert.fail(`${String(e)}\nwanted ${JSON.stringify({ attached: want.attached, progNames: want.progNames })}\nlast ${last}`));
  };
  const hooksNow = async (): Promise<{ pod: Pod; hooks: Hooks }> => {
    const [pod] = await agentPods(client);
    assert.ok(pod, 'an agent pod');
    const hooks = hooksOnNode(podPids(pod));
    assert.ok(hooks.attached.some((a) => a.includes(' tc ') || a.includes(' tcx ')), `the agent has hooks on the node's interfaces: ${JSON.stringify(hooks)}`);
    assert.ok(hooks.attached.some((a) => a.startsWith('veth')), `packetparser on the pods' veths: ${JSON.stringify(hooks.attached)}`);
    assert.deepEqual(hooks.strayFilters, [], 'no filter of an earlier run');
    return { pod, hooks };
  };

  it('deleting the agent pod: the DaemonSet\'s new pod holds exactly one set of hooks, none of the old pod\'s are left', async (t) => {
    const { pod: old, hooks: before } = await hooksNow();
    const t0 = Date.now();
    await client.request('DELETE', objectPath(resources.pods, RELEASE_NS, old.metadata.name));
    const fresh = await readyAgent('a new agent pod Ready', (p) => p.metadata.uid !== old.metadata.uid);
    const after = await sameSetAs(before, fresh);
    t.diagnostic(`pod deleted -> new pod Ready with one set (${after.attached.length} hooks, ${after.progIds.length} programs): ${Date.now() - t0} ms`);
  });

  it('SIGKILL of the agent container through containerd (ctr tasks kill): the restarted container holds exactly one set of hooks', async (t) => {
    const { pod, hooks: before } = await hooksNow();
    const status = pod.status?.containerStatuses?.[0] as { containerID?: string; restartCount: number } | undefined;
    const id = status?.containerID?.replace(/^containerd:\/\//, '') ?? '';
    assert.ok(id, 'the agent container\'s id');
    const pids = podPids(pod);
    const t0 = Date.now();
    await run(join(node.bin, 'ctr'), ['--address', '/run/retina-ts-node/containerd.sock', '-n', 'k8s.io', 'tasks', 'kill', '--signal', 'SIGKILL', id], { timeout: 30_000 });
    await eventually('the killed agent process gone', 30_000, () => pids.every((p) => !existsSync(`/proc/${p}`)), 100);
    // what the kill left until the new container starts: clsact filters keep their programs; TCX links go with the process's fds
    const left = hooksOnNode([]);
    const restarted = await readyAgent('the agent container restarted and Ready', (p) => p.metadata.uid === pod.metadata.uid && (p.status?.containerStatuses?.[0]?.restartCount ?? 0) > (status?.restartCount ?? 0));
    assert.equal(restarted.status?.containerStatuses?.[0]?.restartCount, (status?.restartCount ?? 0) + 1, 'restarted once');
    const after = await sameSetAs(before, restarted);
    t.diagnostic(`killed -> restarted with one set (${after.attached.length} hooks): ${Date.now() - t0} ms; the kill left ${left.strayFilters.length} tc filters for the new run to remove`);
  });

  it('helm upgrade to a changed config: the DaemonSet rolls, /metrics scraped every second has no gap beyond one scrape interval, no hook left behind', async (t) => {
    const job = (parse(readFileSync(join(CHART, 'scrape', 'prometheus-job.yaml'), 'utf8')) as { scrape_interval: string }[])[0];
    const intervalMs = Number(/^(\d+)s$/.exec(job?.scrape_interval ?? '')?.[1] ?? NaN) * 1000;
    assert.ok(intervalMs > 0, `the chart's scrape interval: ${job?.scrape_interval}`);
    const { pod: old, hooks: before } = await hooksNow();
    const oks: { at: number; start: string }[] = [];
    let scraping = true;
    const scraper = (async () => {
      while (scraping) {
        const at = Date.now();
        const r = await get(AGENT_PORT, '/metrics', 1000).catch(() => undefined);
        const start = r?.status === 200 ? /^process_start_time_seconds (\S+)$/m.exec(r.body)?.[1] : undefined;
        if (start) oks.push({ at, start });
        await new Promise((res) => setTimeout(res, Math.max(0, at + 1000 - Date.now())));
      }
    })();
    try {
      await new Promise((r) => setTimeout(r, 3000));
      const repo = imageRef.slice(0, imageRef.lastIndexOf(':'));
      const up = await helm(['upgrade', RELEASE, CHART, '-n', RELEASE_NS, '--reuse-values', '--set', 'config.metricsIntervalDuration=5s', '--set', `image.linux.repository=${repo}`]);
      assert.equal(up.code, 0, `helm upgrade: ${up.stderr}`);
      const fresh = await readyAgent('the rolled agent pod Ready', (p) => p.metadata.uid !== old.metadata.uid);
      t.diagnostic(`rolled to ${fresh.metadata.name}`);
      await new Promise((r) => setTimeout(r, 3000));
      scraping = false;
      await scraper;
      const starts = [...new Set(oks.map((o) => o.start))];
      assert.equal(starts.length, 2, `scrapes of the old agent, then of the new one: ${starts.join(', ')}`);
      let gap = 0;
      for (let i = 1; i < oks.length; i++) gap = Math.max(gap, (oks[i]?.at ?? 0) - (oks[i - 1]?.at ?? 0));
      t.diagnostic(`${oks.length} scrapes; the longest gap between two answered scrapes: ${gap} ms (scrape interval ${intervalMs} ms)`);
      console.log(JSON.stringify({ figure: 'real-node-upgrade-metrics-gap', ms: gap, scrapeIntervalMs: intervalMs }));
      assert.ok(gap < intervalMs, `/metrics was silent ${gap} ms, more than one scrape interval (${intervalMs} ms)`);
      await sameSetAs(before, fresh);
    } finally {
      scraping = false;
      await scraper;
    }
  });

  it('helm uninstall: the agent pod goes and leaves no tc filter, TCX link, BPF program or pinned map; the documented CRD deletion leaves no object of ours', async (t) => {
    const [agent] = await agentPods(client);
    assert.ok(agent);
    const pid = Number(readFileSync(`${containerCgroup(agent, 'memory')}/cgroup.procs`, 'utf8').trim().split('\n')[0]);
    assert.ok(pid > 0, 'the agent\'s host pid');
    const owned = bpfIdsOf(pid);
    assert.ok(owned.progs.length > 0, 'the agent holds BPF programs');
    // the node's interfaces: the bridge, the pods' host-side veths on it, the default route's
    const names = (args: string[]): string[] => sh('ip', ['-o', ...args]).split('\n').map((l) => /^\d+: ([^:@]+)/.exec(l)?.[1]).filter((n): n is string => Boolean(n));
    const defaultDev = /dev (\S+)/.exec(sh('ip', ['-4', 'route', 'show', 'default']))?.[1];
    const ifnames = [BRIDGE, ...names(['link', 'show', 'master', BRIDGE]), ...(defaultDev ? [defaultDev] : [])];
    const pinned = (): string[] => (existsSync('/sys/fs/bpf') ? sh('find', ['/sys/fs/bpf', '-mindepth', '1']).split('\n').filter(Boolean) : []);
    const pinned0 = pinned();
    // A Capture the operator ran carries its finalizer until the operator cleans it up: docs/install.md
    // deletes the captures while the operator still runs (without it the CRD deletion below would wait
    // for ever on the finalizer).
    const capNs = 'rn-opcap';
    const hadLogDir = existsSync('/var/log/retina');
    await createNamespace(client, capNs);
    await client.request('POST', collectionPath(resources.captures, capNs), {
      body: { apiVersion: 'retina.sh/v1alpha1', kind: 'Capture', metadata: { name: 'opcap', namespace: capNs }, spec: {
        captureConfiguration: { captureTarget: { nodeSelector: { matchLabels: { 'kubernetes.io/hostname': NODE_NAME } } }, captureOption: { duration: '2s' } },
        outputConfiguration: { hostPath: 'rn-opcap' },
      } },
    });
    await eventually('the operator\'s finalizer on the Capture', 60_000, async () =>
      ((await client.request<KubeObject & { metadata: { finalizers?: string[] } }>('GET', objectPath(resources.captures, capNs, 'opcap'))).metadata.finalizers ?? []).length > 0, 500);
    for (const c of await listAll<KubeObject>(client, resources.captures)) await client.request('DELETE', objectPath(resources.captures, c.metadata.namespace, c.metadata.name));
    await eventually('every Capture gone (the operator removed its finalizer)', 120_000, async () => (await listAll<KubeObject>(client, resources.captures)).length === 0, 500);
    // The namespace is the test's own: it is deleted, not waited for. Its deletion is the namespace
    // controller's, which requeues a namespace whose pods were still terminating with its own back-off
    // (estimate + up to 60 s); with every Capture gone (above) nothing of ours is left in it. Waiting for
    // it here failed this case now and then (Terminating past 120 s with every condition "done").
    await client.request('DELETE', objectPath(resources.namespaces, undefined, capNs)).catch(() => undefined);
    rmSync(hadLogDir ? '/var/log/retina/captures/rn-opcap' : '/var/log/retina', { recursive: true, force: true });
    const un = await helm(['uninstall', RELEASE, '-n', RELEASE_NS, '--wait', '--timeout', '5m']);
    assert.equal(un.code, 0, `helm uninstall: ${un.stderr}`);
    await eventually('the agent pod gone', 120_000, async () => (await agentPods(client)).length === 0, 500);
    const tcOnOurs = ifnames.filter((i) => { try { sh('ip', ['link', 'show', i]); return true; } catch { return false; } });
    assert.deepEqual(await leftoversAfterStop(undefined, tcOnOurs, owned, 10_000), []);
    assert.deepEqual(pinned().filter((f) => !pinned0.includes(f) || /retina/i.test(f)), [], 'no pinned map of ours under /sys/fs/bpf');
    assert.deepEqual(hooksOnNode([]).strayFilters, [], 'no tc filter of ours on any of the node\'s interfaces');
    // CRDs stay with `helm uninstall` (Helm's crds/); docs/install.md's second step deletes them and
    // every object of their kinds: it must finish with the operator gone (no finalizer left to hang it).
    const left = async (): Promise<string[]> => (await Promise.all([resources.retinaEndpoints, resources.metricsConfigurations, resources.captures].map(async (r) =>
      (await listAll<KubeObject>(client, r).catch(() => [])).map((o) => `${r.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name}`)))).flat();
    const kept = await left();
    t.diagnostic(`after helm uninstall, objects of our kinds: ${kept.join(', ') || 'none'}`);
    const live = new Set((await listAll<Pod>(client, resources.pods)).map((p) => `RetinaEndpoint ${p.metadata.namespace ?? ''}/${p.metadata.name}`));
    assert.deepEqual(kept.filter((k) => k.startsWith('RetinaEndpoint ') && !live.has(k)), [], 'no RetinaEndpoint of a pod that is gone (the release\'s own pods included)');
    const crds = ['captures.retina.sh', 'metricsconfigurations.retina.sh', 'retinaendpoints.retina.sh'];
    for (const c of crds) await client.request('DELETE', objectPath(resources.crds, undefined, c));
    await eventually('the CRDs and every object of theirs gone', 120_000, async () => {
      const still = await Promise.all(crds.map((c) => client.request('GET', objectPath(resources.crds, undefined, c)).then(() => c, () => undefined)));
      return still.every((c) => c === undefined);
    }, 500).catch(async (e: unknown) => assert.fail(`${String(e)}: ${(await left()).join(', ')}`));
  });
  // ---- the hardened profile: /metrics over TLS for a token allowed to get it ----
  it('the hardened profile: /metrics over HTTPS with token auth; a real Prometheus with a ServiceAccount token and the Secret\'s CA scrapes it, up == 1', async (t) => {
    const pki = mkdtempSync(join(tmpdir(), 'rn-tls-'));
    const serverName = `network-observability.${RELEASE_NS}.svc`;
    const ssl = (args: string[]): Promise<unknown> => run('openssl', args, { cwd: pki });
    try {
      await ssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=rn-metrics-ca', '-keyout', 'ca.key', '-out', 'ca.crt']);
      await ssl(['req', '-newkey', 'rsa:2048', '-nodes', '-subj', `/CN=${serverName}`, '-keyout', 'tls.key', '-out', 'tls.csr']);
      writeFileSync(join(pki, 'ext.cnf'), `subjectAltName=DNS:${serverName}\nextendedKeyUsage=serverAuth\n`);
      await ssl(['x509', '-req', '-in', 'tls.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-extfile', 'ext.cnf', '-out', 'tls.crt']);
      const b64 = (f: string): string => readFileSync(join(pki, f)).toString('base64');
      await client.request('POST', collectionPath(resources.secrets, RELEASE_NS), {
        body: { apiVersion: 'v1', kind: 'Secret', type: 'kubernetes.io/tls', metadata: { name: `${RELEASE}-metrics-tls`, namespace: RELEASE_NS }, data: { 'tls.crt': b64('tls.crt'), 'tls.key': b64('tls.key'), 'ca.crt': b64('ca.crt') } },
      });
      await createNamespace(client, 'monitoring');
      for (const sa of ['prometheus', 'nobody']) {
        await client.request('POST', '/api/v1/namespaces/monitoring/serviceaccounts', { body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: sa, namespace: 'monitoring' } } });
      }
      const token = async (sa: string): Promise<string> => (await client.request<{ status: { token: string } }>('POST', `/api/v1/namespaces/monitoring/serviceaccounts/${sa}/token`, {
        body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } },
      })).status.token;
      const repo = imageRef.slice(0, imageRef.lastIndexOf(':'));
      const t0 = Date.now();
      const inst = await helm(['install', RELEASE, CHART, '-n', RELEASE_NS, '-f', profileFile('hardened'), '--set', `image.linux.repository=${repo}`, '--set', `image.linux.tag=${IMAGE_VERSION}`, '--set', 'image.linux.pullPolicy=Never',
        '--set', 'metricsSecurity.auth.scrapers[0].name=prometheus', '--set', 'metricsSecurity.auth.scrapers[0].namespace=monitoring']);
      assert.equal(inst.code, 0, `helm install -f hardened: ${inst.stderr}\n${inst.stdout}`);
      await eventually('the hardened agent and operator Ready', 300_000, async () => {
        const [ds] = await listAll<KubeObject & { status: { numberReady?: number; desiredNumberScheduled?: number } }>(client, daemonSetsRes, RELEASE_NS, { labelSelector: `app.kubernetes.io/instance=${RELEASE}` });
        const [op] = await listAll<KubeObject & { spec: { replicas: number }; status: { readyReplicas?: number } }>(client, deploymentsRes, RELEASE_NS, { labelSelector: `app.kubernetes.io/instance=${RELEASE}` });
        return ds && op && ds.status.desiredNumberScheduled === 1 && ds.status.numberReady === 1 && op.status.readyReplicas === op.spec.replicas;
      }, 250).catch(async (e: unknown) => assert.fail(`${String(e)}\n${await diagnosis(client)}`));
      t.diagnostic(`helm install -f hardened -> Ready (HTTPS probes): ${Date.now() - t0} ms`);
      // by hand first: plain HTTP refused, no token 401, a token without the ClusterRole 403, Prometheus' 200
      const ca = readFileSync(join(pki, 'ca.crt'));
      const httpsGet = (auth?: string): Promise<number> => new Promise((resolve, reject) => {
        const req = httpsRequest({ host: NODE_IP, port: AGENT_PORT, path: '/metrics', servername: serverName, ca, timeout: 10_000, headers: auth ? { authorization: `Bearer ${auth}` } : {} }, (res) => { res.resume(); res.on('end', () => resolve(res.statusCode ?? 0)); });
        req.on('timeout', () => req.destroy(new Error('timed out')));
        req.on('error', reject);
        req.end();
      });
      const promToken = await token('prometheus');
      assert.equal(await httpsGet(), 401, 'no token');
      assert.equal(await httpsGet(await token('nobody')), 403, 'a ServiceAccount not bound to the metrics-reader ClusterRole');
      assert.equal(await httpsGet(promToken), 200, 'Prometheus\' ServiceAccount (metricsSecurity.auth.scrapers)');
      await assert.rejects(get(AGENT_PORT, '/metrics', 5000).then((r) => { if (r.status !== 200) throw new Error(String(r.status)); return r; }), 'no plain HTTP /metrics');
      // the job of docs/metrics.md (Azure Monitor's, static): the Secret's ca.crt and the token as files
      await using prom = startPrometheus(PROM, (dir) => {
        writeFileSync(join(dir, 'ca.crt'), ca);
        writeFileSync(join(dir, 'token'), promToken);
        return {
          global: { scrape_interval: '2s', evaluation_interval: '2s' },
          scrape_configs: [{
            job_name: 'networkobservability-retina-tls', scheme: 'https', scrape_interval: '2s', scrape_timeout: '2s',
            tls_config: { ca_file: join(dir, 'ca.crt'), server_name: serverName },
            bearer_token_file: join(dir, 'token'),
            static_configs: [{ targets: [`${NODE_IP}:${AGENT_PORT}`] }],
            relabel_configs: [{ target_label: 'instance', replacement: NODE_NAME }],
          }],
        };
      });
      const active = await prom.targets();
      assert.deepEqual(active.map((x) => [x.scrapeUrl, x.health, x.lastError]), [[`https://${NODE_IP}:${AGENT_PORT}/metrics`, 'up', '']]);
      await eventually('up == 1', 30_000, async () => ((await prom.api('/api/v1/query', { query: 'up{job="networkobservability-retina-tls",instance="retina-node"} == 1' })).data as { result: unknown[] }).result.length === 1, 1000);
      const fwd = await eventually('agent series through Prometheus', 30_000, async () => {
        const r = (await prom.api('/api/v1/query', { query: 'networkobservability_forward_count' })).data as { result: unknown[] };
        return r.result.length > 0 && r.result.length;
      }, 1000);
      t.diagnostic(`Prometheus scraped the hardened agent over HTTPS with its ServiceAccount token: up == 1, ${fwd} forward_count series`);
    } finally {
      rmSync(pki, { recursive: true, force: true });
    }
  });
});

/** Prometheus's role: pod discovery of `pods` as file_sd target groups (one per container port; one per pod without ports). */
function podDiscovery(pods: readonly Pod[]): unknown[] {
  const clean = (k: string): string => k.replace(/[^a-zA-Z0-9_]/g, '_');
  const out: unknown[] = [];
  for (const p of pods) {
    const ip = p.status?.podIP;
    if (!ip) continue;
    const base: Record<string, string> = {
      __meta_kubernetes_namespace: p.metadata.namespace ?? '', __meta_kubernetes_pod_name: p.metadata.name, __meta_kubernetes_pod_ip: ip,
      __meta_kubernetes_pod_node_name: p.spec.nodeName ?? '',
    };
    for (const [k, v] of Object.entries(p.metadata.labels ?? {})) base[`__meta_kubernetes_pod_label_${clean(k)}`] = v;
    for (const [k, v] of Object.entries(p.metadata.annotations ?? {})) base[`__meta_kubernetes_pod_annotation_${clean(k)}`] = v;
    const ports = p.spec.containers.flatMap((c) => (c.ports ?? []).map((port) => ({ c, port })));
    if (ports.length === 0) out.push({ targets: [ip], labels: base });
    for (const { c, port } of ports) {
      out.push({ targets: [`${ip}:${port.containerPort}`], labels: { ...base, __meta_kubernetes_pod_container_name: c.name, __meta_kubernetes_pod_container_port_name: port.name ?? '', __meta_kubernetes_pod_container_port_number: String(port.containerPort), __meta_kubernetes_pod_container_port_protocol: port.protocol ?? 'TCP' } });
    }
  }
  return out;
}

/** What the pods of the release say when they are not Ready: status, events and last log lines. */
async function diagnosis(client: RestClient): Promise<string> {
  const pods = await listAll<Pod>(client, resources.pods, RELEASE_NS).catch(() => []);
  const out: string[] = [];
  for (const p of pods) {
    out.push(`pod ${p.metadata.name}: ${JSON.stringify(p.status?.containerStatuses ?? p.status)}`);
    out.push(...(await podLog(client, p).catch(() => [])).slice(-15).map((l) => `  ${JSON.stringify(l)}`));
  }
  const ev = await client.request<{ items: { reason?: string; message?: string; involvedObject?: { name?: string } }[] }>('GET', `/api/v1/namespaces/${RELEASE_NS}/events`).catch(() => ({ items: [] }));
  out.push(...ev.items.map((x) => `event ${x.involvedObject?.name}: ${x.reason}: ${x.message}`));
  return out.join('\n');
}

