/**
 * Runs `retina-capture` (dist/src/cli/capture-workload-main.js, as bin/retina-capture runs it) for the
 * capture tests, optionally inside a network namespace, and reads its tarball back: extracted with
 * `tar`, the pcap listed with `tcpdump -r` (an independent reader), the manifest parsed.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { nodeBinary } from '../e2e/agent-process.js';

export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const WORKLOAD = `${ROOT}dist/src/cli/capture-workload-main.js`;

export interface Run {
  readonly child: ChildProcess;
  /** Resolves once the workload logged "capturing" (the capture tool is listening). */
  readonly capturing: Promise<void>;
  readonly done: Promise<{ code: number | null; stdout: string; stderr: string; termination: string }>;
}

export function sh(cmd: string, args: readonly string[]): string {
  return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

export function runWorkload(env: Record<string, string>, opts: { netns?: string; args?: readonly string[] } = {}): Run {
  const scratch = mkdtempSync(join(tmpdir(), 'cr-run-'));
  const termination = join(scratch, 'termination-log');
  const argv = [WORKLOAD, '--work-dir', join(scratch, 'work'), '--termination-log', termination, '--size-poll-interval', '200ms', ...(opts.args ?? [])];
  const [cmd, args] = opts.netns ? ['ip', ['netns', 'exec', opts.netns, nodeBinary(), ...argv]] : [nodeBinary(), argv];
  const { NODE_TEST_CONTEXT: _c, KUBERNETES_SERVICE_HOST: _h, KUBECONFIG: _k, ...parent } = process.env;
  const child = spawn(cmd as string, args as string[], { env: { ...parent, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let onCapturing!: () => void;
  const capturing = new Promise<void>((r) => (onCapturing = r));
  child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
    if (stderr.includes('"msg":"capturing"')) onCapturing();
  });
  const done = new Promise<{ code: number | null; stdout: string; stderr: string; termination: string }>((resolve) => {
    child.on('close', (code) => {
      let t = '';
      try {
        t = readFileSync(termination, 'utf8');
      } catch {
        /* none written */
      }
      resolve({ code, stdout, stderr, termination: t });
    });
  });
  return { child, capturing: Promise.race([capturing, done.then(() => undefined)]), done };
}

export interface Extracted {
  readonly folder: string;
  readonly manifest: {
    captureName: string; nodeName: string; stopReason: string; packets: number | null; dropped: number | null; startedAt: string; stoppedAt: string;
    files: { name: string; size: number; sha256: string }[]; filters: Record<string, unknown>; metadata: boolean;
  };
  readonly entries: string[];
}

/** Extracts `tarball` into a fresh folder; the tarball must hold exactly one folder named after it. */
export function extract(tarball: string): Extracted {
  const to = mkdtempSync(join(tmpdir(), 'cr-x-'));
  sh('tar', ['-xzf', tarball, '-C', to]);
  const top = readdirSync(to);
  const name = (tarball.split('/').pop() ?? '').replace(/\.tar\.gz$/, '');
  if (top.length !== 1 || top[0] !== name) throw new Error(`the tarball holds ${JSON.stringify(top)}, not one folder ${name}`);
  const folder = join(to, name);
  const entries = (readdirSync(folder, { recursive: true }) as string[]).map(String).sort();
  return { folder, manifest: JSON.parse(readFileSync(join(folder, 'manifest.json'), 'utf8')) as Extracted['manifest'], entries };
}

/** The packets of a pcap as `tcpdump -r -nn` prints them, one line each. */
export function pcapLines(file: string): string[] {
  return sh('tcpdump', ['-r', file, '-nn', '-q']).split('\n').filter(Boolean);
}

export function freshDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  mkdirSync(d, { recursive: true });
  return d;
}
