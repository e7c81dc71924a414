/**
 * A lock between test processes (concurrent `make test` runs, of one checkout or of several on one
 * machine): a directory made with mkdir, holding the owner's pid. A dead owner's lock is taken over,
 * and so is a directory whose pid file is still missing after 10 s (its maker died in between).
 */
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/** Whether process `pid` exists (EPERM: it does, owned by another user). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export interface DirLockOptions {
  /** How long to wait for a live owner. */
  readonly waitMs: number;
  readonly pollMs: number;
  /** The error's message when the wait is over, given the owner's pid. */
  readonly busy: (owner: number) => string;
}

/** Takes the lock `dir`; the function returned releases it (and so does this process's exit). */
export async function dirLock(dir: string, opts: DirLockOptions): Promise<() => void> {
  const deadline = Date.now() + opts.waitMs;
  for (;;) {
    try {
      mkdirSync(dir);
      writeFileSync(`${dir}/pid`, String(process.pid));
      const release = (): void => {
        process.off('exit', release);
        try {
          if (Number(readFileSync(`${dir}/pid`, 'utf8')) === process.pid) rmSync(dir, { recursive: true, force: true });
        } catch {
          // already gone
        }
      };
      process.once('exit', release);
      return release;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    let owner = 0;
    try {
      owner = Number(readFileSync(`${dir}/pid`, 'utf8'));
    } catch {
      // being created or released: look again
    }
    const orphan = owner === 0 && Date.now() - (statSync(dir, { throwIfNoEntry: false })?.mtimeMs ?? Date.now()) > 10_000;
    if ((owner > 0 && !processAlive(owner)) || orphan) {
      rmSync(dir, { recursive: true, force: true });
      continue;
    }
    if (Date.now() > deadline) throw new Error(opts.busy(owner));
    await sleep(opts.pollMs);
  }
}
