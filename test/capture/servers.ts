/**
 * Real storage servers for the capture output tests: Azurite's blob service (npm `azurite`) and
 * MinIO (built by hack/minio/build.sh into the tools cache; `make test` builds it first), each on a
 * free port of 127.0.0.1 with its data in a fresh folder, stopped by the caller.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './workload-run.js';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

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
    '--location', mkdtempSync(join(tmpdir(), 'cr-azurite-')),
  ]);
  const endpoint = `http://127.0.0.1:${port}/${AZURITE_ACCOUNT}`;
  await until('azurite', async () => (await fetch(`${endpoint}?comp=list`)).status < 500, child, logs);
  return { endpoint, stop: stopper(child) };
}

export const MINIO_USER = 'retina-test-admin';
export const MINIO_PASSWORD = 'retina-test-secret-key-0123456789';

/** The MinIO binary from the tools cache (hack/minio/build.sh answers at once once built). */
export function minioBinary(): string {
  const r = spawnSync('bash', [`${ROOT}hack/minio/build.sh`], { encoding: 'utf8', env: { ...process.env, MINIO_BUILD_IF_MISSING: 'no' } });
  if (r.status !== 0) throw new Error(`MinIO is not built (make test builds it: hack/minio/build.sh): ${r.stderr.trim().slice(-500)}`);
  return r.stdout.trim().split('\n').pop() as string;
}

export async function startMinio(): Promise<Server> {
  const [port, consolePort] = [await freePort(), await freePort()];
  const { child, logs } = spawnLogged(minioBinary(), ['server', mkdtempSync(join(tmpdir(), 'cr-minio-')), '--address', `127.0.0.1:${port}`, '--console-address', `127.0.0.1:${consolePort}`, '--quiet'], {
    ...process.env, MINIO_ROOT_USER: MINIO_USER, MINIO_ROOT_PASSWORD: MINIO_PASSWORD, MINIO_BROWSER: 'off', MINIO_UPDATE: 'off',
  });
  const endpoint = `http://127.0.0.1:${port}`;
  await until('minio', async () => (await fetch(`${endpoint}/minio/health/live`)).ok, child, logs);
  return { endpoint, stop: stopper(child) };
}
