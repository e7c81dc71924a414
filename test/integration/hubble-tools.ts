/**
 * The real `hubble` CLIs and `hubble-relay` (hack/hubble/build.sh) for the Hubble integration tests:
 * the CLI of both pins (Cilium v1.18.4 with hubble-relay, v1.19.7 the CLI alone), so every test that
 * runs the CLI runs it with both.
 */
import * as grpc from '@grpc/grpc-js';
import { spawn, spawnSync } from 'node:child_process';
import { openSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { loadHubbleProtos, type HubbleProtos } from '../../src/server/hubble/index.js';
import { ROOT, get } from '../e2e/agent-process.js';
import { metric } from '../ebpf/netns.js';
import { eventually } from './harness.js';

const PROTO_DIR = join(ROOT, 'proto/hubble');
let protos: HubbleProtos | undefined;

/** A pinned CLI: `label` for test names, `pin` the hack/hubble/build.sh argument ('' for v1.18). */
export interface HubbleCliPin {
  readonly label: string;
  readonly pin: '' | 'v1.19';
}

/** Both pinned CLIs, oldest first. */
export const HUBBLE_CLIS: readonly HubbleCliPin[] = [{ label: 'hubble 1.18', pin: '' }, { label: 'hubble 1.19', pin: 'v1.19' }];

/**
 * The directory holding a pin's hubble (and, for v1.18, hubble-relay); hack/hubble/build.sh answers at
 * once once built.
 */
export function hubbleTools(pin: '' | 'v1.19' = ''): string {
  const r = spawnSync('bash', [`${ROOT}hack/hubble/build.sh`, ...(pin ? [pin] : [])], { encoding: 'utf8', env: { ...process.env, HUBBLE_BUILD_IF_MISSING: 'no' } });
  if (r.status !== 0) throw new Error(`the hubble tools are not built: ${r.stderr.trim()} (make test builds them)`);
  return r.stdout.trim();
}

/** Runs the hubble CLI to completion; stdout, or an error with its stderr. */
export function hubble(tools: string, args: string[], timeoutMs = 30_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = spawn(join(tools, 'hubble'), args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, HUBBLE_CONFIG: '/dev/null' } });
    let out = '';
    let err = '';
    c.stdout.on('data', (d: Buffer) => (out += d.toString()));
    c.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const t = setTimeout(() => c.kill('SIGKILL'), timeoutMs);
    c.on('close', (code) => {
      clearTimeout(t);
      if (code === 0) resolve(out);
      else reject(new Error(`hubble ${args.join(' ')} exited ${code}: ${err.trim()}`));
    });
  });
}

/** A running `hubble-relay serve` (plaintext both ways) and its ServerStatus. */
export interface RelayProcess {
  /** host:port it serves on. */
  readonly addr: string;
  readonly pid: number | undefined;
  /** Its ServerStatus num_connected_nodes (the relay asks every peer it knows); -1 while it does not answer. */
  connected(): Promise<number>;
  /** What it printed so far (with `log: 'buffer'`). */
  log(): string;
  stop(): void;
}

/**
 * Starts the real hubble-relay (v1.18.4) on `host` (a free port), finding its peers through the Peer
 * service at `peerService`; its output kept in memory (`'buffer'`, the last 64 KiB) or written to a file.
 * `args`: more relay flags.
 */
export async function startRelay(peerService: string, o: { host: string; log: 'buffer' | { file: string }; args?: string[] }): Promise<RelayProcess> {
  const port = await freePortOn(o.host);
  const health = await freePortOn(o.host);
  const out = o.log === 'buffer' ? 'pipe' : openSync(o.log.file, 'w');
  const relay = spawn(join(hubbleTools(), 'hubble-relay'), ['serve', '--peer-service', peerService, '--disable-client-tls', '--disable-server-tls',
    '--listen-address', `${o.host}:${port}`, '--health-listen-address', `${o.host}:${health}`, '--gops=false', ...(o.args ?? [])], { stdio: ['ignore', out, out] });
  let text = '';
  const keep = (d: Buffer): void => {
    text = (text + d.toString()).slice(-65_536);
  };
  relay.stdout?.on('data', keep);
  relay.stderr?.on('data', keep);
  const addr = `${o.host}:${port}`;
  const client = new grpc.Client(addr, grpc.credentials.createInsecure());
  const status = (protos ??= loadHubbleProtos(PROTO_DIR)).observer['ServerStatus'] as grpc.MethodDefinition<object, Record<string, unknown>>;
  return {
    addr, pid: relay.pid,
    connected: () => new Promise((resolve) => {
      client.makeUnaryRequest(status.path, status.requestSerialize, status.responseDeserialize, {}, { deadline: Date.now() + 10_000 }, (err, r) => {
        // num_connected_nodes is a google.protobuf.UInt32Value; absent when the relay knows no peer.
        resolve(err || !r ? -1 : Number((r['num_connected_nodes'] as { value?: number } | undefined)?.value ?? 0));
      });
    }),
    log: () => text,
    stop: () => {
      client.close();
      relay.kill('SIGKILL');
    },
  };
}

/** A free TCP port on `host` (a loopback address of the test's own, e.g. 127.52.0.1). */
export function freePortOn(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, host, () => {
      const a = s.address();
      s.close(() => (typeof a === 'object' && a ? resolve(a.port) : reject(new Error('no port'))));
    });
  });
}

/** The GetFlows streams open on the agent whose /metrics is at `port` (its hubble_clients gauge). */
export async function agentFollowers(port: number): Promise<number> {
  return metric((await get(port, '/metrics')).body, 'controlplane_networkobservability_hubble_clients', { rpc: 'GetFlows' });
}

/**
 * Starts a follow (`open`) on the agent whose /metrics is at `port`, once the earlier tests' streams have closed (up
 * to 5 s), and resolves with it when the agent counts it: its cursor is set then, so what happens afterwards reaches
 * it. A fixed wait for the follower to connect assumed a machine quick enough to start it (a CI run was not).
 */
export async function followCounted<T>(port: number, open: () => T): Promise<T> {
  const base = await eventually('no GetFlows stream of the earlier tests left open', 5_000, async () => ((await agentFollowers(port)) === 0 ? 0 : undefined), 100)
    .catch(() => agentFollowers(port));
  const f = open();
  await eventually('the follower counted by the agent', 30_000, async () => (await agentFollowers(port)) > base, 50);
  return f;
}
