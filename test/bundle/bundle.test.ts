/**
 * The bundles (make bundle) run from their own folder: copied to an empty temporary folder (no
 * checkout, no node_modules above it), the operator answers --version and --help, and the agent
 * runs standalone with the default plugins in its own network namespace, /readyz and /metrics
 * answering. Reports start time and RSS of the bundled and the dist/ agent.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { AGENT_BIN, ROOT, nodeBinary } from '../e2e/agent-process.js';
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

  it('the agent runs the default plugins in a network namespace; /readyz and /metrics answer', async (t) => {
    requireKernel();
    const figures: Record<string, { startMs: number; rssMiB: ReturnType<typeof rssMiB> }> = {};
    for (const [what, command] of [
      ['bundle', [nodeBinary(), ...agentNodeFlags(), join(dir, 'retina-agent.mjs')]],
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
