/**
 * Real storage servers for the capture output tests: Azurite's blob service (npm `azurite`) and
 * an S3 server (gofakes3 with Signature V4 auth, built by hack/s3/build.sh into the tools cache;
 * `make test` builds it first), each on a free port of 127.0.0.1 with its data in a fresh folder, stopped by the caller.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { freePort } from '../e2e/agent-process.js';
import { ROOT } from './workload-run.js';

export { freePort };

async function until(what: string, ok: () => Promise<boolean>, child: ChildProcess, logs: () => string, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (child.exitCode !== null) throw new Error(`${what} exited ${child.exitCode}: ${logs()}`);
    if (await ok().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${what} not ready within ${ms} ms: ${logs()}`);
}

export interface Server {
  readonly endpoint: string;
  stop(): Promise<void>;
}

function stopper(child: ChildProcess): () => Promise<void> {
  return () => new Promise((r) => {
    if (child.exitCode !== null) return r();
    child.on('close', () => r());
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 5000).unref();
  });
}

function spawnLogged(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): { child: ChildProcess; logs: () => string } {
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-4000)));
  child.stderr?.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-4000)));
  return { child, logs: () => out };
}

/** Azurite's well-known development account. */
export const AZURITE_ACCOUNT = 'devstoreaccount1';
export const AZURITE_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

export async function startAzurite(): Promise<Server> {
  const port = await freePort();
  const { child, logs } = spawnLogged(`${ROOT}node_modules/.bin/azurite-blob`, [
    '--blobHost', '127.0.0.1', '--blobPort', String(port), '--inMemoryPersistence', '--disableTelemetry', '--skipApiVersionCheck', '--silent',
  ]);
  const endpoint = `http://127.0.0.1:${port}/${AZURITE_ACCOUNT}`;
  await until('azurite', async () => (await fetch(`${endpoint}?comp=list`)).status < 500, child, logs);
  return { endpoint, stop: stopper(child) };
}

export const S3_ACCESS_KEY = 'retina-test-access-key';
export const S3_SECRET_KEY = 'retina-test-secret-key-0123456789';

/** The S3 test server from the tools cache (hack/s3/build.sh answers at once once built). */
export function s3ServerBinary(): string {
  const r = spawnSync('bash', [`${ROOT}hack/s3/build.sh`], { encoding: 'utf8', env: { ...process.env, S3SERVER_BUILD_IF_MISSING: 'no' } });
  if (r.status !== 0) throw new Error(`the S3 test server is not built (make test builds it: hack/s3/build.sh): ${r.stderr.trim().slice(-500)}`);
  return r.stdout.trim().split('\n').pop() as string;
}

/** gofakes3 (S3 REST API, Signature V4 auth with one key pair) on a free port. */
export async function startS3Server(): Promise<Server> {
  const { child, logs } = spawnLogged(s3ServerBinary(), [], { ...process.env, S3SERVER_ACCESS_KEY: S3_ACCESS_KEY, S3SERVER_SECRET_KEY: S3_SECRET_KEY });
  let endpoint = '';
  await until('the S3 test server', async () => {
    endpoint = /listening on (http:\/\/\S+)/.exec(logs())?.[1] ?? '';
    return endpoint !== '';
  }, child, logs);
  return { endpoint, stop: stopper(child) };
}
