/**
 * Reads InfiniBand statistics from a sysfs tree (`/sys` on a host, a fixture directory in tests):
 *   <root>/class/infiniband/<device>/ports/<port>/counters/<name>
 *   <root>/class/net/<ib*>/debug/<name>
 * Never throws: what cannot be listed, read or parsed is collected in `failed`, the rest is returned.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isInfinibandInterface, parseSysfsUint, type CounterSample, type ReadFailure, type StatusSample } from './decode.js';

export const DEFAULT_SYSFS_ROOT = '/sys';

export interface InfinibandSnapshot {
  readonly counters: readonly CounterSample[];
  readonly statusParams: readonly StatusSample[];
  /** Sorted by path. */
  readonly failed: readonly ReadFailure[];
}

/** Files read at once; a host has a few hundred counter files, and each read holds a descriptor. */
const READ_CONCURRENCY = 16;

export function infinibandClassDir(root: string): string {
  return join(root, 'class', 'infiniband');
}

export function netClassDir(root: string): string {
  return join(root, 'class', 'net');
}

export async function readInfiniband(root: string): Promise<InfinibandSnapshot> {
  const failed: ReadFailure[] = [];
  const [counters, statusParams] = await Promise.all([readCounters(root, failed), readStatusParams(root, failed)]);
  failed.sort((a, b) => (a.what < b.what ? -1 : a.what > b.what ? 1 : 0));
  return { counters, statusParams, failed };
}

async function readCounters(root: string, failed: ReadFailure[]): Promise<CounterSample[]> {
  const base = infinibandClassDir(root);
  const files: { path: string; device: string; port: string; name: string }[] = [];
  for (const device of await listDir(base, failed, 'required')) {
    const portsDir = join(base, device, 'ports');
    for (const port of await listDir(portsDir, failed, 'optional')) {
      const countersDir = join(portsDir, port, 'counters');
      for (const name of await listDir(countersDir, failed, 'optional')) {
        files.push({ path: join(countersDir, name), device, port, name });
      }
    }
  }
  const values = await mapLimit(files, READ_CONCURRENCY, (f) => readValue(f.path, failed));
  const out: CounterSample[] = [];
  files.forEach((f, i) => {
    const value = values[i];
    if (value !== undefined) out.push({ device: f.device, port: f.port, name: f.name, value });
  });
  return out;
}

async function readStatusParams(root: string, failed: ReadFailure[]): Promise<StatusSample[]> {
  const base = netClassDir(root);
  const files: { path: string; iface: string; name: string }[] = [];
  for (const iface of (await listDir(base, failed, 'required')).filter(isInfinibandInterface)) {
    const debugDir = join(base, iface, 'debug');
    for (const name of await listDir(debugDir, failed, 'optional')) {
      files.push({ path: join(debugDir, name), iface, name });
    }
  }
  const values = await mapLimit(files, READ_CONCURRENCY, (f) => readValue(f.path, failed));
  const out: StatusSample[] = [];
  files.forEach((f, i) => {
    const value = values[i];
    if (value !== undefined) out.push({ iface: f.iface, name: f.name, value });
  });
  return out;
}

/**
 * Entry names of a directory, sorted. An `optional` directory that does not exist is simply empty:
 * a port without PMA counters, an IPoIB interface without the out-of-tree driver's `debug/`, a device
 * unplugged while we walk it. Any other failure is recorded.
 */
async function listDir(path: string, failed: ReadFailure[], kind: 'required' | 'optional'): Promise<string[]> {
  try {
    // Entries of /sys/class/* are symlinks, so names are listed without file types and followed.
    return (await readdir(path)).sort();
  } catch (error) {
    if (kind === 'optional' && (error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    failed.push({ what: path, error });
    return [];
  }
}

async function readValue(path: string, failed: ReadFailure[]): Promise<number | undefined> {
  try {
    return parseSysfsUint(await readFile(path, 'utf8'));
  } catch (error) {
    failed.push({ what: path, error });
    return undefined;
  }
}

/** Maps `items` through `fn` with at most `limit` calls in flight; results keep the input order. */
async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}
