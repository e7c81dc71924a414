/**
 * Real-node cases, DNS: queries from the client pod to the server pod's DNS container, and cluster DNS
 * (the kube-dns Service and the CoreDNS pod behind it), each query and answer counted once with both
 * pods' names (see test/node/real-node.test.ts for why the areas share one node).
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { resources } from '../../../src/k8s/index.js';
import type { Sample } from '../../e2e/exposition.js';
import { eventually, listAll, untilStable } from '../../integration/harness.js';
import { DNS_SERVICE_IP, POD_CIDR_PREFIX } from '../node.js';
import { podExec, type Pod } from '../workloads.js';
import { ADV, find, sideOf, total, type RealNodeSuite } from './suite.js';

/** argv[1] A queries rn<i>.real-node.test over UDP/IPv4 to argv[2]:53, one at a time; prints "answers N". */
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

/** DNS to a pod's server; cluster DNS through the kube-dns Service. */
export function dnsCases(s: RealNodeSuite): void {
  const side = sideOf(s);
  const { nsA, nsB } = s;
  it('DNS: queries from the client pod to the DNS container of the server pod give adv_dns_request_count and adv_dns_response_count', async () => {
    const { pods } = s;
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
    const { node, client, pods, svcIp } = s;
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
}
