/**
 * The machine's netfilter drops and TCP losses, one test file at a time. The node-level counts the tests
 * check exactly (drop_count by reason, tcp_retransmission_count) see every network namespace of the
 * machine, and `make test` runs its lanes side by side (hack/test/lanes.mjs): a file of one lane that sends
 * datagrams into an nftables DROP rule, or loses TCP segments on purpose, would show in the counts another
 * lane is checking. So every file that makes such drops or counts them holds this lock while it does: a
 * lock directory under /run naming the holder's pid (test/integration/dir-lock.ts), shared by every
 * checkout of the machine. A file holds it for its whole run (`holdDropsForThisFile`); the real-node suite,
 * whose other cases make no drops, holds it around the cases that do (`holdDrops`).
 */
import { before } from 'node:test';
import { dirLock } from '../integration/dir-lock.js';

export const DROP_LOCK = '/run/retina-ts-drops.lock';

/** Takes the lock (waiting up to 30 minutes for another holder); the function returned releases it. */
export function holdDrops(): Promise<() => void> {
  return dirLock(DROP_LOCK, { waitMs: 30 * 60_000, pollMs: 250, busy: (owner) => `the machine's drop lock is held by pid ${owner} (${DROP_LOCK})` });
}

/**
 * Holds the lock from before this file's first test until its process exits (each test file runs in a
 * process of its own): an `after` hook would give it back before the file's own `after` hooks, which
 * node:test runs after it, have stopped the traffic (a full run met a test's traffic loop dropping
 * 100 datagrams a second for minutes after its file had released the lock).
 */
export function holdDropsForThisFile(): void {
  before(async () => {
    await holdDrops(); // released by dirLock's exit handler
  });
}

/** Runs `fn` holding the lock. */
export async function withDrops<T>(fn: () => Promise<T>): Promise<T> {
  const release = await holdDrops();
  try {
    return await fn();
  } finally {
    release();
  }
}
