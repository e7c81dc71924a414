/**
 * `kubectl-retina capture download --s3-bucket` against the S3 test server (gofakes3 with Signature
 * V4 auth, servers.ts, the same the workload's upload test uses): the capture's objects under `<s3-path>/<name>-` come down
 * byte-identical and verified with credentials from the environment; refused credentials are a clear
 * error that does not print the secret.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { runDownload } from '../../src/cli/capture/download.js';
import { captureBaseName } from '../../src/capture/naming.js';
import { s3Output } from '../../src/capture/outputs/s3.js';
import { Sink, writeCaptureTarball } from './fixtures.js';
import { S3_ACCESS_KEY, S3_SECRET_KEY, startS3Server, type Server } from './servers.js';

const AT = new Date(Date.UTC(2026, 10, 23, 17, 0, 0));

describe('capture download from S3 (gofakes3, Signature V4)', { timeout: 60_000 }, () => {
  let server: Server | undefined;
  let dir = '';
  let endpoint = '';
  const objects = new Map<string, Buffer>();

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rt-cd-s3-'));
    server = await startS3Server();
    endpoint = server.endpoint;
    const s3 = new S3Client({ region: 'us-east-1', endpoint, forcePathStyle: true, credentials: { accessKeyId: S3_ACCESS_KEY, secretAccessKey: S3_SECRET_KEY } });
    await s3.send(new CreateBucketCommand({ Bucket: 'captures' }));
    // Uploaded by the workload's S3 output (tagged with the capture), one untagged as Retina's. Capture
    // `cap-s3-x`'s object also starts with `cap-s3-`: only the tag tells it apart.
    for (const [capture, node, tagged] of [['cap-s3', 'n1', true], ['cap-s3', 'n2', false], ['cap-s3-x', 'n1', true]] as const) {
      const base = captureBaseName(capture, node, AT);
      const file = join(dir, 'src', `${base}.tar.gz`);
      await writeCaptureTarball(file, base, { pcapBytes: 128 * 1024 });
      const body = readFileSync(file);
      objects.set(`${base}.tar.gz`, body);
      if (tagged) await s3Output({ bucket: 'captures', region: 'us-east-1', endpoint, path: 'retina/captures' }, { accessKeyId: S3_ACCESS_KEY, secretAccessKey: S3_SECRET_KEY }, { captureName: capture }).deliver(file, `${base}.tar.gz`);
      else await s3.send(new PutObjectCommand({ Bucket: 'captures', Key: `retina/captures/${base}.tar.gz`, Body: body }));
    }
    s3.destroy();
  });

  after(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('downloads the capture objects byte-identical and verified, credentials from the environment', async () => {
    const stdout = new Sink();
    const stderr = new Sink();
    const out = join(dir, 'out');
    const code = await runDownload(['--s3-bucket', 'captures', '--s3-endpoint', endpoint, '--name', 'cap-s3', '-o', out], { stdout, stderr, handleSignals: false, env: { AWS_ACCESS_KEY_ID: S3_ACCESS_KEY, AWS_SECRET_ACCESS_KEY: S3_SECRET_KEY } });
    assert.equal(code, 0, stderr.text);
    const want = ['n1', 'n2'].map((n) => `${captureBaseName('cap-s3', n, AT)}.tar.gz`);
    assert.deepEqual(readdirSync(out).sort(), want);
    for (const f of want) assert.ok(readFileSync(join(out, f)).equals(objects.get(f) ?? Buffer.alloc(0)), `${f} differs`);
    assert.equal((stderr.text.match(/sha256 of 1 file\(s\) match/g) ?? []).length, 2, stderr.text);
  });

  it('refused credentials (an unknown key, or the right key with a wrong secret) are a clear error that does not print the secret', async () => {
    const stdout = new Sink();
    const stderr = new Sink();
    const secret = 'not-the-secret-5d1f';
    const code = await runDownload(['--s3-bucket', 'captures', '--s3-endpoint', endpoint, '--name', 'cap-s3', '-o', join(dir, 'out2'), '--s3-access-key-id', 'NOT-A-KEY', '--s3-secret-access-key', secret], { stdout, stderr, handleSignals: false, env: {} });
    assert.equal(code, 1);
    assert.match(stderr.text, /S3: cannot download from s3:\/\/captures\/retina\/captures\/cap-s3-: InvalidAccessKeyId 403: .*check the S3 credentials/);
    assert.doesNotMatch(stderr.text + stdout.text, new RegExp(secret));
    const stderr2 = new Sink();
    const code2 = await runDownload(['--s3-bucket', 'captures', '--s3-endpoint', endpoint, '--name', 'cap-s3', '-o', join(dir, 'out3'), '--s3-access-key-id', S3_ACCESS_KEY, '--s3-secret-access-key', secret], { stdout, stderr: stderr2, handleSignals: false, env: {} });
    assert.equal(code2, 1);
    assert.match(stderr2.text, /S3: cannot download from s3:\/\/captures\/retina\/captures\/cap-s3-: \w+ 403: .*check the S3 credentials/);
    assert.doesNotMatch(stderr2.text + stdout.text, new RegExp(secret));
  });
});
