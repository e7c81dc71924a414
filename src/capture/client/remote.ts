/**
 * Downloading capture tarballs from object storage: Azure Blob through a SAS URL (`--blob-url`, the
 * container's URL with a SAS that allows list and read) and S3 (`--s3-bucket` …). The official SDKs
 * are loaded (dynamic import) only when one of these is the source.
 */
import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { basename } from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { BLOB_CAPTURE_METADATA, S3_CAPTURE_METADATA } from '../naming.js';
import { DownloadError, type TransferReporter } from './transfer.js';

export interface RemoteOptions {
  /** Object names must start with this (the capture name), when given. */
  readonly prefix?: string;
  /**
   * The capture asked for: an object whose metadata names another capture is skipped (`web-2-…`
   * starts with `web-` too). Objects without that metadata (uploaded by Retina) are kept.
   */
  readonly captureName?: string;
  readonly dir: string;
  readonly progress: TransferReporter;
  readonly signal: AbortSignal;
}

/** Whether an object whose metadata says `tagged` (undefined: untagged) belongs to the capture asked for. */
function sameCapture(tagged: string | undefined, o: RemoteOptions): boolean {
  return o.captureName === undefined || tagged === undefined || tagged === o.captureName;
}

/** The SAS URL without its query (secrets never reach messages). */
export function redactSas(url: string): string {
  const i = url.indexOf('?');
  return i < 0 ? url : `${url.slice(0, i)}?<SAS redacted>`;
}

async function save(body: Readable, dest: string, label: string, size: number | undefined, o: RemoteOptions): Promise<void> {
  const progress = o.progress(label, size);
  let received = 0;
  const part = `${dest}.part`;
  try {
    await pipeline(
      body,
      new Transform({
        transform(chunk: Buffer, _e, cb): void {
          received += chunk.length;
          progress.add(chunk.length);
          cb(null, chunk);
        },
      }),
      createWriteStream(part, { mode: 0o600 }),
      { signal: o.signal },
    );
    progress.finish();
    if (size !== undefined && received !== size) throw new DownloadError(`${label}: received ${received} bytes, the object has ${size}; the transfer was cut short`);
    await rename(part, dest);
  } catch (e) {
    await rm(part, { force: true });
    throw e;
  }
}

/** Downloads every blob of the SAS URL's container whose name starts with the prefix; returns the paths. */
export async function downloadFromBlob(sasUrl: string, o: RemoteOptions): Promise<string[]> {
  let url: URL;
  try {
    url = new URL(sasUrl);
  } catch {
    throw new DownloadError(`--blob-url: not a URL (${redactSas(sasUrl)})`);
  }
  if (!url.search) throw new DownloadError(`--blob-url: ${redactSas(sasUrl)} has no SAS token (query string); give the container's SAS URL with read and list permissions`);
  const { ContainerClient } = await import('@azure/storage-blob');
  // The container is the path's first segment, or the second for path-style accounts (the emulator's
  // http://127.0.0.1:10000/<account>/<container>); a URL to one blob keeps only its container part.
  const segs = url.pathname.split('/').filter(Boolean);
  const pathStyle = /^[\d.]+$|^\[|^localhost$/.test(url.hostname);
  const keep = pathStyle ? 2 : 1;
  if (segs.length < keep) throw new DownloadError(`--blob-url: ${redactSas(sasUrl)} names no container`);
  const containerUrl = `${url.origin}/${segs.slice(0, keep).join('/')}${url.search}`;
  const container = new ContainerClient(containerUrl);
  const names: { name: string; size: number | undefined }[] = [];
  try {
    for await (const b of container.listBlobsFlat({ ...(o.prefix ? { prefix: o.prefix } : {}), includeMetadata: o.captureName !== undefined })) {
      if (!b.name.endsWith('.tar.gz') || !sameCapture(b.metadata?.[BLOB_CAPTURE_METADATA], o)) continue;
      names.push({ name: b.name, size: b.properties.contentLength });
    }
  } catch (e) {
    throw new DownloadError(`--blob-url: cannot list ${redactSas(containerUrl)}: ${blobMessage(e)}`, { cause: e });
  }
  if (names.length === 0) throw new DownloadError(`--blob-url: no capture tarballs${o.prefix ? ` starting with ${o.prefix}` : ''} in ${redactSas(containerUrl)}`);
  const out: string[] = [];
  for (const { name, size } of names) {
    const dest = `${o.dir}/${basename(name)}`;
    try {
      const r = await container.getBlobClient(name).download(0, undefined, { abortSignal: o.signal });
      if (!r.readableStreamBody) throw new Error('no body');
      await save(r.readableStreamBody as Readable, dest, name, size ?? r.contentLength, o);
    } catch (e) {
      if (e instanceof DownloadError) throw e;
      throw new DownloadError(`--blob-url: cannot download ${name}: ${blobMessage(e)}`, { cause: e });
    }
    out.push(dest);
  }
  return out;
}

function blobMessage(e: unknown): string {
  const o = e as { statusCode?: number; code?: string; message?: string };
  const first = (o.message ?? String(e)).split('\n')[0] ?? '';
  if (o.statusCode === 403) return `403 Forbidden (${o.code ?? 'AuthorizationFailure'}): the SAS is wrong, expired or lacks read/list permission`;
  return `${o.statusCode ? `${o.statusCode} ` : ''}${o.code ? `${o.code}: ` : ''}${redactSas(first)}`;
}

/** The bucket, the objects' folder in it, and the credentials (both or neither: then the SDK's own). */
export interface S3Source {
  readonly bucket: string;
  readonly region?: string;
  readonly endpoint?: string;
  readonly path: string;
  readonly accessKeyId?: string;
  readonly secretAccessKey?: string;
}

export interface S3Options extends RemoteOptions, S3Source {}

/** Downloads every object under `<path>/<prefix>` of the bucket; returns the paths. */
export async function downloadFromS3(o: S3Options): Promise<string[]> {
  const { S3Client, ListObjectsV2Command, GetObjectCommand, HeadObjectCommand } = await import('@aws-sdk/client-s3');
  if ((o.accessKeyId === undefined) !== (o.secretAccessKey === undefined)) {
    throw new DownloadError('S3 credentials: give both --s3-access-key-id and --s3-secret-access-key (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), or neither');
  }
  const client = new S3Client({
    region: o.region ?? 'us-east-1',
    ...(o.endpoint ? { endpoint: o.endpoint, forcePathStyle: true } : {}),
    ...(o.accessKeyId && o.secretAccessKey ? { credentials: { accessKeyId: o.accessKeyId, secretAccessKey: o.secretAccessKey } } : {}),
  });
  const base = o.path.replace(/^\/+|\/+$/g, '');
  const prefix = `${base ? base + '/' : ''}${o.prefix ?? ''}`;
  const where = `s3://${o.bucket}/${prefix}`;
  try {
    const keys: { key: string; size: number | undefined }[] = [];
    let token: string | undefined;
    do {
      const page = await client.send(new ListObjectsV2Command({ Bucket: o.bucket, Prefix: prefix, ContinuationToken: token }), { abortSignal: o.signal });
      for (const c of page.Contents ?? []) if (c.Key?.endsWith('.tar.gz')) keys.push({ key: c.Key, size: c.Size });
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    const mine = [];
    for (const k of keys) {
      // Listing does not return metadata: one HEAD per candidate (a capture has one per node).
      const tagged = o.captureName === undefined ? undefined : (await client.send(new HeadObjectCommand({ Bucket: o.bucket, Key: k.key }), { abortSignal: o.signal })).Metadata?.[S3_CAPTURE_METADATA];
      if (sameCapture(tagged, o)) mine.push(k);
    }
    if (mine.length === 0) throw new DownloadError(`S3: no capture tarballs under ${where}`);
    const out: string[] = [];
    for (const { key, size } of mine) {
      const r = await client.send(new GetObjectCommand({ Bucket: o.bucket, Key: key }), { abortSignal: o.signal });
      if (!r.Body) throw new DownloadError(`S3: ${key} has no body`);
      const dest = `${o.dir}/${basename(key)}`;
      await save(r.Body as Readable, dest, key, size ?? r.ContentLength, o);
      out.push(dest);
    }
    return out;
  } catch (e) {
    if (e instanceof DownloadError) throw e;
    const x = e as { name?: string; message?: string; $metadata?: { httpStatusCode?: number } };
    const code = x.$metadata?.httpStatusCode;
    const hint = code === 403 || x.name === 'InvalidAccessKeyId' || x.name === 'SignatureDoesNotMatch' ? ' (check the S3 credentials and the bucket policy)' : '';
    throw new DownloadError(`S3: cannot download from ${where}: ${x.name ?? 'error'}${code ? ` ${code}` : ''}: ${x.message ?? String(e)}${hint}`, { cause: e });
  } finally {
    client.destroy();
  }
}
