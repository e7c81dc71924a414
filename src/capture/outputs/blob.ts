/**
 * Azure Blob output: the tarball uploaded as a block blob named after it into the container of the
 * SAS URL (the Secret's `blob-upload-url`), with @azure/storage-blob's retry policy. The SDK is
 * imported only here, when a capture has a blob output. The SAS token never reaches a log or a
 * message: errors are redacted.
 */
import { BLOB_CAPTURE_METADATA } from '../naming.js';
import { CaptureError, redactMessage, redactUrl, type Output } from './output.js';

export interface BlobOptions {
  /** Written as the blob's metadata so that a download by name takes only this capture's blobs. */
  readonly captureName?: string;
  readonly maxTries?: number;
  readonly tryTimeoutMs?: number;
}

/** Checks the SAS URL's shape without saying what it holds. */
export function checkSasUrl(url: string, source: string): URL {
  let u: URL;
  try {
    u = new URL(url.trim());
  } catch {
    throw new CaptureError(`the blob upload URL in ${source} is not a URL`);
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new CaptureError(`the blob upload URL in ${source} is not http(s) (${u.protocol})`);
  if (!u.searchParams.get('sig')) throw new CaptureError(`the blob upload URL in ${source} (${redactUrl(url)}) has no SAS signature (sig=)`);
  return u;
}

export function blobOutput(sasUrl: string, source: string, opts: BlobOptions = {}): Output {
  const u = checkSasUrl(sasUrl, source);
  return {
    name: 'blob',
    async deliver(file, name) {
      const { ContainerClient, AnonymousCredential, newPipeline, StorageRetryPolicyType } = await import('@azure/storage-blob');
      const pipeline = newPipeline(new AnonymousCredential(), {
        retryOptions: { maxTries: opts.maxTries ?? 4, tryTimeoutInMs: opts.tryTimeoutMs ?? 120_000, retryDelayInMs: 1000, retryPolicyType: StorageRetryPolicyType.EXPONENTIAL },
      });
      const container = new ContainerClient(u.toString(), pipeline);
      const blob = container.getBlockBlobClient(name);
      try {
        await blob.uploadFile(file, { blobHTTPHeaders: { blobContentType: 'application/gzip' }, ...(opts.captureName ? { metadata: { [BLOB_CAPTURE_METADATA]: opts.captureName } } : {}) });
      } catch (e) {
        const err = e as { statusCode?: number; code?: string; message?: string };
        const why = redactMessage(`${err.statusCode ? `HTTP ${err.statusCode} ` : ''}${err.code ?? ''} ${(err.message ?? String(e)).split('\n')[0]}`.trim(), [u.search]);
        throw new CaptureError(`blob upload to ${redactUrl(blob.url)} failed: ${why}`);
      }
      return redactUrl(blob.url);
    },
  };
}
