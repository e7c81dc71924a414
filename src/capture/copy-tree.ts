/**
 * Copies a pseudo-file tree (/proc/net, /proc/sys/net) into the metadata folder, bounded: at most
 * `maxFiles` files, `maxFileBytes` of each and `maxTotalBytes` in all; symlinks are not followed,
 * and a file that cannot be read (write-only sysctls, EIO, EPERM) is skipped and counted.
 */
import { mkdir, open, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface CopyLimits {
  readonly maxFiles: number;
  readonly maxFileBytes: number;
  readonly maxTotalBytes: number;
  readonly maxDepth: number;
}

export const PROC_LIMITS: CopyLimits = { maxFiles: 20_000, maxFileBytes: 1 << 20, maxTotalBytes: 32 << 20, maxDepth: 8 };

export interface CopyReport {
  files: number;
  bytes: number;
  skipped: number;
  truncated: boolean;
}

export async function copyTree(src: string, dst: string, limits: CopyLimits = PROC_LIMITS): Promise<CopyReport> {
  const report: CopyReport = { files: 0, bytes: 0, skipped: 0, truncated: false };
  const walk = async (from: string, to: string, depth: number): Promise<void> => {
    let entries;
    try {
      entries = await readdir(from, { withFileTypes: true });
    } catch {
      report.skipped++;
      return;
    }
    await mkdir(to, { recursive: true });
    for (const e of entries) {
      if (report.files >= limits.maxFiles || report.bytes >= limits.maxTotalBytes) {
        report.truncated = true;
        return;
      }
      const s = join(from, e.name);
      if (e.isDirectory()) {
        if (depth < limits.maxDepth) await walk(s, join(to, e.name), depth + 1);
        else report.truncated = true;
      } else if (e.isFile()) {
        const data = await readBounded(s, Math.min(limits.maxFileBytes, limits.maxTotalBytes - report.bytes));
        if (data === undefined) {
          report.skipped++;
          continue;
        }
        await writeFile(join(to, e.name), data);
        report.files++;
        report.bytes += data.length;
      }
    }
  };
  await walk(src, dst, 0);
  return report;
}

async function readBounded(path: string, max: number): Promise<Buffer | undefined> {
  let fh;
  try {
    fh = await open(path, 'r');
  } catch {
    return undefined;
  }
  try {
    const chunks: Buffer[] = [];
    let total = 0;
    while (total < max) {
      const b = Buffer.alloc(Math.min(65536, max - total));
      const { bytesRead } = await fh.read(b, 0, b.length, null);
      if (bytesRead === 0) break;
      chunks.push(b.subarray(0, bytesRead));
      total += bytesRead;
    }
    return Buffer.concat(chunks);
  } catch {
    return undefined;
  } finally {
    await fh.close();
  }
}
