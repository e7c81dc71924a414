/**
 * The real hubble CLI v1.19.7 (hack/hubble/build.sh v1.19) against our Hubble server holding flows of
 * known content (two pods of one namespace, a kernel drop, a reply, a DNS answer), in this process over
 * loopback, no cluster:
 * - field masks: the CLI's text outputs send its default mask (only the fields it prints) and print
 *   exactly what they print without it (`--use-default-field-masks=false`); `-o json --field-mask`
 *   gets only the named fields;
 * - `--cel-expression`: exactly the flows each expression names (OR between expressions, `--not`),
 *   refused with InvalidArgument when invalid or too costly;
 * - `--node-label`, `--interface`, `--snat-ip`: refused with InvalidArgument saying why (our flows do
 *   not carry node labels, interfaces or SNAT addresses), never answered as if the filter were not there.
 * Never skips: it fails when the hubble tools are not built.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createFlow, type Endpoint, type Flow } from '../../src/flow/index.js';
import { createLogger } from '../../src/log/index.js';
import { createFlowRing, loadHubbleProtos, startHubbleServer, type HubbleServer } from '../../src/server/hubble/index.js';
import { hubble, hubbleTools } from './hubble-tools.js';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const ep = (pod: string, app: string): Endpoint => Object.freeze({
  namespace: 'shop', podName: pod, workloadKind: 'Deployment', workloadName: app, service: '', nodeName: 'node-x', zone: '', labels: Object.freeze({ app }),
});
const web = ep('web-0', 'web');
const db = ep('db-0', 'db');
const T0 = 1_700_000_000_000;

/** The flows, by their source port: 40000 web→db SYN, 40001 web→9999 dropped, 5432 db→web SYN-ACK reply, 53 a DNS answer to web. */
const FLOWS: Flow[] = [
  createFlow({ srcIp: '10.0.0.1', dstIp: '10.0.0.2', verdict: 'FORWARDED', proto: 6, srcPort: 40000, dstPort: 5432, tcpFlags: 2, direction: 'EGRESS', observationPoint: 'FROM_ENDPOINT', isReply: false, source: web, destination: db, timeMs: T0 }),
  createFlow({ srcIp: '10.0.0.1', dstIp: '10.0.0.9', verdict: 'DROPPED', dropReason: 'NETFILTER_DROP', proto: 17, srcPort: 40001, dstPort: 9999, direction: 'EGRESS', source: web, timeMs: T0 + 1000 }),
  createFlow({ srcIp: '10.0.0.2', dstIp: '10.0.0.1', verdict: 'FORWARDED', proto: 6, srcPort: 5432, dstPort: 40000, tcpFlags: 18, direction: 'INGRESS', observationPoint: 'TO_ENDPOINT', isReply: true, source: db, destination: web, timeMs: T0 + 2000 }),
  createFlow({ srcIp: '10.0.0.53', dstIp: '10.0.0.1', verdict: 'DNS', proto: 17, srcPort: 53, dstPort: 40002, direction: 'INGRESS', isReply: true, destination: web, timeMs: T0 + 3000,
    dns: { query: 'example.com', qtype: 'A', rcode: 'NOERROR', answers: ['93.184.216.34'], isResponse: true, numAnswers: 1 } }),
];

const jsonFlows = (out: string): Obj[] => out.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as Obj).filter((m) => m['flow']).map((m) => m['flow'] as Obj);
const srcPort = (f: Obj): number => Number((f['l4']['TCP'] ?? f['l4']['UDP'])['source_port']);

describe('the real hubble CLI 1.19: field masks and the 1.19 filters against flows of known content', { timeout: 120_000 }, () => {
  let tools = '';
  let server: HubbleServer;
  const ring = createFlowRing(64);
  const observe = (...args: string[]): Promise<string> => hubble(tools, ['observe', '--server', `127.0.45.4:${server.port}`, '--last', '100', ...args]);
  const ports = async (...args: string[]): Promise<number[]> => jsonFlows(await observe('-o', 'json', ...args)).map(srcPort);
  const refused = async (args: string[], why: RegExp): Promise<void> => {
    const err = await observe('-o', 'json', ...args).then((out) => new Error(`accepted: ${out}`), (e: Error) => e);
    assert.match(err.message, /InvalidArgument/, err.message);
    assert.match(err.message, why, err.message);
  };
  before(async () => {
    tools = hubbleTools('v1.19');
    server = await startHubbleServer({
      protos: loadHubbleProtos(fileURLToPath(new URL('../../../proto/hubble', import.meta.url))), ring, listen: { host: '127.0.45.4', port: 0 },
      nodeName: 'node-x', version: 'test', log: createLogger({ level: 'error', component: 'test' }),
      peers: { list: () => [], subscribe: () => ({ [Symbol.dispose]: () => undefined }) },
    });
    ring.consume({ source: 'test', flows: FLOWS });
  });
  after(async () => {
    await server?.[Symbol.asyncDispose]();
  });

  it('compact, dict and table outputs with the default field mask print exactly what they print from whole flows', async () => {
    for (const output of ['compact', 'dict', 'table']) {
      const masked = await observe('-o', output);
      const whole = await observe('-o', output, '--use-default-field-masks=false');
      assert.equal(masked, whole, output);
      for (const want of ['shop/web-0', 'shop/db-0', 'DROPPED', 'example.com']) assert.ok(masked.includes(want), `${output} prints ${want}:\n${masked}`);
    }
  });

  it('-o json --field-mask: only the named fields arrive', async () => {
    const fs = jsonFlows(await observe('-o', 'json', '--field-mask', 'verdict,source.pod_name,l4.UDP'));
    assert.equal(fs.length, 4);
    // A TCP flow's l4 arrives empty (as Hubble's mask copy leaves it: the message made, no field of it set).
    assert.deepEqual(fs.map((f) => Object.keys(f).sort()), [['l4', 'source', 'verdict'], ['l4', 'source', 'verdict'], ['l4', 'source', 'verdict'], ['l4', 'verdict']]);
    assert.deepEqual(fs[0]?.['l4'], {});
    assert.deepEqual(fs[1], { verdict: 'DROPPED', source: { pod_name: 'web-0' }, l4: { UDP: { source_port: 40001, destination_port: 9999 } } });
    // (The CLI checks its paths itself; the server's refusal of a bad path: src/server/hubble/mask-cel.test.ts.)
  });

  it('--cel-expression: exactly the flows it names; several are OR\'d; --not excludes', async () => {
    assert.deepEqual(await ports('--cel-expression', '_flow.verdict == Verdict.DROPPED'), [40001]);
    assert.deepEqual(await ports('--cel-expression', '_flow.source.pod_name == "db-0" && _flow.is_reply == true'), [5432]);
    assert.deepEqual(await ports('--cel-expression', '_flow.l4.TCP.destination_port == 5432u', '--cel-expression', 'has(_flow.l7.dns)'), [40000, 53]);
    assert.deepEqual(await ports('--cel-expression', '_flow.l7.dns.ips.exists(ip, ip.startsWith("93.184."))'), [53]);
    assert.deepEqual(await ports('--cel-expression', '_flow.destination.labels.exists(l, l == "k8s:app=web")', '--namespace', 'shop'), [5432, 53]);
    // (A DNS record is a FORWARDED flow.)
    assert.deepEqual(await ports('--not', '--cel-expression', '_flow.verdict == Verdict.FORWARDED'), [40001]);
    assert.deepEqual(await ports('--not', '--cel-expression', '_flow.verdict == Verdict.FORWARDED || has(_flow.l7.dns)'), [40001]);
    assert.deepEqual(await ports('--not', '--cel-expression', '_flow.verdict == Verdict.DROPPED || has(_flow.l7.dns)'), [40000, 5432]);
    assert.deepEqual(await ports('--cel-expression', `_flow.time >= timestamp("${new Date(T0 + 2000).toISOString()}")`), [5432, 53]);
  });

  it('--cel-expression refused with InvalidArgument: a syntax error, a field flow.Flow lacks, not a bool, too costly', async () => {
    await refused(['--cel-expression', '_flow.verdict =='], /invalid CEL expression/);
    await refused(['--cel-expression', '_flow.no_such == 1'], /flow\.Flow has no field no_such/);
    await refused(['--cel-expression', '_flow.node_name'], /must yield a bool/);
    await refused(['--cel-expression', '_flow.source.labels.exists(a, _flow.source.labels.exists(b, _flow.source.labels.exists(c, a == c)))'], /too costly/);
  });

  it('--node-label, --interface, --snat-ip: refused, saying our flows do not carry that field', async () => {
    await refused(['--node-label', 'kubernetes.io/hostname=node-x'], /node_labels: not supported: this agent does not attach node labels to flows/);
    await refused(['--interface', 'eth0'], /interface: not supported: this agent does not report network interfaces in flows/);
    await refused(['--snat-ip', '10.0.0.1'], /source_ip_xlated: not supported: this agent does not observe translated source addresses/);
  });
});
