/**
 * Cilium's Hubble dashboards (test/fixtures/cilium/dashboards, SOURCES.md) against the agent's
 * hubble_* metrics, as compat does for Retina's: a real Prometheus (Debian's) scrapes
 * hubble.metrics.listenAddress of a real agent, configured in Cilium's syntax (Cilium's own entries
 * for these dashboards, and two it cannot serve), with real traffic between two network namespaces
 * of the test's own: TCP connections answered and dropped (IPv4 and IPv6), DNS queries answered,
 * refused as non-existent and unanswered, and UDP that an nftables rule drops. Every panel of every
 * dashboard is asked through Prometheus's HTTP API; the panels that cannot answer are named below
 * with the reason, and the count of those that do is printed (`figure: cilium-hubble-dashboards`).
 * Needs root, kernel BTF and `prometheus` (the Makefile installs it).
 */
import assert from 'node:assert/strict';
import { execFileSync, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { ROOT } from '../e2e/agent-process.js';
import { startPrometheus, type Prometheus } from '../node/prometheus.js';
import { Netns, NsAgent, requireKernel, sleep, stopAll, vethPair } from '../ebpf/netns.js';
import { holdDropsForThisFile } from '../ebpf/drop-lock.js';
import type { Dashboard } from './dashboards.js';

// Its drops, apart from every other lane's (drop-lock.ts).
holdDropsForThisFile();

const DIR = `${ROOT}test/fixtures/cilium/dashboards/`;
const PROM = '127.0.0.1:19091';
const HUBBLE = '127.0.0.1:9965';

/** Cilium's context for its namespace dashboards (workload, else the address), the same for every entry. */
const CTX = 'sourceContext=workload-name|ip;destinationContext=workload-name|ip;labelsContext=source_namespace,destination_namespace';
const ENTRIES = [
  `dns:query;${CTX}`, `drop:${CTX}`, `tcp:${CTX}`, `flow:${CTX}`, 'port-distribution', `flows-to-world:any-drop;port`,
  // Cilium's own entries that this agent refuses (logged; the others run).
  `icmp:${CTX}`, 'httpV2:exemplars=true;labelsContext=source_ip,source_namespace,source_workload,destination_ip,destination_namespace,destination_workload,traffic_direction',
];

const NO_ICMP = 'hubble_icmp_total: our flows carry no ICMP type and code (icmp is refused)';
const NO_HTTP = 'hubble_http_*: our flows carry no HTTP records (httpV2 is refused)';
/** Panels that cannot answer here, by `uid/title`, with the reason. */
const CANNOT: Readonly<Record<string, string>> = {
  '5HftnJAWz/ICMPv4': NO_ICMP, '5HftnJAWz/Missing ICMPv4 Echo-Reply': NO_ICMP, '5HftnJAWz/ICMPv6': NO_ICMP, '5HftnJAWz/Missing ICMPv6 Echo-Reply': NO_ICMP,
  'nlsO8tYVz/Missing ICMP Echo Replies': NO_ICMP,
  '5HftnJAWz/HTTP Requests': NO_HTTP, '5HftnJAWz/HTTP responses': NO_HTTP, '5HftnJAWz/HTTP Request/Response Latency (p50)': NO_HTTP,
  '5HftnJAWz/HTTP Request/Response Latency (p99)': NO_HTTP, '5HftnJAWz/HTTP Protocol Usage': NO_HTTP,
};

/**
 * The peer's servers: TCP on 8080 (IPv4 and IPv6) and DNS on 53 (argv[2]): `nx.*` names are
 * NXDOMAIN, every other A query gets two addresses.
 */
const PEER_SERVERS = `
import dgram from 'node:dgram';
import net from 'node:net';
const [v4, v6] = process.argv.slice(1);
function answer(q) {
  let p = 12; const labels = [];
  while (q[p] !== 0) { labels.push(q.subarray(p + 1, p + 1 + q[p]).toString()); p += q[p] + 1; }
  const question = q.subarray(12, p + 5);
  const nx = labels[0] === 'nx';
  const h = Buffer.alloc(12); q.copy(h, 0, 0, 2);
  h.writeUInt16BE(nx ? 0x8183 : 0x8180, 2); h.writeUInt16BE(1, 4); h.writeUInt16BE(nx ? 0 : 2, 6);
  const rr = (last) => Buffer.from([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, last]);
  return Buffer.concat(nx ? [h, question] : [h, question, rr(1), rr(2)]);
}
const s = dgram.createSocket('udp4');
s.on('message', (m, r) => s.send(answer(m), r.port, r.address));
s.bind(53, v4);
for (const host of [v4, v6]) net.createServer((c) => { c.on('error', () => {}); c.end('ok'); }).listen(8080, host);
setTimeout(() => console.log('ready'), 300);
process.on('SIGTERM', () => process.exit(0));
`;

/** The node's traffic, every 100 ms until killed. */
const NODE_TRAFFIC = `
import dgram from 'node:dgram';
import net from 'node:net';
const [peer4, peer6, silent4] = process.argv.slice(1);
const u = dgram.createSocket('udp4'); u.on('error', () => {});
const dns = dgram.createSocket('udp4'); dns.on('error', () => {}); dns.on('message', () => {});
function query(id, name) {
  const h = Buffer.alloc(12); h.writeUInt16BE(id, 0); h.writeUInt16BE(0x0100, 2); h.writeUInt16BE(1, 4);
  const parts = name.split('.').flatMap((l) => [Buffer.from([l.length]), Buffer.from(l)]);
  return Buffer.concat([h, ...parts, Buffer.from([0, 0, 1, 0, 1])]);
}
let id = 0;
const open = new Set();
function tcp(host, port) {
  if (open.size > 30) return;
  const c = net.connect({ host, port, timeout: 2000 }); open.add(c);
  const done = () => { open.delete(c); c.destroy(); };
  c.on('error', done); c.on('timeout', done); c.on('close', done); c.on('data', () => c.end());
}
setInterval(() => {
  u.send(Buffer.alloc(64), 9999, peer4);          // the peer's nftables input rule drops it: NETFILTER_DROP
  dns.send(query(id++ & 0xffff, 'svc.test'), 53, peer4);  // answered with two addresses
  dns.send(query(id++ & 0xffff, 'nx.test'), 53, peer4);   // Non-Existent Domain
  dns.send(query(id++ & 0xffff, 'lost.test'), 53, silent4);  // nobody answers
  tcp(peer4, 8080); tcp(peer6, 8080);              // SYN, SYN-ACK, FIN: IPv4 and IPv6
  tcp(peer4, 7); tcp(peer6, 7);                    // the peer drops these SYNs: missing SYN-ACKs
}, 100);
process.on('SIGTERM', () => process.exit(0));
console.log('ready');
`;

let node: Netns | undefined;
let peer: Netns | undefined;
let agent: NsAgent | undefined;
let prom: Prometheus | undefined;
const children: ChildProcess[] = [];

const api = (path: string, params: Record<string, string> = {}): Promise<{ status: string; data: unknown }> => (prom as Prometheus).api(path, params);

function loadCilium(): (Dashboard & { __source: { path: string; commit: string } })[] {
  return readdirSync(DIR).filter((f) => f.endsWith('.json')).sort().map((file) => ({ ...JSON.parse(readFileSync(DIR + file, 'utf8')), file }));
}

/** Grafana's variables with "All" picked (`.*`), its $__rate_interval as 20 s (Prometheus scrapes every 2 s); the rest verbatim. */
const fill = (expr: string): string => expr.replaceAll('$__rate_interval', '20s').replace(/\$\{?(cluster|source_namespace|destination_namespace)\}?/g, '.*');

before(async () => {
  requireKernel();
  execFileSync('prometheus', ['--version'], { stdio: 'ignore' });
  node = new Netns('hubdash-node');
  peer = new Netns('hubdash-peer');
  vethPair(node, 'rthub0', '10.233.1.1', peer, 'rthub1', '10.233.1.2', ['fd00:233::1', 'fd00:233::2']);
  peer.run('ip', ['addr', 'add', '10.233.1.3/24', 'dev', 'rthub1']);
  peer.run('nft', ['-f', '-'], 'table inet rthub {\n chain input {\n  type filter hook input priority 0;\n  udp dport 9999 drop\n  tcp dport 7 drop\n }\n}\n');
  agent = new NsAgent(node, [
    'enabledPlugin: [packetparser, dropreason, dns]', 'metricsIntervalDuration: 1s', 'packetParserHostInterfaces: []',
    'hubble:', '  metrics:', `    listenAddress: ${HUBBLE}`, '    enabled:', ...ENTRIES.map((e) => `      - ${JSON.stringify(e)}`), '',
  ].join('\n'));
  await agent.started(['packetparser', 'dropreason', 'dns']);
  prom = await startPrometheus(PROM, () => ({
    global: { evaluation_interval: '2s' },
    scrape_configs: [{ job_name: 'hubble-metrics', scrape_interval: '2s', scrape_timeout: '2s', static_configs: [{ targets: [HUBBLE], labels: { pod: 'retina-agent-hubdash' } }] }],
  }), { netns: node.name });
  children.push(await peer.spawnReady(PEER_SERVERS, ['10.233.1.2', 'fd00:233::2']));
  children.push(await node.spawnReady(NODE_TRAFFIC, ['10.233.1.2', 'fd00:233::2', '10.233.1.3']));
});

after(async () => {
  try {
    await stopAll(children);
    await prom?.[Symbol.asyncDispose]();
    await agent?.[Symbol.asyncDispose]();
  } finally {
    node?.destroy();
    peer?.destroy();
  }
});

test('the entries it cannot serve are refused by name with the reason; the others run', () => {
  const lines = (agent as NsAgent).proc.logLines();
  const refused = lines.filter((l) => l.msg === 'hubble.metrics.enabled entry refused; the other entries run').map((l) => [String(l['entry']).split(':')[0], String(l['reason'])]);
  assert.deepEqual(refused.map((r) => r[0]), ['icmp', 'httpV2']);
  assert.match(refused[0]?.[1] ?? '', /ICMP type and code/);
  const serving = lines.find((l) => l.msg === 'serving hubble metrics');
  assert.deepEqual(serving?.['families'], [
    'hubble_dns_queries_total', 'hubble_dns_responses_total', 'hubble_dns_response_types_total', 'hubble_drop_total', 'hubble_tcp_flags_total',
    'hubble_flows_processed_total', 'hubble_port_distribution_total', 'hubble_flows_to_world_total',
  ]);
});

test("Cilium's Hubble dashboards answer through a real Prometheus, but for the panels named with their reason", async (t) => {
  const dashboards = loadCilium();
  const panels = dashboards.flatMap((d) => d.panels.filter((p) => p.type !== 'row').map((p) => ({ key: `${d.uid}/${p.title}`, exprs: (p.targets ?? []).map((x) => fill(x.expr)) })));
  for (const k of Object.keys(CANNOT)) assert.ok(panels.some((p) => p.key === k), `CANNOT names "${k}", which no dashboard has`);
  let silent: string[] = [];
  for (let round = 0; round < 40; round++) {
    silent = [];
    for (const p of panels) {
      if (p.key in CANNOT) continue;
      for (const expr of p.exprs) {
        let r: { status: string; data: unknown };
        try {
          r = await api('/api/v1/query', { query: expr });
        } catch {
          silent.push(`${p.key}: Prometheus not answering yet`);
          continue;
        }
        assert.equal(r.status, 'success', `${p.key}: ${expr}`);
        if ((r.data as { result: unknown[] }).result.length === 0) silent.push(`${p.key}: ${expr}`);
      }
    }
    if (silent.length === 0) break;
    await sleep(2000);
  }
  assert.deepEqual(silent, [], 'panels without data');
  // The panels named as unable to answer do not answer (so the list is not an excuse for a panel that works).
  for (const p of panels.filter((x) => x.key in CANNOT)) {
    for (const expr of p.exprs) assert.equal(((await api('/api/v1/query', { query: expr })).data as { result: unknown[] }).result.length, 0, `${p.key} answers: take it off CANNOT`);
  }
  const answering = panels.length - Object.keys(CANNOT).length;
  const figure = { figure: 'cilium-hubble-dashboards', answering, panels: panels.length, dashboards: dashboards.map((d) => d.title), cannot: CANNOT };
  console.log(JSON.stringify(figure));
  t.diagnostic(`${answering} of ${panels.length} panels of Cilium's ${dashboards.length} Hubble dashboards answer`);
  assert.equal(panels.length, 45);
  assert.equal(answering, 35);
});

test('the series carry Cilium\'s labels and values for the traffic sent', async () => {
  type Series = { metric: Record<string, string>; value: [number, string] };
  const q = async (expr: string): Promise<Series[]> => ((await api('/api/v1/query', { query: expr })).data as { result: Series[] }).result;
  const drops = await q('hubble_drop_total');
  assert.ok(drops.some((s) => s.metric['reason'] === 'POLICY_DENIED' && s.metric['protocol'] === 'UDP' && s.metric['source'] === '10.233.1.1' && s.metric['destination'] === '10.233.1.2'), JSON.stringify(drops));
  const nx = await q('hubble_dns_responses_total{rcode="Non-Existent Domain"}');
  assert.ok(nx.some((s) => s.metric['query'] === 'nx.test.' && s.metric['ips_returned'] === '0' && s.metric['qtypes'] === 'A'), JSON.stringify(nx));
  const ok = await q('hubble_dns_responses_total{rcode="No Error"}');
  assert.ok(ok.some((s) => s.metric['query'] === 'svc.test.' && s.metric['ips_returned'] === '2'), JSON.stringify(ok));
  const flags = (await q('sum by (flag, family) (hubble_tcp_flags_total)')).map((s) => `${s.metric['flag']}/${s.metric['family']}`);
  for (const f of ['SYN/IPv4', 'SYN-ACK/IPv4', 'FIN/IPv4', 'SYN/IPv6', 'SYN-ACK/IPv6']) assert.ok(flags.includes(f), `${f} in ${flags.join(' ')}`);
  assert.ok((await q('hubble_port_distribution_total{protocol="TCP",port="8080"}')).length > 0);
  // Standalone, the enricher knows no endpoint: every peer is outside the cluster (reserved:world).
  assert.ok((await q('hubble_flows_to_world_total{protocol="TCP",verdict="FORWARDED",port="8080"}')).length > 0);
});
