/**
 * The bundles (make bundle) run from their own folder: copied to an empty temporary folder (no
 * checkout, no node_modules above it), the operator answers --version and --help, and the agent
 * runs standalone with the default plugins in its own network namespace, /readyz and /metrics
 * answering. Reports start time and RSS of the bundled and the dist/ agent.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { AGENT_BIN, AgentProcess, ROOT, get, nodeBinary } from '../e2e/agent-process.js';
import { NsAgent, requireKernel } from '../ebpf/netns.js';
import { agentNodeFlags, assertServing, curlIn, linuxBundle, routedNetns, rssMiB, untilReady } from './serving.js';

const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

describe('bundles, run from their own folder', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'retina-bundle-'));
    cpSync(linuxBundle(), dir, { recursive: true });
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('the operator answers --version and --help', () => {
    const run = (arg: string): string => execFileSync(nodeBinary(), [join(dir, 'retina-operator.mjs'), arg], { cwd: tmpdir(), encoding: 'utf8' });
    assert.equal(run('--version').trim(), version);
    assert.match(run('--help'), /^usage: retina-operator /);
  });

  it('client-node (~90 MB of RSS) is in a chunk of its own, outside what the agent and operator load at start', () => {
    // Its package.json name, which the bundle keeps (the minified bundle has no module-path comments).
    const marker = '"@kubernetes/client-node"';
    const files = readdirSync(dir).filter((f) => f.endsWith('.mjs'));
    assert.ok(files.some((f) => readFileSync(join(dir, f), 'utf8').includes(marker)), 'client-node is bundled (for the clusters that need it)');
    for (const entry of ['retina-agent.mjs', 'retina-operator.mjs']) {
      const eager = staticImports(dir, entry);
      assert.deepEqual(eager.filter((f) => readFileSync(join(dir, f), 'utf8').includes(marker)), [], `${entry} loads client-node at start`);
    }
  });

  it('the Hubble service ships its protos and loads grpc-js only when enabled', () => {
    for (const f of ['flow.proto', 'observer.proto', 'peer.proto', 'relay.proto', 'health.proto']) assert.ok(readFileSync(join(dir, 'proto', 'hubble', f), 'utf8').includes('syntax = "proto3"'), f);
    const marker = 'node_modules/@grpc/grpc-js/';
    const files = readdirSync(dir).filter((f) => f.endsWith('.mjs'));
    assert.ok(files.some((f) => readFileSync(join(dir, f), 'utf8').includes(marker)), 'grpc-js is bundled');
    assert.deepEqual(staticImports(dir, 'retina-agent.mjs').filter((f) => readFileSync(join(dir, f), 'utf8').includes(marker)), [], 'the agent loads grpc-js at start');
  });

  it('the agent listens before it loads winston: its start\'s chunk and what that imports statically hold none of it', () => {
    const marker = '[winston] Unknown logger level';
    const files = readdirSync(dir).filter((f) => f.endsWith('.mjs'));
    assert.ok(files.some((f) => readFileSync(join(dir, f), 'utf8').includes(marker)), 'winston is bundled');
    // main() of src/cli/agent.ts: the chunk with its usage text.
    const start = files.filter((f) => readFileSync(join(dir, f), 'utf8').includes('usage: retina-agent [--config FILE]'));
    assert.equal(start.length, 1, `one chunk holds the agent's main(): ${start.join(', ')}`);
    const eager = staticImports(dir, start[0] as string);
    assert.deepEqual(eager.filter((f) => readFileSync(join(dir, f), 'utf8').includes(marker)), [], `winston is loaded before the HTTP server listens (${eager.join(', ')})`);
  });

  it('the start-up snapshot holds none of the vendor packages: they are in vendor/, required on first use', () => {
    const snapshot = readFileSync(join(dir, 'retina-agent.cjs'), 'utf8');
    for (const [file, marker] of [['kubernetes-client-node.cjs', '"@kubernetes/client-node"'], ['grpc-grpc-js.cjs', 'node_modules/@grpc/grpc-js/']] as const) {
      assert.ok(readFileSync(join(dir, 'vendor', file), 'utf8').includes(marker), `vendor/${file} holds ${marker}`);
      assert.ok(!snapshot.includes(marker), `retina-agent.cjs holds ${marker}`);
      assert.ok(snapshot.includes(`./vendor/${file}`), `retina-agent.cjs requires vendor/${file}`);
    }
  });

  it('the start-up snapshot: --version, a process start time of this run (not the build\'s), and the files beside the blob wherever it is', async () => {
    const blob = join(dir, 'retina-agent.blob');
    const run = (...args: string[]): string => execFileSync(nodeBinary(), [...agentNodeFlags(), '--snapshot-blob', blob, '--', ...args], { cwd: tmpdir(), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    assert.equal(run('--version').trim(), version);
    assert.match(run('--help'), /^usage: retina-agent /);
    // A bad config still exits 2 naming the key, as the ES bundle does.
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, 'metricsIntervalDuration: soon\n');
    assert.throws(() => run('--config', bad), (e: { status?: number; stderr?: string }) => e.status === 2 && /metricsIntervalDuration/.test(e.stderr ?? ''));
    // The blob was made minutes ago at least (make bundle): a start time from then would be the build's.
    const cfg = join(dir, 'linuxutil.yaml');
    writeFileSync(cfg, 'apiServer:\n  host: 127.0.0.1\n  port: 0\nenabledPlugin: [linuxutil]\n');
    const before = Date.now() / 1000;
    const agent = new AgentProcess({ command: [nodeBinary(), ...agentNodeFlags(), '--snapshot-blob', blob, '--'], args: ['--config', cfg] });
    try {
      const port = await agent.listening();
      const m = await get(port, '/metrics');
      assert.equal(m.status, 200);
      const start = Number(/^process_start_time_seconds (\d+)/m.exec(m.body)?.[1]);
      assert.ok(Math.abs(start - before) <= 2, `process_start_time_seconds ${start}, started at ${before}`);
      // the plugin ran (started after the first answer, as in the image)
      await agent.waitForLog((l) => l.msg === 'plugins started', '"plugins started"');
    } finally {
      await agent[Symbol.asyncDispose]();
    }
    assert.ok(agent.logLines().some((l) => l.msg === 'stopped'), `stopped cleanly: ${agent.stderr.slice(-1000)}`);
  });

  it('pipeline workers: their script and packetparser\'s decoder beside the entries; the ES bundle starts them, the snapshot refuses them and runs on', async () => {
    const mod = (await import(pathToFileURL(join(dir, 'raw-decoder.js')).href)) as { createRawDecoder?: unknown; RAW_DECODER_MODULE?: string };
    assert.equal(typeof mod.createRawDecoder, 'function');
    assert.equal(mod.RAW_DECODER_MODULE, pathToFileURL(join(dir, 'raw-decoder.js')).href, 'the URL the plugin hands the workers is the file beside it');
    const cfg = join(dir, 'workers.yaml');
    writeFileSync(cfg, 'apiServer:\n  host: 127.0.0.1\n  port: 0\nenabledPlugin: [linuxutil]\nenablePodLevel: true\npipelineWorkers: 2\n');
    const es = new AgentProcess({ command: [nodeBinary(), ...agentNodeFlags(), join(dir, 'retina-agent.mjs')], args: ['--config', cfg] });
    try {
      await es.listening();
      await es.waitForLog((l) => l.msg === 'pipeline workers started' && l['workers'] === 2, '"pipeline workers started"');
      await es.waitForLog((l) => l.msg === 'plugins started', '"plugins started"');
      await new Promise((r) => setTimeout(r, 2000)); // a worker that cannot load its script exits within this
    } finally {
      await es[Symbol.asyncDispose]();
    }
    assert.deepEqual(es.logLines().filter((l) => /pipeline worker/.test(String(l.msg)) && l.level === 'error'), []);
    assert.ok(es.logLines().some((l) => l.msg === 'stopped'), `stopped cleanly: ${es.stderr.slice(-1000)}`);
    const snap = new AgentProcess({ command: [nodeBinary(), ...agentNodeFlags(), '--snapshot-blob', join(dir, 'retina-agent.blob'), '--'], args: ['--config', cfg] });
    try {
      await snap.listening();
      await snap.waitForLog((l) => l.msg.startsWith('pipelineWorkers needs an agent started without the start-up snapshot'), 'the snapshot\'s refusal');
      await snap.waitForLog((l) => l.msg === 'plugins started', '"plugins started"');
    } finally {
      await snap[Symbol.asyncDispose]();
    }
    assert.ok(!snap.logLines().some((l) => l.msg === 'pipeline workers started'));
    assert.ok(snap.logLines().some((l) => l.msg === 'stopped'), `stopped cleanly: ${snap.stderr.slice(-1000)}`);
  });

  it('the agent runs the default plugins in a network namespace; /readyz and /metrics answer', async (t) => {
    requireKernel();
    const figures: Record<string, { startMs: number; rssMiB: ReturnType<typeof rssMiB> }> = {};
    for (const [what, command] of [
      ['bundle', [nodeBinary(), ...agentNodeFlags(), join(dir, 'retina-agent.mjs')]],
      // The image's entrypoint: the start-up snapshot, made in build/bundle and run from this copy.
      ['snapshot', [nodeBinary(), ...agentNodeFlags(), '--snapshot-blob', join(dir, 'retina-agent.blob'), '--']],
      ['dist', [AGENT_BIN]],
    ] as const) {
      const { ns, peer } = routedNetns(`bndl${what[0]}`, 71);
      try {
        const t0 = Date.now();
        await using agent = new NsAgent(ns, '', command);
        await agent.started([]);
        const readyz = await untilReady(() => curlIn(ns, agent.port, '/readyz'));
        const startMs = Date.now() - t0;
        assertServing(readyz, agent.metrics());
        // `ip netns exec` and the shim exec, so the pid is node's own.
        figures[what] = { startMs, rssMiB: rssMiB(agent.proc.pid) };
      } finally {
        ns.destroy();
        peer.destroy();
      }
    }
    t.diagnostic(`agent start to /readyz 200 and RSS: ${JSON.stringify(figures)}`);
  });
});


/** `entry` and every file it imports statically (`import ... from "./x.mjs"`), transitively; dynamic import() is not followed. */
function staticImports(dir: string, entry: string): string[] {
  const seen = new Set<string>();
  const visit = (f: string): void => {
    if (seen.has(f)) return;
    seen.add(f);
    // Anywhere on a line: the minified bundle puts a chunk's imports on one line (dynamic import() has a parenthesis).
    for (const m of readFileSync(join(dir, f), 'utf8').matchAll(/\bfrom\s*"\.\/([^"]+\.mjs)"|\bimport\s*"\.\/([^"]+\.mjs)"/g)) visit((m[1] ?? m[2]) as string);
  };
  visit(entry);
  return [...seen];
}

