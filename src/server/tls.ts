/**
 * The metrics server's certificate and key, read from files and reloaded when they change: a watch on
 * both files' directories (a Kubernetes Secret volume swaps a `..data` symlink, which a watch on the
 * file itself would miss) plus a periodic re-read as a fallback (network filesystems, missed events).
 * A new pair that does not load (half-written, a key that does not match the certificate) is logged
 * and the previous pair stays in service; the next change tries again.
 */
import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { X509Certificate } from 'node:crypto';
import { createSecureContext } from 'node:tls';
import { dirname } from 'node:path';
import type { Logger } from '../log/index.js';

export interface TlsFiles {
  readonly certFile: string;
  readonly keyFile: string;
}

export interface TlsPair {
  readonly cert: Buffer;
  readonly key: Buffer;
  /** The leaf certificate's subject and expiry, for logs. */
  readonly subject: string;
  readonly notAfter: string;
}

/** A certificate/key pair that cannot serve; the message names the file and the reason. */
export class TlsFilesError extends Error {
  override readonly name = 'TlsFilesError';
}

/** Reads and checks both files: PEM that parses, and a key that matches the certificate. */
export async function loadTlsPair(files: TlsFiles): Promise<TlsPair> {
  const read = async (what: string, path: string): Promise<Buffer> => {
    try {
      return await readFile(path);
    } catch (e) {
      throw new TlsFilesError(`cannot read the metrics TLS ${what} file ${path}: ${(e as Error).message}`);
    }
  };
  const [cert, key] = await Promise.all([read('certificate', files.certFile), read('key', files.keyFile)]);
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(cert);
  } catch (e) {
    throw new TlsFilesError(`the metrics TLS certificate file ${files.certFile} holds no PEM certificate: ${(e as Error).message}`);
  }
  try {
    createSecureContext({ cert, key });
  } catch (e) {
    throw new TlsFilesError(`the metrics TLS key file ${files.keyFile} does not serve with the certificate ${files.certFile}: ${(e as Error).message}`);
  }
  return { cert, key, subject: leaf.subject.replace(/\n/g, ', '), notAfter: new Date(leaf.validTo).toISOString() };
}

export interface TlsReloaderOptions {
  readonly files: TlsFiles;
  readonly current: TlsPair;
  readonly log: Logger;
  /** Called with each new pair that loads. */
  readonly apply: (pair: TlsPair) => void;
  /** Fallback re-read period (default 60 s). */
  readonly pollMs?: number;
  /** Quiet time after a change event before reading (files are often written in several steps). */
  readonly settleMs?: number;
}

export function startTlsReloader(o: TlsReloaderOptions): Disposable {
  let current = o.current;
  let lastError = '';
  let settle: NodeJS.Timeout | undefined;
  let running = false;
  let again = false;
  let closed = false;

  async function check(): Promise<void> {
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        let pair: TlsPair;
        try {
          pair = await loadTlsPair(o.files);
        } catch (e) {
          const message = (e as Error).message;
          if (message !== lastError && !closed) o.log.error('the new metrics TLS certificate/key cannot be used; still serving the previous one', { error: message, certFile: o.files.certFile, keyFile: o.files.keyFile });
          lastError = message;
          continue;
        }
        lastError = '';
        if (closed || (pair.cert.equals(current.cert) && pair.key.equals(current.key))) continue;
        o.apply(pair);
        current = pair;
        o.log.info('metrics TLS certificate reloaded', { certFile: o.files.certFile, subject: pair.subject, notAfter: pair.notAfter });
      } while (again && !closed);
    } finally {
      running = false;
    }
  }
  const soon = (): void => {
    if (closed) return;
    clearTimeout(settle);
    settle = setTimeout(() => void check(), o.settleMs ?? 200);
  };

  const watchers: FSWatcher[] = [];
  for (const dir of new Set([dirname(o.files.certFile), dirname(o.files.keyFile)])) {
    try {
      const w = watch(dir, { persistent: false }, soon);
      w.on('error', (e) => o.log.warn('watching the metrics TLS directory failed; relying on the periodic re-read', { dir, error: e.message }));
      watchers.push(w);
    } catch (e) {
      o.log.warn('cannot watch the metrics TLS directory; relying on the periodic re-read', { dir, error: (e as Error).message });
    }
  }
  const poll = setInterval(() => void check(), o.pollMs ?? 60_000);
  poll.unref();
  return {
    [Symbol.dispose]() {
      closed = true;
      clearTimeout(settle);
      clearInterval(poll);
      for (const w of watchers) w.close();
    },
  };
}
