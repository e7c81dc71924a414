/**
 * S3 output: the tarball uploaded to `<bucket>/<S3_PATH>/<tarball>` with @aws-sdk/lib-storage's
 * multipart Upload (parts of 8 MiB, retried by the client's standard retry strategy), path-style so
 * that S3-compatible servers work. The SDK is imported only here. The credentials come from the
 * Secret's files and never appear in a message.
 */
import { createReadStream } from 'node:fs';
import type { S3Target } from '../env.js';
import { S3_CAPTURE_METADATA } from '../naming.js';
import { CaptureError, redactMessage, type Output } from './output.js';

export interface S3Credentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

export interface S3Options {
  /** Written as the object's metadata so that a download by name takes only this capture's objects. */
  readonly captureName?: string;
  readonly maxAttempts?: number;
  readonly partSize?: number;
}

export function s3Key(target: S3Target, name: string): string {
  return target.path ? `${target.path}/${name}` : name;
}

export function s3Output(target: S3Target, creds: S3Credentials, opts: S3Options = {}): Output {
  return {
    name: 's3',
    async deliver(file, name) {
      const [{ S3Client }, { Upload }] = await Promise.all([import('@aws-sdk/client-s3'), import('@aws-sdk/lib-storage')]);
      const client = new S3Client({
        region: target.region, endpoint: target.endpoint, forcePathStyle: true, maxAttempts: opts.maxAttempts ?? 4,
        credentials: { accessKeyId: creds.accessKeyId, secretAccessKey: creds.secretAccessKey },
      });
      const key = s3Key(target, name);
      const where = `s3://${target.bucket}/${key}${target.endpoint ? ` at ${target.endpoint}` : ''}`;
      try {
        const up = new Upload({ client, params: { Bucket: target.bucket, Key: key, Body: createReadStream(file), ContentType: 'application/gzip', ...(opts.captureName ? { Metadata: { [S3_CAPTURE_METADATA]: opts.captureName } } : {}) }, partSize: opts.partSize ?? 8 << 20, queueSize: 2 });
        await up.done();
      } catch (e) {
        const err = e as { name?: string; message?: string; $metadata?: { httpStatusCode?: number } };
        const status = err.$metadata?.httpStatusCode;
        const why = redactMessage(`${status ? `HTTP ${status} ` : ''}${err.name ?? ''}: ${err.message ?? String(e)}`, [creds.secretAccessKey]);
        throw new CaptureError(`S3 upload to ${where} failed: ${why}`);
      } finally {
        client.destroy();
      }
      return where;
    },
  };
}
