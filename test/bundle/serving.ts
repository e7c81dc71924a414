/**
 * What the bundle and image tests check on a running agent: a network namespace with a default
 * route (packetforward needs one), /readyz saying every default plugin runs, and /metrics answering
 * with the default plugins' metrics. Also where the bundle is (make bundle) and the agent's RSS.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../e2e/agent-process.js';
import { Netns, vethPair } from '../ebpf/netns.js';

/** Linux plugins marked default in the README (what runs without enabledPlugin). */
export const DEFAULT_PLUGINS = ['packetforward', 'dropreason', 'linuxutil', 'dns'] as const;

/** This machine's Linux bundle folder; fails loudly when `make bundle` has not made it. */
export function linuxBundle(): string {
  const arch = process.arch;
  const dir = join(ROOT, 'build', 'bundle', `linux-${arch}`);
  if (!existsSync(join(dir, 'retina-agent.mjs'))) throw new Error(`${dir}/retina-agent.mjs is missing: run make bundle`);
  return dir;
}

/** A namespace `ns` whose eth0 (10.<n>.0.1/24) is its default route to a peer namespace; both destroyed by the caller. */
export function routedNetns(tag: string, n: number): { ns: Netns; peer: Netns } {
  const ns = new Netns(tag);
  const peer = new Netns(`${tag}p`);
  vethPair(ns, 'eth0', `10.${n}.0.1`, peer, 'p0', `10.${n}.0.2`);
  ns.run('ip', ['route', 'add', 'default', 'via', `10.${n}.0.2`]);
  return { ns, peer };
}

export interface Readyz {
  readonly status: string;
  readonly plugins: readonly { name: string; state: string; lastError?: string }[];
}

/** Asserts /readyz is 200 with every default plugin running and /metrics has each default plugin's metrics. */
export function assertServing(readyz: { status: number; body: string }, metrics: string): void {
  const r = JSON.parse(readyz.body) as Readyz;
  assert.equal(readyz.status, 200, `/readyz: ${readyz.body}`);
  assert.deepEqual(r.plugins.map((p) => p.name).sort(), [...DEFAULT_PLUGINS].sort(), readyz.body);
  for (const p of r.plugins) assert.match(p.state, /^(running|degraded)$/, `${p.name}: ${JSON.stringify(p)}`);
  // linuxutil by tcp_state: interface_stats has, by default (Retina's shape), only non-zero err/drop
  // sums, none in a quiet test namespace.
  for (const name of ['networkobservability_forward_count', 'networkobservability_tcp_state']) {
    assert.match(metrics, new RegExp(`^${name}\\{`, 'm'), `/metrics has no ${name}`);
  }
}

/** Resident set size of process `pid` in MiB: total (VmRSS), anonymous and file-backed, one decimal. */
export function rssMiB(pid: number): { total: number; anon: number; file: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string): number => {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
    if (!m) throw new Error(`no ${field} for pid ${pid}`);
    return Math.round(Number(m[1]) / 102.4) / 10;
  };
  return { total: kb('VmRSS'), anon: kb('RssAnon'), file: kb('RssFile') };
}

/** The node flags of bin/retina-agent (the one source of them; the image's entrypoint has the same). */
export function agentNodeFlags(root = ROOT): string[] {
  const m = /^exec "\$n" (.*?) "\$d\/dist\//m.exec(readFileSync(join(root, 'bin', 'retina-agent'), 'utf8'));
  if (!m?.[1]) throw new Error(`${root}/bin/retina-agent has no \`exec "$n" <flags> "$d/dist/...\` line`);
  return m[1].split(/\s+/);
}

/**
 * Polls /readyz (through `get`) every 100 ms until 200 or until a plugin has failed, for at most
 * `timeoutMs`; returns the last answer.
 */
export async function untilReady(get: () => { status: number; body: string }, timeoutMs = 30_000): Promise<{ status: number; body: string }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = get();
    if (r.status === 200 || Date.now() > deadline || failedPlugins(r).length > 0) return r;
    await new Promise((res) => setTimeout(res, 100));
  }
}

/** The plugins /readyz shows as failed (an answer that is not /readyz JSON shows none). */
export function failedPlugins(r: { body: string }): string[] {
  try {
    return (JSON.parse(r.body) as Readyz).plugins.filter((p) => p.state === 'failed').map((p) => p.name);
  } catch {
    return [];
  }
}

/** GET http://127.0.0.1:<port><path> from inside `ns` (curl): status and body, whatever the status. */
export function curlIn(ns: Netns, port: number, path: string): { status: number; body: string } {
  const out = ns.run('curl', ['-s', '-w', '\n%{http_code}', `http://127.0.0.1:${port}${path}`]);
  const i = out.lastIndexOf('\n');
  return { status: Number(out.slice(i + 1)), body: out.slice(0, i) };
}
