/**
 * The real `hubble` CLIs and `hubble-relay` (hack/hubble/build.sh) for the Hubble integration tests:
 * the CLI of both pins (Cilium v1.18.4 with hubble-relay, v1.19.7 the CLI alone), so every test that
 * runs the CLI runs it with both.
 */
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from '../e2e/agent-process.js';

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
