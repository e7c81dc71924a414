/**
 * Checks a downloaded capture tarball: it must read as a gzipped tar to the end, and when it holds a
 * `manifest.json` listing sha256 digests (the workload writes one beside the pcap), every listed file
 * must be present with that digest (and size, when given). Retina's tarballs have no manifest: then
 * only the archive's integrity is checked, and the result says so.
 */
import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import { list as tarList, type ReadEntry } from 'tar';

export interface VerifyResult {
  /** The manifest's path in the archive, when there is one. */
  readonly manifest?: string;
  /** Files whose sha256 matched the manifest. */
  readonly verified: readonly string[];
  /** Files in the archive (regular files only). */
  readonly entries: number;
}

export class ChecksumError extends Error {
  override readonly name = 'ChecksumError';
}

interface Expected {
  readonly name: string;
  readonly sha256: string;
  readonly size?: number;
}

const HEX64 = /^[0-9a-f]{64}$/;

/** The digests a manifest lists, in any of the shapes `files|pcaps: [{name|path|file, sha256, size?}]` or `sha256: {name: hex}`. */
export function manifestDigests(doc: unknown, where: string): Expected[] {
  if (typeof doc !== 'object' || doc === null) throw new ChecksumError(`${where}: manifest.json is not a JSON object`);
  const o = doc as Record<string, unknown>;
  const out: Expected[] = [];
  for (const key of ['files', 'pcaps', 'pcapFiles']) {
    const list = o[key];
    if (!Array.isArray(list)) continue;
    for (const [i, item] of list.entries()) {
      if (typeof item !== 'object' || item === null) continue;
      const it = item as Record<string, unknown>;
      const name = [it['name'], it['path'], it['file']].find((v): v is string => typeof v === 'string' && v !== '');
      const sha = typeof it['sha256'] === 'string' ? it['sha256'].toLowerCase() : undefined;
      if (sha === undefined) continue; // an entry without a digest (e.g. a metadata listing) has nothing to verify
      if (!name) throw new ChecksumError(`${where}: manifest.json ${key}[${i}] has a sha256 but no name`);
      if (!HEX64.test(sha)) throw new ChecksumError(`${where}: manifest.json ${key}[${i}].sha256 ${JSON.stringify(it['sha256'])} is not a hex sha256`);
      const size = typeof it['size'] === 'number' ? it['size'] : undefined;
      out.push(size === undefined ? { name, sha256: sha } : { name, sha256: sha, size });
    }
  }
  const map = o['sha256'];
  if (typeof map === 'object' && map !== null && !Array.isArray(map)) {
    for (const [name, v] of Object.entries(map as Record<string, unknown>)) {
      if (typeof v !== 'string' || !HEX64.test(v.toLowerCase())) throw new ChecksumError(`${where}: manifest.json sha256[${JSON.stringify(name)}] is not a hex sha256`);
      out.push({ name, sha256: v.toLowerCase() });
    }
  }
  return out;
}

const entryPath = (p: string): string => posix.normalize(p.replace(/^\.\//, '')).replace(/\/$/, '');

export async function verifyTarball(file: string, label = file): Promise<VerifyResult> {
  const files = new Map<string, { sha256: string; size: number }>();
  const manifests: { path: string; text: string }[] = [];
  const pending: Promise<void>[] = [];
  try {
    await tarList({
      file,
      strict: true,
      onReadEntry: (entry: ReadEntry) => {
        if (entry.type !== 'File' && entry.type !== 'OldFile' && entry.type !== 'ContiguousFile') {
          entry.resume();
          return;
        }
        const path = entryPath(entry.path);
        const isManifest = posix.basename(path) === 'manifest.json';
        const h = createHash('sha256');
        const chunks: Buffer[] = [];
        let size = 0;
        pending.push(
          new Promise<void>((resolve) => {
            entry.on('data', (c: Buffer) => {
              h.update(c);
              size += c.length;
              if (isManifest) chunks.push(c);
            });
            entry.on('end', () => {
              files.set(path, { sha256: h.digest('hex'), size });
              if (isManifest) manifests.push({ path, text: Buffer.concat(chunks).toString('utf8') });
              resolve();
            });
          }),
        );
      },
    });
    await Promise.all(pending);
  } catch (e) {
    throw new ChecksumError(`${label}: not a readable .tar.gz (${(e as Error).message}); the download is incomplete or corrupt`, { cause: e });
  }
  if (files.size === 0) throw new ChecksumError(`${label}: the archive holds no files`);
  // the capture folder's manifest (the shallowest one)
  const manifest = manifests.sort((a, b) => a.path.split('/').length - b.path.split('/').length)[0];
  if (!manifest) return { verified: [], entries: files.size };
  let doc: unknown;
  try {
    doc = JSON.parse(manifest.text);
  } catch (e) {
    throw new ChecksumError(`${label}: ${manifest.path} is not valid JSON (${(e as Error).message})`, { cause: e });
  }
  const expected = manifestDigests(doc, `${label}: ${manifest.path}`);
  const dir = posix.dirname(manifest.path);
  const verified: string[] = [];
  const problems: string[] = [];
  for (const exp of expected) {
    const candidates = [entryPath(posix.join(dir, exp.name)), entryPath(exp.name)];
    let path = candidates.find((c) => files.has(c));
    if (!path) {
      const byBase = [...files.keys()].filter((k) => posix.basename(k) === posix.basename(exp.name));
      if (byBase.length === 1) path = byBase[0];
    }
    const got = path ? files.get(path) : undefined;
    if (!path || !got) {
      problems.push(`${exp.name}: listed in the manifest but missing from the archive`);
      continue;
    }
    if (got.sha256 !== exp.sha256) problems.push(`${path}: sha256 ${got.sha256}, manifest says ${exp.sha256}`);
    else if (exp.size !== undefined && exp.size !== got.size) problems.push(`${path}: ${got.size} bytes, manifest says ${exp.size}`);
    else verified.push(path);
  }
  if (problems.length > 0) throw new ChecksumError(`${label}: checksum verification failed: ${problems.join('; ')}`);
  return { manifest: manifest.path, verified, entries: files.size };
}
