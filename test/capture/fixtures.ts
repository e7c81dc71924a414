/**
 * Capture tarballs as the workload writes them (`<base>/` with the pcap, `metadata/`, `tcpdump.log`
 * and `manifest.json` listing the pcap's sha256), built with the `tar` library, for the download tests.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { create as tarCreate } from 'tar';

export interface TarballOptions {
  /** Size of the random pcap, bytes. */
  readonly pcapBytes?: number;
  /** The manifest lists a digest that is not the pcap's. */
  readonly wrongDigest?: boolean;
  /** No manifest.json at all (Retina's own tarballs). */
  readonly noManifest?: boolean;
}

export async function writeCaptureTarball(dest: string, base: string, o: TarballOptions = {}): Promise<void> {
  const stage = mkdtempSync(join(tmpdir(), 'rt-cd-tarball-'));
  try {
    const folder = join(stage, base);
    mkdirSync(join(folder, 'metadata'), { recursive: true });
    const pcap = randomBytes(o.pcapBytes ?? 64 * 1024);
    writeFileSync(join(folder, `${base}.pcap`), pcap);
    writeFileSync(join(folder, 'metadata', 'ip-resources.txt'), 'ip -d -j addr show\n[]\n');
    writeFileSync(join(folder, 'tcpdump.log'), 'listening on any\n');
    if (!o.noManifest) {
      const sha = createHash('sha256').update(o.wrongDigest ? Buffer.from('not the pcap') : pcap).digest('hex');
      writeFileSync(join(folder, 'manifest.json'), JSON.stringify({ capture: base, files: [{ name: `${base}.pcap`, size: pcap.length, sha256: sha }] }, null, 2));
    }
    mkdirSync(dirname(dest), { recursive: true });
    await tarCreate({ gzip: true, file: dest, cwd: stage, portable: true }, [base]);
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}

/** Collects what a command writes (stdout or stderr), as a string. */
export class Sink {
  text = '';
  readonly isTTY = false;
  write(s: string): boolean {
    this.text += s;
    return true;
  }
}
