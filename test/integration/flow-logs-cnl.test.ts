/**
 * Stored flow logs end to end (issue 28's "done when", Linux): a real API server (the harness), the
 * operator in process, the built `bin/retina-agent` with flowLogs.enabled, and real kernel traffic
 * between "pods" — network namespaces on a bridge (pod-flows-net.ts) registered as pods whose
 * RetinaEndpoints the operator makes (pod-flows-kube.ts). Every pod drops UDP to port 9999 with
 * nftables, so each datagram sent there is exactly one dropped flow (dropreason), the count the test
 * knows; packetparser adds forwarded flows of the same packets, which the filters must leave out.
 *
 *   before any ContainerNetworkLog      cli -> srv   nothing written
 *   CNL a: from nsA/cli- to namespace   cli -> srv   N written         (selected)
 *          nsB, udp, dropped            cli -> peer  none              (destination not in nsB)
 *                                       peer -> srv  none              (source not cli-*)
 *   + CNL b: from nsA/peer-, dropped    peer -> srv  M written         (the union)
 *   both deleted                        cli -> srv   nothing written
 *
 *   CNL c: cli -> srv, dropped          cli -> srv   enough to rotate the 1 MB file twice: every line
 *                                                    still there, across events.log and its .gz backups
 *
 * The file is read back whole (every rotated backup too) and each line checked: exactly the
 * selected flows, with the pods' names. The same records go to a real OpenTelemetry Collector
 * (hack/otelcol, test/export/otelcol.ts) over OTLP/gRPC (flowLogs.otlp.endpoint): its file
 * exporter must hold exactly the file's lines, as log record bodies; the last test restarts the
 * agent with OTLP over HTTP/protobuf and checks the same. Needs root, BTF and the built native
 * objects; never skips.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import { collectionPath, objectPath, resources, type ContainerNetworkLog, type RestClient } from '../../src/k8s/index.js';
import { AgentProcess, agentEnv, get } from '../e2e/agent-process.js';
import { dropUdp9999, requireKernel } from '../ebpf/netns.js';
import { UDP_SEND } from '../ebpf/traffic.js';
import { arrived, freePort, startCollector, waitArrived, type Collector } from '../export/otelcol.js';
import { deleteNamespace, eventually, listAll, startCluster, type Cluster } from './harness.js';
import { startOperator, uniqueId } from './operator-helpers.js';
import { addPods, createNode, deleteNode, waitForEndpoints, type TestPod } from './pod-flows-kube.js';
import { PodNet } from './pod-flows-net.js';
import { holdDropsForThisFile } from '../ebpf/drop-lock.js';

// Its drops (or losses) and the node-level counts, apart from every other lane's (drop-lock.ts).
holdDropsForThisFile();

const CNL = resources.containerNetworkLogs;
const SELF = 'controlplane_networkobservability_';

interface Line {
  flow: {
    verdict?: string;
    source?: { namespace?: string; pod_name?: string };
    destination?: { namespace?: string; pod_name?: string };
    l4?: { UDP?: { destination_port?: number } };
    IP?: { source?: string; destination?: string };
  };
  node_name?: string;
  time?: string;
}

describe('flow logs: a ContainerNetworkLog makes the agent write exactly the matching flows', { timeout: 300_000 }, () => {
  let cluster: Cluster;
  let client: RestClient;
  let operator: Awaited<ReturnType<typeof startOperator>> | undefined;
  let agent: AgentProcess | undefined;
  let net: PodNet | undefined;
  let port = 0;
  let collector: Collector | undefined;
  let otlpPorts = { grpc: 0, http: 0 };
  const dir = mkdtempSync(join(tmpdir(), 'flow-logs-cnl-'));
  const logDir = join(dir, 'log');
  const filePath = join(logDir, 'events.log');
  const id = uniqueId('fl');
  const node = `${id}-node`;
  const nsA = `${id}-a`;
  const nsB = `${id}-b`;
  const cnlA = `${id}-cli-to-b`;
  const cnlB = `${id}-peer-drops`;
  const cnlC = `${id}-rotate`;
  const cnlD = `${id}-http`;
  const pods: Record<'cli' | 'peer' | 'srv', TestPod> = {} as never;

  /** Every line of the flow-log file and its rotated backups (gzip or not), as written. */
  const rawLines = (): string[] => {
    let names: string[];
    try {
      names = readdirSync(logDir);
    } catch {
      return [];
    }
    const out: string[] = [];
    // A backup being gzipped exists twice for a moment (the plain file is removed once the .gz is whole).
    for (const n of names.filter((x) => x.startsWith('events') && !(x.endsWith('.gz') && names.includes(x.slice(0, -3))))) {
      const raw = readFileSync(join(logDir, n));
      const text = (n.endsWith('.gz') ? gunzipSync(raw) : raw).toString('utf8');
      for (const l of text.split('\n')) if (l.trim() !== '') out.push(l);
    }
    return out;
  };
  const lines = (): Line[] => rawLines().map((l) => JSON.parse(l) as Line);
  /** The bodies of the log records the collector's file exporter wrote: one flow-log line each. */
  const otlpBodies = (): string[] => arrived((collector as Collector).out).map((r) => r.body as string);
  /**
   * The collector holds exactly the file's lines (same count, same records; order aside, since
   * rotated backups are read by name) and the OTLP sink counted each written, none dropped.
   */
  const assertCollectorHasFile = async (): Promise<number> => {
    const file = rawLines();
    await waitArrived((collector as Collector).out, file.length);
    const got = otlpBodies();
    assert.equal(got.length, file.length, `the collector received ${got.length} records, the file has ${file.length} lines`);
    assert.deepEqual([...got].sort(), [...file].sort(), 'the collector received exactly the file\'s lines');
    assert.equal(await metric('flow_log_records_total', { sink: 'otlp', result: 'written' }), got.length);
    assert.equal(await metric('flow_log_records_total', { sink: 'otlp', result: 'dropped' }), 0);
    return got.length;
  };
  const metric = async (name: string, labels: Record<string, string> = {}): Promise<number> => {
    const r = await get(port, '/metrics');
    let sum = 0;
    for (const l of r.body.split('\n')) {
      if (!l.startsWith(`${SELF}${name}{`) && !l.startsWith(`${SELF}${name} `)) continue;
      if (Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`))) sum += Number(l.split(' ').pop());
    }
    return sum;
  };
  /**
   * Sends n datagrams from `from` to `to`'s port 9999 (each one dropped there) and waits until the
   * export looked at as many flows, then `settleMs` more: packetparser's flows of the same packets
   * (and other suites' drops on this host) count too and may arrive first, and a drop flow judged
   * after the next selection change would be judged by the wrong filters (the drop path took
   * ~150 ms here; 1.5 s is ten times that).
   */
  const drops = async (from: keyof typeof pods, to: keyof typeof pods, n: number, settleMs = 1500): Promise<void> => {
    const seen = await metric('flow_log_flows_total');
    await pods[from].ns.node(UDP_SEND, [String(n), pods[to].ns.ip4, '9999', '64']);
    await eventually(`the export saw ${from} -> ${to}`, 20_000, async () => (await metric('flow_log_flows_total')) >= seen + n, 200);
    if (settleMs) await new Promise((r) => setTimeout(r, settleMs));
  };
  const isFrom = (l: Line, from: keyof typeof pods, to: keyof typeof pods): boolean =>
    l.flow.source?.pod_name === pods[from].name && l.flow.destination?.pod_name === pods[to].name;
  const apply = async (name: string, spec: unknown): Promise<void> => {
    await client.request('POST', collectionPath(CNL), { body: { apiVersion: 'acn.azure.com/v1alpha1', kind: 'ContainerNetworkLog', metadata: { name }, spec } });
    await eventually(`${name} CONFIGURED`, 30_000, async () => (await client.request<ContainerNetworkLog>('GET', objectPath(CNL, undefined, name))).status?.state === 'CONFIGURED');
  };
  const selectionLines = (): number => (agent as AgentProcess).logLines().filter((l) => l.msg === 'flow-log selection changed').length;
  /** The built agent with flow logs to the file and over OTLP (`protocol`) to the collector. */
  const startAgent = async (protocol: 'grpc' | 'http/protobuf'): Promise<void> => {
    const config = join(dir, 'config.yaml');
    writeFileSync(config, [
      'apiServer:', '  host: 127.0.0.1', '  port: 0', 'logLevel: info',
      'remoteContext: true', 'enabledPlugin: [dropreason, packetparser]', 'metricsIntervalDuration: 1s', 'packetParserHostInterfaces: []',
      'flowLogs:', '  enabled: true', `  filePath: ${filePath}`, '  fileMaxSizeMb: 1', '  fileMaxBackups: 100', '  fileCompress: true',
      '  otlp:', `    endpoint: http://127.0.0.1:${protocol === 'grpc' ? otlpPorts.grpc : otlpPorts.http}`, `    protocol: ${protocol}`,
      '    flushInterval: 100ms', '    batchSize: 256', '',
    ].join('\n'));
    agent = new AgentProcess({ args: ['--config', config, '--kubeconfig', cluster.kubeconfig], env: agentEnv({ NODE_NAME: node }) });
    port = await agent.listening(30_000);
    await agent.waitForLog((l) => l.msg === 'flow logs go to an OTLP collector' && l['protocol'] === protocol, `the OTLP sink (${protocol})`, 30_000);
    await agent.waitForLog((l) => l.msg === 'plugin started' && l['plugin'] === 'dropreason', 'dropreason started', 30_000);
    await agent.waitForLog((l) => l.msg === 'ContainerNetworkLogs synced', 'ContainerNetworkLogs synced', 30_000);
  };
  const selectionChange = async (before: number, what: string): Promise<void> => {
    await eventually(what, 20_000, () => selectionLines() > before, 100);
  };

  before(async () => {
    requireKernel();
    cluster = await startCluster();
    client = cluster.client;
    // Leftover ContainerNetworkLogs of other runs would widen the union.
    for (const c of await listAll<ContainerNetworkLog>(client, CNL).catch(() => [])) {
      await client.request('DELETE', objectPath(CNL, undefined, c.metadata.name)).catch(() => undefined);
    }
    await createNode(client, node);
    net = new PodNet('fl');
    Object.assign(pods, await addPods(client, net, node, [['cli', nsA, 21], ['peer', nsA, 22], ['srv', nsB, 23]], '10.249.7', 'fd00:249:7::'));
    for (const p of Object.values(pods)) p.ns.run('nft', ['-f', '-'], dropUdp9999('fl'));
    operator = await startOperator(cluster.kubeconfig, { RETINA_LEADERELECTIONID: uniqueId('retina-op') });
    await waitForEndpoints(client, pods, (p) => p.ns.ip4);

    otlpPorts = { grpc: await freePort(), http: await freePort() };
    collector = await startCollector({ dir, grpcPort: otlpPorts.grpc, httpPort: otlpPorts.http }, 'flow-logs-cnl');
    await startAgent('grpc');
    // The cache knows the pods before traffic is judged by pod names.
    await drops('cli', 'srv', 1);
  });

  after(async () => {
    await agent?.[Symbol.asyncDispose]();
    await operator?.[Symbol.asyncDispose]();
    if (client) {
      for (const n of [cnlA, cnlB, cnlC, cnlD]) await client.request('DELETE', objectPath(CNL, undefined, n)).catch(() => undefined);
      await deleteNamespace(client, nsA);
      await deleteNamespace(client, nsB);
      await deleteNode(client, node);
    }
    net?.destroy();
    await collector?.stop();
    rmSync(dir, { recursive: true, force: true });
    await cluster?.[Symbol.asyncDispose]();
  });

  it('without a ContainerNetworkLog nothing is written', async () => {
    await drops('cli', 'srv', 10);
    assert.deepEqual(lines(), []);
    assert.equal(await metric('flow_log_flows_total', { selected: 'true' }), 0);
    await new Promise((r) => setTimeout(r, 300)); // past the OTLP flush interval
    assert.deepEqual(otlpBodies(), [], 'nothing sent to the collector either');
  });

  it('a ContainerNetworkLog selects exactly its flows: N drops from cli to namespace B, none of the rest', async () => {
    const N = 30;
    const before = selectionLines();
    await apply(cnlA, {
      includefilters: [{
        name: 'cli-drops-to-b',
        from: { namespacedPod: [`${nsA}/cli-`] },
        to: { labelSelector: { matchLabels: { 'k8s.io/namespace': nsB } } },
        protocol: ['udp'],
        verdict: ['dropped'],
      }],
    });
    await selectionChange(before, 'the agent applied the ContainerNetworkLog');
    const t0 = new Date().toISOString();
    await drops('cli', 'srv', N, 0);
    await drops('cli', 'peer', 20, 0);
    await drops('peer', 'srv', 25);
    await eventually(`${N} records written`, 20_000, async () => (await metric('flow_log_records_total', { sink: 'file', result: 'written' })) >= N, 200);
    const got = lines();
    assert.equal(got.length, N, `exactly the ${N} selected flows: ${JSON.stringify(got.map((l) => [l.time, l.flow.source?.pod_name, l.flow.destination?.pod_name]))}, sent from ${t0}`);
    for (const l of got) {
      assert.ok(isFrom(l, 'cli', 'srv'), JSON.stringify(l));
      assert.equal(l.flow.verdict, 'DROPPED');
      assert.equal(l.flow.destination?.namespace, nsB);
      assert.equal(l.flow.l4?.UDP?.destination_port, 9999);
      assert.equal(l.node_name, node);
      assert.match(l.time ?? '', /^\d{4}-\d\d-\d\dT/);
    }
    assert.equal(await metric('flow_log_records_total', { sink: 'file', result: 'written' }), N);
    assert.equal(await metric('flow_log_records_total', { sink: 'file', result: 'dropped' }), 0);
    assert.equal(await metric('flow_log_flows_total', { selected: 'true' }), N);
    assert.equal(await assertCollectorHasFile(), N, 'gRPC: the collector holds the same N flows');
  });

  it('a second ContainerNetworkLog adds its flows (a union); deleting both writes nothing more', async () => {
    const M = 25;
    const start = lines().length;
    const before = selectionLines();
    await apply(cnlB, { includefilters: [{ from: { namespacedPod: [`${nsA}/peer-`] }, verdict: ['dropped'] }] });
    await selectionChange(before, 'the agent applied the second ContainerNetworkLog');
    await drops('peer', 'srv', M, 0);
    await drops('cli', 'srv', 5);
    await eventually(`${start + M + 5} records written`, 20_000, async () => (await metric('flow_log_records_total', { sink: 'file', result: 'written' })) >= start + M + 5, 200);
    const got = lines().slice(start);
    assert.equal(got.filter((l) => isFrom(l, 'peer', 'srv') && l.flow.verdict === 'DROPPED').length, M);
    assert.equal(got.filter((l) => isFrom(l, 'cli', 'srv') && l.flow.verdict === 'DROPPED').length, 5);
    assert.equal(got.length, M + 5, 'nothing else');

    const beforeDelete = selectionLines();
    for (const n of [cnlA, cnlB]) await client.request('DELETE', objectPath(CNL, undefined, n));
    await eventually('the agent dropped both', 20_000, () => (agent as AgentProcess).logLines().slice(0).some((l) => l.msg === 'flow-log selection changed' && l['active'] === false) && selectionLines() >= beforeDelete + 1, 100);
    const total = lines().length;
    await drops('cli', 'srv', 10, 0);
    await drops('peer', 'srv', 10);
    assert.equal(lines().length, total, 'no ContainerNetworkLog: nothing written');
    assert.equal(await assertCollectorHasFile(), total, 'gRPC: the collector holds the union and nothing after the delete');
  });

  it('rotation: past fileMaxSizeMb the file rotates into gzipped backups and no line is lost or doubled', async (t) => {
    const start = lines();
    assert.ok(start.length > 0);
    const size = readdirSync(logDir).filter((n) => !n.endsWith('.gz')).reduce((sum, n) => sum + readFileSync(join(logDir, n)).length, 0);
    const perLine = size / start.length;
    // Enough for two rotations at 1 MB, sent in paced rounds so the kernel's ring buffer never fills.
    const rounds = Math.ceil((2.3 * (1 << 20)) / perLine / 400);
    const n = rounds * 400;
    const before = selectionLines();
    await apply(cnlC, { includefilters: [{ from: { namespacedPod: [`${nsA}/cli-`] }, to: { namespacedPod: [`${nsB}/srv-`] }, verdict: ['dropped'] }] });
    await selectionChange(before, 'the agent applied the rotation ContainerNetworkLog');
    const written0 = await metric('flow_log_records_total', { sink: 'file', result: 'written' });
    for (let r = 0; r < rounds; r++) await drops('cli', 'srv', 400, r === rounds - 1 ? 1500 : 0);
    await eventually(`${n} more records written`, 30_000, async () => (await metric('flow_log_records_total', { sink: 'file', result: 'written' })) >= written0 + n, 200);
    const backups = await eventually('two gzipped backups, none being compressed', 30_000, () => {
      const names = readdirSync(logDir);
      const gz = names.filter((x) => x.endsWith('.log.gz'));
      return gz.length >= 2 && names.filter((x) => x !== 'events.log' && x.endsWith('.log')).length === 0 && gz;
    }, 200);
    const got = lines();
    assert.equal(got.length, start.length + n, `${n} lines after ${start.length}, across events.log and ${backups.length} backups`);
    assert.equal(got.filter((l) => isFrom(l, 'cli', 'srv') && l.flow.verdict === 'DROPPED').length - start.filter((l) => isFrom(l, 'cli', 'srv')).length, n);
    assert.equal(await metric('flow_log_records_total', { sink: 'file', result: 'dropped' }), 0);
    const sent = await assertCollectorHasFile();
    t.diagnostic(`rotation: ${n} drops selected and written (${Math.round(perLine)} bytes a line) into events.log and ${backups.length} gzipped backups; ${got.length} lines in all, the same ${sent} records at the collector over gRPC`);
  });

  it('OTLP over HTTP/protobuf: the agent restarted with protocol http/protobuf sends the collector exactly the new lines', async () => {
    const N = 200;
    const file0 = rawLines().length;
    const otlp0 = otlpBodies().length;
    assert.equal(file0, otlp0);
    await client.request('DELETE', objectPath(CNL, undefined, cnlC));
    await (agent as AgentProcess)[Symbol.asyncDispose]();
    await startAgent('http/protobuf');
    await drops('cli', 'srv', 1); // the cache knows the pods before traffic is judged by pod names
    const before = selectionLines();
    await apply(cnlD, { includefilters: [{ from: { namespacedPod: [`${nsA}/cli-`] }, to: { namespacedPod: [`${nsB}/srv-`] }, verdict: ['dropped'] }] });
    await selectionChange(before, 'the restarted agent applied the ContainerNetworkLog');
    await drops('cli', 'srv', N, 0);
    await drops('peer', 'srv', 20);
    await eventually(`${N} records written`, 20_000, async () => (await metric('flow_log_records_total', { sink: 'file', result: 'written' })) >= N, 200);
    const fresh = rawLines().length - file0;
    assert.equal(fresh, N, 'exactly the N selected flows in the file');
    await waitArrived((collector as Collector).out, otlp0 + N);
    const got = otlpBodies().slice(otlp0);
    assert.equal(got.length, N, 'exactly the N selected flows at the collector over HTTP/protobuf');
    const fileNew = new Set(rawLines());
    for (const b of got) assert.ok(fileNew.has(b), `a record the file does not have: ${b}`);
    assert.deepEqual([...otlpBodies()].sort(), [...rawLines()].sort(), 'the collector holds exactly the file\'s lines');
    for (const b of got) assert.ok(isFrom(JSON.parse(b) as Line, 'cli', 'srv'), b);
    assert.equal(await metric('flow_log_records_total', { sink: 'otlp', result: 'written' }), N);
    assert.equal(await metric('flow_log_records_total', { sink: 'otlp', result: 'dropped' }), 0);
  });
});
