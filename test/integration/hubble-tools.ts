/** The real `hubble` CLI and `hubble-relay` (hack/hubble/build.sh) for the Hubble integration tests. */
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from '../e2e/agent-process.js';

/** The directory holding hubble and hubble-relay (hack/hubble/build.sh answers at once once built). */
export function hubbleTools(): string {
  const r = spawnSync('bash', [`${ROOT}hack/hubble/build.sh`], { encoding: 'utf8', env: { ...process.env, HUBBLE_BUILD_IF_MISSING: 'no' } });
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
