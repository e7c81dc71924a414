/**
 * The capture's remote outputs against real servers: Azurite's blob service (container SAS URL, as a
 * `blob-upload-url` Secret file) and an S3 server (gofakes3 with Signature V4 auth, hack/s3; S3 multipart upload with the `s3-*` Secret files). One
 * capture is delivered to the PVC folder, the blob container and the S3 bucket, and the three copies
 * are read back byte for byte. Then a tampered SAS and wrong S3 keys: the run fails with a clear
 * message per output, the other output still gets its tarball, and no secret is in the logs or the
 * termination message.
 */
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ContainerClient, ContainerSASPermissions, StorageSharedKeyCredential, generateBlobSASQueryParameters } from '@azure/storage-blob';
import { CreateBucketCommand, GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { AZURITE_ACCOUNT, AZURITE_KEY, S3_ACCESS_KEY, S3_SECRET_KEY, freePort, startAzurite, startS3Server, type Server } from './servers.js';
import { extract, freshDir, runWorkload } from './workload-run.js';

const TS = '2026-03-04T05:06:07Z';
const TARBALL = 'outcap-node-o-20260304050607UTC.tar.gz';

async function sendUdp(port: number, count: number): Promise<void> {
  const s = dgram.createSocket('udp4');
  for (let i = 0; i < count; i++) await new Promise((r) => s.send(Buffer.alloc(32, 1), port, '127.0.0.1', r));
  s.close();
}

describe('capture outputs: blob (Azurite), S3 (gofakes3), PVC', { timeout: 240_000 }, () => {
  let azurite: Server;
  let s3server: Server;
  let sasUrl: string;
  let s3: S3Client;
  const container = 'captures';
  const bucket = 'retina-captures';

  before(async () => {
    // One after the other, so that after() stops whichever started when the other fails.
    azurite = await startAzurite();
    s3server = await startS3Server();
    const cred = new StorageSharedKeyCredential(AZURITE_ACCOUNT, AZURITE_KEY);
    await new ContainerClient(`${azurite.endpoint}/${container}`, cred).create();
    const sas = generateBlobSASQueryParameters({ containerName: container, permissions: ContainerSASPermissions.parse('rcw'), expiresOn: new Date(Date.now() + 3600_000) }, cred).toString();
    sasUrl = `${azurite.endpoint}/${container}?${sas}`;
    s3 = new S3Client({ endpoint: s3server.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: S3_ACCESS_KEY, secretAccessKey: S3_SECRET_KEY } });
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  });
  after(async () => {
    s3?.destroy();
    await Promise.all([azurite?.stop(), s3server?.stop()]);
  });

  function secrets(blobUrl: string, keyId: string, secret: string): string {
    const root = freshDir('cr-secrets-');
    mkdirSync(join(root, 'etc/blob-upload-secret'), { recursive: true });
    mkdirSync(join(root, 'etc/s3-upload-secret'), { recursive: true });
    writeFileSync(join(root, 'etc/blob-upload-secret/blob-upload-url'), `${blobUrl}\n`);
    writeFileSync(join(root, 'etc/s3-upload-secret/s3-access-key-id'), keyId);
    writeFileSync(join(root, 'etc/s3-upload-secret/s3-secret-access-key'), secret);
    return root;
  }

  async function capture(root: string, pvc: string): Promise<Awaited<ReturnType<typeof runWorkload>['done']>> {
    const port = await freePort();
    const run = runWorkload({
      CAPTURE_NAME: 'outcap', NODE_HOST_NAME: 'node-o', CAPTURE_START_TIMESTAMP: TS, CAPTURE_DURATION: '2s', INCLUDE_METADATA: 'false',
      CAPTURE_INTERFACES: 'lo', TCPDUMP_FILTER: `udp port ${port}`, PERSISTENT_VOLUME_CLAIM: pvc,
      S3_ENDPOINT: s3server.endpoint, S3_REGION: 'us-east-1', S3_BUCKET: bucket, S3_PATH: 'retina/captures', RETINA_CAPTURE_SECRETS_ROOT: root,
    });
    await run.capturing;
    await sendUdp(port, 5);
    return run.done;
  }

  it('delivers the same tarball to the PVC, the blob container and the S3 bucket', async () => {
    const pvc = freshDir('cr-pvc-');
    const r = await capture(secrets(sasUrl, S3_ACCESS_KEY, S3_SECRET_KEY), pvc);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(readdirSync(pvc), [TARBALL]);
    const local = readFileSync(join(pvc, TARBALL));
    assert.equal(extract(join(pvc, TARBALL)).manifest.packets, 5);
    const blob = await new ContainerClient(sasUrl).getBlockBlobClient(TARBALL).downloadToBuffer();
    assert.ok(blob.equals(local), 'the blob differs from the PVC copy');
    const obj = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: `retina/captures/${TARBALL}` }));
    assert.ok(Buffer.from(await obj.Body!.transformToByteArray()).equals(local), 'the S3 object differs from the PVC copy');
    const report = JSON.parse(r.stdout.trim()) as { deliveries: { output: string; location?: string }[] };
    assert.deepEqual(report.deliveries.map((d) => d.output), ['persistentVolumeClaim', 'blob', 's3']);
    assert.ok(!r.stderr.includes(new URL(sasUrl).searchParams.get('sig') as string), 'the SAS signature is in the logs');
    assert.ok(!r.stderr.includes(S3_SECRET_KEY), 'the S3 secret is in the logs');
  });

  it('a bad SAS and bad S3 keys fail clearly, without leaking them; the PVC still gets its copy', async () => {
    const pvc = freshDir('cr-pvc-');
    const u = new URL(sasUrl);
    const badSig = `${u.searchParams.get('sig')?.slice(0, -6)}AAAAA=`;
    u.searchParams.set('sig', badSig);
    const badSecret = 'not-the-secret-key-at-all-0123';
    const r = await capture(secrets(u.toString(), 'not-a-user', badSecret), pvc);
    assert.equal(r.code, 1, r.stderr);
    assert.deepEqual(readdirSync(pvc), [TARBALL]);
    assert.match(r.termination, new RegExp(`blob: blob upload to http://127\\.0\\.0\\.1:\\d+/devstoreaccount1/captures/${TARBALL.replaceAll('.', '\\.')}\\?<redacted> failed: HTTP 403 Authori[sz]ationFailure`));
    assert.match(r.termination, new RegExp(`s3: S3 upload to s3://${bucket}/retina/captures/${TARBALL.replaceAll('.', '\\.')} at http://127\\.0\\.0\\.1:\\d+ failed: HTTP 403 InvalidAccessKeyId`));
    for (const secret of [badSig, encodeURIComponent(badSig), badSecret]) {
      assert.ok(!r.stderr.includes(secret) && !r.stdout.includes(secret) && !r.termination.includes(secret), `a secret leaked: ${secret}`);
    }
  });

  it('refuses a blob URL without a SAS signature before capturing', async () => {
    const r = await runWorkload({ CAPTURE_NAME: 'outcap', NODE_HOST_NAME: 'node-o', RETINA_CAPTURE_SECRETS_ROOT: secrets(`${azurite.endpoint}/${container}`, 'a', 'b') }).done;
    assert.equal(r.code, 1);
    assert.match(r.termination, /the blob upload URL in .*blob-upload-url \(http:\/\/127\.0\.0\.1:\d+\/devstoreaccount1\/captures\) has no SAS signature/);
  });
});
