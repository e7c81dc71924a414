/**
 * Real-node cases, the test pods' traffic counted exactly: a drop in the server pod (adv_drop_count
 * and the node's drop_count), pod to pod over the bridge veths (IPv4 and IPv6), and through ClusterIP
 * Services (kube-proxy's DNAT, IPv4 and SingleStack IPv6), against nftables counters in the pods (see
 * test/node/real-node.test.ts for why the areas share one node).
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { collectionPath, objectPath, resources } from '../../../src/k8s/index.js';
import { series } from '../../e2e/exposition.js';
import { withDrops } from '../../ebpf/drop-lock.js';
import { sh } from '../../ebpf/netns.js';
import { TCP_SEND, TCP_SINK, UDP_SEND } from '../../ebpf/traffic.js';
import { eventually, listAll, untilStable } from '../../integration/harness.js';
import type { PodNs } from '../../integration/pod-flows-net.js';
import { getText, type Pod } from '../workloads.js';
import { ADV, N, find, forwardExact, scrape, sideOf, total, type RealNodeSuite } from './suite.js';

/** Drops, pod to pod (IPv4, IPv6), through ClusterIP Services (IPv4, IPv6). */
export function podTrafficCases(s: RealNodeSuite): void {
  const side = sideOf(s);
  const { nsB } = s;
  // The cases that drop datagrams hold the machine's drop lock (test/ebpf/drop-lock.ts): the main lane's
  // files count the node's drops exactly, and this case counts them beside them.
  it('an nftables DROP in the server pod: adv_drop_count by pod and workload and the node\'s drop_count are exact', () => withDrops(async () => {
    const { pods } = s;
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
    // Every pod-level NETFILTER_DROP series now, so a failure can say which pods' drops moved the node's count.
    const adv0 = await find(`${ADV}drop_count`, { reason: 'NETFILTER_DROP' });
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
      // A full run once saw +1 216 to +1 977 for 40 in all three bursts (5 minutes of another lane's netfilter drops
      // that no lock covers): four bursts, and a failure names the machine's drop rules that counted packets.
      assert.ok(burst < 4, `node-level drop_count never moved by exactly ${N}: ${tries.join('; ')}; the host's nftables drop rules with packets:\n${dropRules()}\nthe pod-level NETFILTER_DROP series that moved meanwhile:\n${await movedSeries(adv0)}`);
    }
  }));

  /** The pod-level NETFILTER_DROP series that moved since `before` (the most first), for a failure's message. */
  const movedSeries = async (before: readonly { labels: Record<string, string>; value: number }[]): Promise<string> => {
    const key = (l: Record<string, string>): string => JSON.stringify(Object.entries(l).sort());
    const was = new Map(before.map((x) => [key(x.labels), x.value]));
    const moved = (await find(`${ADV}drop_count`, { reason: 'NETFILTER_DROP' }))
      .map((x) => ({ d: x.value - (was.get(key(x.labels)) ?? 0), labels: x.labels }))
      .filter((x) => x.d > 0)
      .sort((a, b) => b.d - a.d);
    return moved.slice(0, 8).map((x) => `+${x.d} ${JSON.stringify(x.labels)}`).join('\n') || '(none: the drops were of no pod the agent knows)';
  };

  /** The host's nftables rules that drop and have counted packets (kube-proxy's and the suites'), for a failure's message. */
  const dropRules = (): string => {
    try {
      return sh('nft', ['-a', 'list', 'ruleset']).split('\n').filter((l) => /\bdrop\b/.test(l) && /packets [1-9]/.test(l)).map((l) => l.trim()).join('\n') || '(none with a counter above 0)';
    } catch (e) {
      return `(nft list ruleset failed: ${(e as Error).message})`;
    }
  };

  it('pod to pod over the bridge veths: adv_forward_count equals the nftables counts of what each pod sent, both directions', async (t) => {
    const { pods } = s;
    const got = await forwardExact(s, 'ip', 'pfcount', () => pods.cli.ns.node(TCP_SEND, ['100000', pods.srv.ip, '8080']));
    t.diagnostic(`cli -> srv ${got[0]} packets, srv -> cli ${got[1]}`);
  });

  it('IPv6 (dual stack): pod to pod over the bridge veths: adv_forward_count by pod names equals the nftables counts of what each pod sent, both directions; a dropped IPv6 datagram counted in adv_drop_count', (t) => withDrops(async () => {
    const { pods } = s;
    const { cli, srv } = pods;
    // a TCP sink on the server pod's IPv6 address (the pod's containers listen on IPv4), run in its network namespace
    const sink = await srv.ns.serve(TCP_SINK, [srv.ip6, '8086']);
    t.after(() => sink.kill('SIGKILL'));
    const got = await forwardExact(s, 'ip6', 'pfcount6', () => cli.ns.node(TCP_SEND, ['100000', srv.ip6, '8086']));
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
  }));

  /**
   * Traffic from the client pod through a ClusterIP Service to the server pod, exact (docs/real-node.md):
   * adv_forward_count and adv_forward_bytes against nftables counters of what each pod sent (the
   * client's to the Service address, the server's to the s.client). Each packet once, under both pods'
   * names, except a connection's first packet (the SYN), which leaves the client before conntrack
   * knows the connection: it is counted once, to the Service's address. Bytes: the agent counts the
   * frame at the veth (skb->len with the 14-byte Ethernet header), nftables the IP packet.
   */
  const serviceExact = async (family: 'ip' | 'ip6', svc: string, table: string, send: () => Promise<string>): Promise<number[][]> => {
    const { cli, srv } = s.pods;
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
    const { client, pods, svcIp } = s;
    const { cli } = pods;
    const got = await serviceExact('ip', svcIp, 'svcount', () => cli.ns.node(TCP_SEND, ['50000', svcIp, '80']));
    const [srvPod] = await listAll<Pod>(client, resources.pods, nsB, { labelSelector: 'app=srv' });
    assert.ok(srvPod);
    const log = await getText(client, `/api/v1/namespaces/${nsB}/pods/${srvPod.metadata.name}/log?container=sink`);
    assert.match(log, /got 50000/, 'the sink in the server pod read the 50 000 bytes sent to the Service');
    t.diagnostic(`Service ${svcIp}: cli -> srv ${JSON.stringify(got[0])} (packets, bytes), cli -> Service ${JSON.stringify(got[1])} (the SYN), srv -> cli ${JSON.stringify(got[2])}, Service -> cli ${JSON.stringify(got[3])}`);
  });

  it('IPv6 through a SingleStack IPv6 ClusterIP Service (kube-proxy\'s ip6 DNAT): each packet counted once under both pods\' names (the SYN once, to the Service), exact against the pods\' nftables counters', async (t) => {
    const { client, pods } = s;
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
}
