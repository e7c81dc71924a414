/**
 * The downloaded tarball's checks on real archives (built with `tar`): the manifest's digests match,
 * a wrong digest, a missing listed file, a truncated or non-gzip file, and a tarball without manifest
 * (Retina's) that is only checked for completeness.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { create as tarCreate } from 'tar';
import { manifestDigests, verifyTarball } from '../../src/capture/client/verify.js';
import { writeCaptureTarball } from './fixtures.js';

describe('capture tarball verification', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rt-cd-verify-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('matches the manifest digests of a good tarball', async () => {
    const f = join(dir, 'good.tar.gz');
    await writeCaptureTarball(f, 'c-n-20260101000000UTC');
    const r = await verifyTarball(f);
    assert.equal(r.manifest, 'c-n-20260101000000UTC/manifest.json');
    assert.deepEqual(r.verified, ['c-n-20260101000000UTC/c-n-20260101000000UTC.pcap']);
  });

  it('fails on a wrong digest, a missing file, a truncated or a non-gzip file', async () => {
    const bad = join(dir, 'bad.tar.gz');
    await writeCaptureTarball(bad, 'c-n-20260101000000UTC', { wrongDigest: true });
    await assert.rejects(verifyTarball(bad), /checksum verification failed: c-n-20260101000000UTC\/c-n-20260101000000UTC\.pcap: sha256 [0-9a-f]{64}, manifest says [0-9a-f]{64}/);

    const stage = join(dir, 'stage');
    mkdirSync(join(stage, 'c'), { recursive: true });
    writeFileSync(join(stage, 'c', 'manifest.json'), JSON.stringify({ sha256: { 'c.pcap': createHash('sha256').update('x').digest('hex') } }));
    const missing = join(dir, 'missing.tar.gz');
    await tarCreate({ gzip: true, file: missing, cwd: stage }, ['c']);
    await assert.rejects(verifyTarball(missing), /c\.pcap: listed in the manifest but missing from the archive/);

    const good = join(dir, 'big.tar.gz');
    await writeCaptureTarball(good, 'c-n-20260101000000UTC', { pcapBytes: 512 * 1024 });
    const whole = readFileSync(good);
    const cut = join(dir, 'cut.tar.gz');
    writeFileSync(cut, whole.subarray(0, Math.floor(whole.length / 2)));
    await assert.rejects(verifyTarball(cut), /not a readable \.tar\.gz .*incomplete or corrupt/);
    const junk = join(dir, 'junk.tar.gz');
    writeFileSync(junk, 'this is not a tarball');
    await assert.rejects(verifyTarball(junk), /not a readable \.tar\.gz|holds no files/);
  });

  it("a tarball without manifest (Retina's) is checked for completeness only", async () => {
    const f = join(dir, 'retina.tar.gz');
    await writeCaptureTarball(f, 'c-n-20260101000000UTC', { noManifest: true });
    const r = await verifyTarball(f);
    assert.equal(r.manifest, undefined);
    assert.equal(r.entries, 3);
  });

  it('reads the manifest shapes and names bad digests', () => {
    const h = 'a'.repeat(64);
    assert.deepEqual(manifestDigests({ files: [{ path: 'x.pcap', sha256: h.toUpperCase(), size: 3 }, { name: 'metadata/' }] }, 'm'), [{ name: 'x.pcap', sha256: h, size: 3 }]);
    assert.deepEqual(manifestDigests({ pcaps: [{ file: 'y.pcap', sha256: h }] }, 'm'), [{ name: 'y.pcap', sha256: h }]);
    assert.throws(() => manifestDigests({ files: [{ name: 'x', sha256: 'zz' }] }, 'm'), /files\[0\]\.sha256 "zz" is not a hex sha256/);
    assert.throws(() => manifestDigests('x', 'm'), /not a JSON object/);
  });
});
