/**
 * `kubectl-retina capture download --blob-url` against Azurite (the real Azure Storage emulator,
 * npm `azurite`, started here on a free port, in memory): the capture's tarballs come down
 * byte-identical and verified, other captures' blobs are left alone, a wrong manifest digest fails the
 * command, and a bad SAS gives a clear 403 without the SAS in the message.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BlobServiceClient, ContainerSASPermissions, StorageSharedKeyCredential, generateBlobSASQueryParameters } from '@azure/storage-blob';
import { runDownload } from '../../src/cli/capture/download.js';
import { captureBaseName } from '../../src/capture/naming.js';
import { blobOutput } from '../../src/capture/outputs/blob.js';
import { Sink, writeCaptureTarball } from './fixtures.js';
import { AZURITE_ACCOUNT, AZURITE_KEY, startAzurite, type Server } from './servers.js';

const AT = new Date(Date.UTC(2026, 10, 23, 18, 30, 0));

describe('capture download from Azure Blob (Azurite)', { timeout: 120_000 }, () => {
  let azurite: Server | undefined;
  let dir = '';
  let sasUrl = '';
  const blobs = new Map<string, Buffer>();

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rt-cd-blob-'));
    azurite = await startAzurite();
    const cred = new StorageSharedKeyCredential(AZURITE_ACCOUNT, AZURITE_KEY);
    const endpoint = azurite.endpoint;
    const container = new BlobServiceClient(endpoint, cred).getContainerClient('retina-capture');
    await container.create();
    // What the capture workload uploads (its blob output, which tags each blob with its capture), and
    // one untagged blob as Retina's workload leaves them. `cap-blob-x-node-1-…` also starts with
    // `cap-blob-`: only the tag tells it is not capture `cap-blob`'s.
    const writeSas = generateBlobSASQueryParameters({ containerName: 'retina-capture', permissions: ContainerSASPermissions.parse('cw'), expiresOn: new Date(Date.now() + 3600_000) }, cred).toString();
    for (const [capture, node, wrong, tagged] of [['cap-blob', 'node-1', false, true], ['cap-blob', 'node-2', false, false], ['cap-blob-x', 'node-1', false, true], ['cap-bad', 'node-1', true, true]] as const) {
      const base = captureBaseName(capture, node, AT);
      const file = join(dir, 'src', `${base}.tar.gz`);
      await writeCaptureTarball(file, base, { pcapBytes: 256 * 1024, wrongDigest: wrong });
      blobs.set(`${base}.tar.gz`, readFileSync(file));
      if (tagged) await blobOutput(`${endpoint}/retina-capture?${writeSas}`, 'test', { captureName: capture }).deliver(file, `${base}.tar.gz`);
      else await container.getBlockBlobClient(`${base}.tar.gz`).uploadData(readFileSync(file));
    }
    const sas = generateBlobSASQueryParameters({ containerName: 'retina-capture', permissions: ContainerSASPermissions.parse('rl'), expiresOn: new Date(Date.now() + 3600_000) }, cred).toString();
    sasUrl = `${endpoint}/retina-capture?${sas}`;
  });

  after(async () => {
    await azurite?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  async function download(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    const stdout = new Sink();
    const stderr = new Sink();
    const code = await runDownload(args, { stdout, stderr, handleSignals: false, env: {} });
    return { code, stdout: stdout.text, stderr: stderr.text };
  }

  it("downloads the capture's blobs byte-identical and verified", async () => {
    const out = join(dir, 'out');
    // `cap-blob-x` only: the blobs named `<capture>-…`
    const r = await download(['--blob-url', sasUrl, '--name', 'cap-blob-x', '-o', out]);
    assert.equal(r.code, 0, r.stderr);
    const want = [captureBaseName('cap-blob-x', 'node-1', AT) + '.tar.gz'];
    assert.deepEqual(readdirSync(out), want);
    const r2 = await download(['--blob-url', sasUrl, '--name', 'cap-blob', '-o', join(dir, 'out2')]);
    assert.equal(r2.code, 0, r2.stderr);
    const files = readdirSync(join(dir, 'out2')).sort();
    // Not cap-blob-x's blob, although its name starts with `cap-blob-`; the untagged one is kept.
    assert.deepEqual(files, ['node-1', 'node-2'].map((n) => captureBaseName('cap-blob', n, AT) + '.tar.gz'));
    for (const f of files) assert.ok(readFileSync(join(dir, 'out2', f)).equals(blobs.get(f) ?? Buffer.alloc(0)), `${f} differs`);
    assert.equal((r2.stderr.match(/sha256 of 1 file\(s\) match/g) ?? []).length, files.length, r2.stderr);
    assert.doesNotMatch(r2.stderr + r2.stdout, /sig=/, 'the SAS reached the output');
  });

  it('a wrong manifest digest fails the command', async () => {
    const r = await download(['--blob-url', sasUrl, '--name', 'cap-bad', '-o', join(dir, 'out3')]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /checksum verification failed: cap-bad-node-1-20261123183000UTC\/cap-bad-node-1-20261123183000UTC\.pcap: sha256/);
  });

  it('a bad SAS or an unknown capture is a clear error, with the SAS redacted', async () => {
    const tampered = sasUrl.replace(/sig=[^&]+/, 'sig=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA%3D');
    const r = await download(['--blob-url', tampered, '--name', 'cap-blob', '-o', join(dir, 'out4')]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /403 Forbidden .*the SAS is wrong, expired or lacks read\/list permission/);
    assert.doesNotMatch(r.stderr + r.stdout, /sig=/);
    const none = await download(['--blob-url', sasUrl, '--name', 'cap-nothing', '-o', join(dir, 'out5')]);
    assert.equal(none.code, 1);
    assert.match(none.stderr, /no capture tarballs starting with cap-nothing- in http:\/\/127\.0\.0\.1:\d+\/devstoreaccount1\/retina-capture\?<SAS redacted>/);
  });
});
