/**
 * Hubble history beyond the ring (hubble.history.fromExport) with the real hubble CLIs (v1.18.4 and
 * v1.19.7) and Hubble Relay (v1.18.4): two Hubble servers in this process over loopback, each a
 * small ring (300 flows) and the static exporter's files (real file sink: rotated at 64 KiB, node A's
 * backups gzipped, node B's plain) holding the 3000 flows of known content each was fed, one per
 * second from two hours ago (flow i: source port i; every third one dropped; node B's half a second
 * after node A's). Checks, with each CLI:
 * - `--since` far back: all 3000 flows in order (2700 from the files, the ring's 300), none twice;
 *   `--since --first N`, `--since --last N` (within the ring, and reaching into the files),
 *   `--since --until` and `--until` alone within the files' time, `--verdict` on stored flows;
 * - the 1.19 CLI's text output with its default field mask prints stored flows as whole ones do;
 * - through Hubble Relay: both nodes' histories merged in time order (`--since`), `--first N` per node;
 * - a node whose export keeps only drops refuses `--since` (FailedPrecondition, saying why) and
 *   answers `--since --verdict DROPPED` from its files;
 * - `--follow --since`: the files, then the ring, then new flows as they come;
 * - the agent itself (bin/retina-agent) wires it: restarted over an earlier run's files, it answers
 *   `--since` from them; `hubble.history.fromExport` without the static exporter exits 2 naming the key.
 * Never skips: it fails when the hubble tools are not built.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createExportHistory, createFileSink, createFlowExporter, sinkCounts, staticSelection, type FileSink, type FlowExporter } from '../../src/export/index.js';
import { createFlow, type Flow } from '../../src/flow/index.js';
import { hubbleProtoFiles, loadFlowProtos } from '../../src/flow/hubble/index.js';
import { createLogger } from '../../src/log/index.js';
import { createMetricsRegistry } from '../../src/metrics/index.js';
import { createFlowRing, loadHubbleProtos, startHubbleServer, type FlowRing, type HubblePeer, type HubbleServer } from '../../src/server/hubble/index.js';
import { AgentProcess, agentEnv, freePort } from '../e2e/agent-process.js';
import { eventually } from './harness.js';
import { HUBBLE_CLIS, hubble, hubbleTools } from './hubble-tools.js';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const protoDir = fileURLToPath(new URL('../../../proto/hubble', import.meta.url));
const files = hubbleProtoFiles(protoDir);
const flowProtos = loadFlowProtos(files);
const protos = loadHubbleProtos(files);
const log = createLogger({ level: 'error', stream: new PassThrough() });

const N = 3000;
const RING = 300;
/** Flow i of a node: one per second from two hours ago (node B half a second later), source port i. */
const T0 = Math.floor(Date.now() / 1000) * 1000 - 2 * 3600_000;
const flowOf = (i: number, offsetMs: number): Flow => createFlow({
  srcIp: '10.0.0.1', dstIp: '10.0.0.2', verdict: i % 3 === 0 ? 'DROPPED' : 'FORWARDED', dropReason: 'NETFILTER_DROP', proto: 17, srcPort: i, dstPort: 53,
  direction: 'EGRESS', timeMs: T0 + i * 1000 + offsetMs,
});
const iso = (i: number, offsetMs = 0): string => new Date(T0 + i * 1000 + offsetMs).toISOString();
const jsonFlows = (out: string): Obj[] => out.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as Obj).filter((m) => m['flow']).map((m) => m['flow'] as Obj);
const ports = (fs: Obj[]): number[] => fs.map((f) => Number(f['l4']['UDP']['source_port'] ?? 0)); // port 0: protojson leaves it out
const range = (from: number, to: number, step = 1): number[] => Array.from({ length: Math.ceil((to - from) / step) }, (_, k) => from + k * step);

interface Node {
  readonly name: string;
  readonly ip: string;
  readonly ring: FlowRing;
  readonly exporter: FlowExporter;
  readonly sink: FileSink;
  server: HubbleServer;
  readonly dir: string;
}

describe('hubble observe --since/--until/--first/--last beyond the ring, from the stored flow-log files (CLI 1.18 and 1.19, Hubble Relay)', { timeout: 240_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'hubble-history-'));
  const nodes: Node[] = [];
  let relay: ChildProcess | undefined;
  let relayLog = '';
  let relayAddr = '';
  const peers: HubblePeer[] = [];

  const startNode = async (name: string, ip: string, compress: boolean, allowList: Record<string, unknown>[], offsetMs: number): Promise<Node> => {
    const path = join(dir, name, 'events.log');
    const metrics = createMetricsRegistry();
    // Backups are named by when they were rotated: just after the newest flow written (the flows are two hours old).
    let latest = 0;
    const sink = createFileSink({ path, maxSizeBytes: 64 * 1024, maxBackups: 0, compress, counts: sinkCounts(metrics, 'file'), log, now: () => new Date(latest + 1000) });
    const exporter = createFlowExporter({ name: 'static', selection: staticSelection(allowList, []), sinks: [sink], nodeName: name, protos: flowProtos, metrics, log });
    const config = { file: { path, maxSizeMb: 1, maxBackups: 0, compress }, allowList, denyList: [], fieldMask: [], aggregationIntervalMs: 0, keys: { allowList: 'hubble.export.static.allowList', denyList: 'd', fieldMask: 'm' } };
    const ring = createFlowRing(RING);
    const server = await startHubbleServer({
      protos, ring, listen: { host: ip, port: 0 }, nodeName: name, version: 'test', log,
      peers: { list: () => peers, subscribe: () => ({ [Symbol.dispose]: () => undefined }) },
      history: createExportHistory({ config, nodeName: name, protos: flowProtos }),
    });
    const node: Node = { name, ip, ring, exporter, sink, server, dir: join(dir, name) };
    // The node pipeline's order: the ring, then the exporter, batch by batch.
    for (let b = 0; b < N / 50; b++) {
      const batch = { source: 'test', flows: range(b * 50, b * 50 + 50).map((i) => flowOf(i, offsetMs)) };
      latest = T0 + (b * 50 + 49) * 1000 + offsetMs;
      ring.consume(batch);
      exporter.consume(batch);
      await sink.flushed();
    }
    nodes.push(node);
    return node;
  };
  const observe = (tools: string, node: Node | string, ...args: string[]): Promise<string> =>
    hubble(tools, ['observe', '--server', typeof node === 'string' ? node : `${node.ip}:${node.server.port}`, ...args], 60_000);

  before(async () => {
    for (const c of HUBBLE_CLIS) hubbleTools(c.pin);
    const a = await startNode('node-a', '127.0.46.1', true, [], 0);
    const b = await startNode('node-b', '127.0.46.2', false, [], 500);
    await startNode('node-drops', '127.0.46.3', true, [{ verdict: ['DROPPED'] }], 0);
    peers.push({ name: a.name, address: `${a.ip}:${a.server.port}` }, { name: b.name, address: `${b.ip}:${b.server.port}` });
  });
  after(async () => {
    relay?.kill('SIGKILL');
    for (const n of nodes) {
      await n.server[Symbol.asyncDispose]();
      await n.exporter[Symbol.asyncDispose]();
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('the files are what the test means: rotated backups (node A gzipped) beside a ring of the last 300', () => {
    const [a, b] = nodes as [Node, Node];
    const names = readdirSync(a.dir);
    assert.ok(names.filter((n) => n.endsWith('.log.gz')).length >= 10, names.join(' '));
    assert.ok(readdirSync(b.dir).filter((n) => /events-.*\.log$/.test(n)).length >= 10);
    assert.equal(a.ring.stats().size, RING);
    assert.equal(a.ring.stats().seen, N);
  });

  for (const cli of HUBBLE_CLIS) {
    const tools = (): string => hubbleTools(cli.pin);
    it(`--since far back: every flow in order, from the files then the ring, none twice; --first, --last, --until (${cli.label})`, async () => {
      const a = nodes[0] as Node;
      const since = iso(-60);
      const got = ports(jsonFlows(await observe(tools(), a, '-o', 'json', '--since', since)));
      assert.deepEqual(got, range(0, N));
      assert.deepEqual(ports(jsonFlows(await observe(tools(), a, '-o', 'json', '--since', since, '--first', '7'))), range(0, 7));
      assert.deepEqual(ports(jsonFlows(await observe(tools(), a, '-o', 'json', '--since', since, '--last', '7'))), range(N - 7, N), 'within the ring');
      assert.deepEqual(ports(jsonFlows(await observe(tools(), a, '-o', 'json', '--since', since, '--last', '450'))), range(N - 450, N), '150 from the files, 300 from the ring');
      assert.deepEqual(ports(jsonFlows(await observe(tools(), a, '-o', 'json', '--since', iso(1000), '--until', iso(1100)))), range(1000, 1101));
      assert.deepEqual(ports(jsonFlows(await observe(tools(), a, '-o', 'json', '--until', iso(40)))), range(0, 41), '--until alone: from the oldest stored flow');
      assert.deepEqual(ports(jsonFlows(await observe(tools(), a, '-o', 'json', '--since', iso(2650), '--verdict', 'DROPPED'))), range(2652, N, 3), 'across the seam');
      const first = jsonFlows(await observe(tools(), a, '-o', 'json', '--since', since, '--first', '1'))[0] as Obj;
      assert.equal(first['time'], iso(0).replace('.000Z', 'Z'));
      assert.equal(first['verdict'], 'DROPPED');
      assert.equal(first['Summary'], 'drop reason: NETFILTER_DROP');
      assert.equal(first['node_name'], 'node-a');
    });
  }

  it('hubble 1.19: the text outputs with the default field mask print stored flows as whole ones do', async () => {
    const tools = hubbleTools('v1.19');
    const a = nodes[0] as Node;
    for (const output of ['compact', 'dict']) {
      const args = ['-o', output, '--since', iso(100), '--until', iso(110)];
      const masked = await observe(tools, a, ...args);
      assert.equal(masked, await observe(tools, a, ...args, '--use-default-field-masks=false'), output);
      assert.ok(masked.includes('10.0.0.1:105') && masked.includes('DROPPED'), masked);
    }
  });

  it('a store that keeps only drops: --since for every flow refused saying why; --since --verdict DROPPED answered from it', async () => {
    const tools = hubbleTools('');
    const d = nodes[2] as Node;
    const err = await observe(tools, d, '-o', 'json', '--since', iso(-60)).then((out) => new Error(`accepted: ${out.slice(0, 200)}`), (e: Error) => e);
    assert.match(err.message, /FailedPrecondition/, err.message);
    assert.match(err.message, /keeps only the flows its allow list matches \(\[\{"verdict":\["DROPPED"\]\}\]\)/, err.message);
    assert.deepEqual(ports(jsonFlows(await observe(tools, d, '-o', 'json', '--since', iso(-60), '--verdict', 'DROPPED'))), [...range(0, N - RING, 3), ...range(N - RING, N, 3)]);
    // Within the ring, the store is not asked.
    assert.equal(jsonFlows(await observe(tools, d, '-o', 'json', '--since', iso(N - 10))).length, 10);
  });

  for (const cli of HUBBLE_CLIS) {
    it(`through Hubble Relay: both nodes' histories merged by time; --first N and --last N per node (${cli.label})`, async () => {
      if (relay === undefined) {
        const tools = hubbleTools('');
        const port = await freePort();
        relayAddr = `127.0.46.1:${port}`;
        relay = spawn(join(tools, 'hubble-relay'), ['serve', '--peer-service', peers[0]?.address ?? '', '--disable-client-tls', '--disable-server-tls',
          '--listen-address', relayAddr, '--health-listen-address', `127.0.46.1:${await freePort()}`, '--gops=false', '--retry-timeout', '2s',
          '--sort-buffer-len-max', '10000', '--sort-buffer-drain-timeout', '5s'], { stdio: ['ignore', 'pipe', 'pipe'] });
        relay.stdout?.on('data', (d: Buffer) => (relayLog += d.toString()));
        relay.stderr?.on('data', (d: Buffer) => (relayLog += d.toString()));
        await eventually('both nodes connected to the relay', 30_000, async () => {
          const out = await hubble(tools, ['list', 'nodes', '--server', relayAddr]).catch(() => '');
          return nodes.slice(0, 2).every((n) => new RegExp(`${n.name}\\s+Connected`).test(out)) && out;
        }, 500).catch((e: Error) => { throw new Error(`${e.message}\nrelay log:\n${relayLog.slice(-2000)}`); });
      }
      const tools = hubbleTools(cli.pin);
      const merged = jsonFlows(await observe(tools, relayAddr, '-o', 'json', '--since', iso(-60)));
      assert.equal(merged.length, 2 * N);
      assert.deepEqual(merged.map((f) => `${f['node_name']}:${f['l4']['UDP']['source_port'] ?? 0}`), range(0, N).flatMap((i) => [`node-a:${i}`, `node-b:${i}`]), 'in time order, node B half a second after A');
      const firsts = jsonFlows(await observe(tools, relayAddr, '-o', 'json', '--since', iso(-60), '--first', '3'));
      assert.deepEqual(firsts.map((f) => `${f['node_name']}:${f['l4']['UDP']['source_port'] ?? 0}`), ['node-a:0', 'node-b:0', 'node-a:1', 'node-b:1', 'node-a:2', 'node-b:2']);
      const window = jsonFlows(await observe(tools, relayAddr, '-o', 'json', '--since', iso(500), '--until', iso(504)));
      assert.deepEqual(ports(window), [500, 500, 501, 501, 502, 502, 503, 503, 504]);
      // --last N per node, from the files (before the ring): node B's flows are half a second after A's.
      const lasts = jsonFlows(await observe(tools, relayAddr, '-o', 'json', '--until', iso(1000), '--last', '2'));
      assert.deepEqual(lasts.map((f) => `${f['node_name']}:${f['l4']['UDP']['source_port'] ?? 0}`), ['node-b:998', 'node-a:999', 'node-b:999', 'node-a:1000']);
    });
  }

  it('--follow --since: the files, then the ring, then new flows as they come', async () => {
    const tools = hubbleTools('v1.19');
    const a = nodes[0] as Node;
    const c = spawn(join(tools, 'hubble'), ['observe', '--server', `${a.ip}:${a.server.port}`, '-o', 'json', '--follow', '--since', iso(2000)], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, HUBBLE_CONFIG: '/dev/null' } });
    let out = '';
    c.stdout.on('data', (d: Buffer) => (out += d.toString()));
    try {
      await eventually('the history of the follower', 30_000, async () => jsonFlows(out).length >= N - 2000, 200);
      const more = range(N, N + 5).map((i) => flowOf(i, 0));
      a.ring.consume({ source: 'test', flows: more });
      a.exporter.consume({ source: 'test', flows: more });
      await eventually('the new flows', 20_000, async () => jsonFlows(out).length >= N - 2000 + 5, 200);
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(ports(jsonFlows(out)), range(2000, N + 5));
    } finally {
      c.kill('SIGINT');
    }
  });

  it('the agent: restarted over an earlier run\'s files, it answers --since from them; without the static exporter it refuses to start', async () => {
    const b = nodes[1] as Node;
    const files = join(dir, 'agent');
    cpSync(b.dir, files, { recursive: true });
    const port = await freePort();
    const config = (lines: string[]): string => {
      const path = join(dir, `agent-${lines.length}.yaml`);
      writeFileSync(path, ['apiServer:', '  host: 127.0.0.1', '  port: 0', 'enabledPlugin: []', 'hubble:', '  enabled: true', `  listenAddress: "127.0.46.4:${port}"`, '  history:', '    fromExport: true', ...lines, ''].join('\n'));
      return path;
    };
    await using agent = new AgentProcess({ args: ['--config', config(['  export:', '    static:', '      enabled: true', `      filePath: ${join(files, 'events.log')}`])], env: agentEnv({ NODE_NAME: 'node-b' }) });
    await agent.listening(30_000);
    await agent.waitForLog((l) => l.msg === 'hubble server listening', 'hubble server listening', 30_000);
    // The ring is empty (no plugin): every stored flow, in order, through the agent's own wiring.
    const got = jsonFlows(await hubble(hubbleTools(''), ['observe', '--server', `127.0.46.4:${port}`, '-o', 'json', '--since', iso(-60)], 60_000));
    assert.deepEqual(ports(got), range(0, N));
    assert.ok(got.every((f) => f['node_name'] === 'node-b'));
    await using bad = new AgentProcess({ args: ['--config', config([])], env: agentEnv() });
    const exit = await bad.waitExit(30_000);
    assert.equal(exit.code, 2, bad.stderr);
    assert.match(bad.stderr, /hubble\.history\.fromExport.*the static exporter's files are the history/);
  });
});

