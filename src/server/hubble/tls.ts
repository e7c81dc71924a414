/**
 * TLS of the agent's Hubble server, as Cilium's (hubble-tls-cert-file, hubble-tls-key-file,
 * hubble-tls-client-ca-files): the server's certificate and key, and with client CA files mutual TLS
 * (a client, Hubble Relay or the hubble CLI, must show a certificate one of those CAs signed). The
 * files are read at start (an unreadable or empty one fails the start with its path) and again every
 * `refreshMs`; a change (cert-manager or the Secret's kubelet update rotating them) is served to new
 * connections without a restart, as Cilium's certloader does. A file that cannot be read later keeps
 * the last good content and logs once per change of its error.
 *
 * Cilium names each agent for TLS `<node>.<cluster>.hubble-grpc.cilium.io` (dots in either become
 * hyphens) and Hubble Relay verifies that name, sent by the Peer service: `tlsServerName`.
 */
import * as grpc from '@grpc/grpc-js';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { Logger } from '../../log/index.js';
import { tlsServerName } from '../../flow/hubble/index.js';

export interface HubbleTlsFiles {
  readonly certFile: string;
  readonly keyFile: string;
  /** CA bundles that sign client certificates: mutual TLS when not empty. */
  readonly clientCAFiles: readonly string[];
}

export { tlsServerName };

type Listener<T> = (update: T | null) => void;
interface CaUpdate { caCertificate: Buffer }
interface IdentityUpdate { certificate: Buffer; privateKey: Buffer }

/** PEM files one after the other (a newline between, in case one lacks its last). */
const bundle = (parts: readonly Buffer[]): Buffer => Buffer.concat(parts.flatMap((b) => [b, Buffer.from('\n')]));

/** A grpc-js CertificateProvider over the files, re-read every `refreshMs`. */
class FilesProvider {
  #ca: CaUpdate | undefined;
  /** Each client CA file's last good content. */
  #caParts: Buffer[];
  #identity: IdentityUpdate;
  readonly #caListeners = new Set<Listener<CaUpdate>>();
  readonly #idListeners = new Set<Listener<IdentityUpdate>>();
  readonly #errors = new Map<string, string>();
  #timer: NodeJS.Timeout | undefined;

  constructor(private readonly files: HubbleTlsFiles, private readonly refreshMs: number, private readonly log: Logger) {
    const read = (path: string, what: string): Buffer => {
      let b: Buffer;
      try {
        b = readFileSync(path);
      } catch (e) {
        throw new Error(`hubble TLS: cannot read the ${what} ${path}: ${(e as Error).message}`);
      }
      if (b.length === 0) throw new Error(`hubble TLS: the ${what} ${path} is empty`);
      return b;
    };
    this.#identity = { certificate: read(files.certFile, 'certificate file (hubble.tls.certFile)'), privateKey: read(files.keyFile, 'key file (hubble.tls.keyFile)') };
    this.#caParts = files.clientCAFiles.map((f) => read(f, 'client CA file (hubble.tls.clientCAFiles)'));
    if (this.#caParts.length > 0) this.#ca = { caCertificate: bundle(this.#caParts) };
  }

  start(): void {
    this.#timer ??= setInterval(() => void this.#refresh(), this.refreshMs).unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  async #reread(path: string, last: Buffer): Promise<Buffer> {
    try {
      const b = await readFile(path);
      if (b.length === 0) throw new Error('the file is empty');
      if (this.#errors.delete(path)) this.log.info('hubble TLS file readable again', { path });
      return b;
    } catch (e) {
      const msg = (e as Error).message;
      if (this.#errors.get(path) !== msg) this.log.warn('hubble TLS file unreadable: keeping its last content', { path, error: msg });
      this.#errors.set(path, msg);
      return last;
    }
  }

  async #refresh(): Promise<void> {
    const id = this.#identity;
    const certificate = await this.#reread(this.files.certFile, id.certificate);
    const privateKey = await this.#reread(this.files.keyFile, id.privateKey);
    if (!certificate.equals(id.certificate) || !privateKey.equals(id.privateKey)) {
      this.#identity = { certificate, privateKey };
      this.log.info('hubble TLS certificate reloaded', { certFile: this.files.certFile });
      for (const l of this.#idListeners) l(this.#identity);
    }
    if (this.#caParts.length > 0) {
      const parts: Buffer[] = [];
      for (const [i, f] of this.files.clientCAFiles.entries()) parts.push(await this.#reread(f, this.#caParts[i] as Buffer));
      if (parts.some((b, i) => !b.equals(this.#caParts[i] as Buffer))) {
        this.#caParts = parts;
        this.#ca = { caCertificate: bundle(parts) };
        this.log.info('hubble TLS client CAs reloaded', { clientCAFiles: this.files.clientCAFiles });
        for (const l of this.#caListeners) l(this.#ca);
      }
    }
  }

  addCaCertificateListener(l: Listener<CaUpdate>): void {
    this.#caListeners.add(l);
    process.nextTick(l, this.#ca ?? { caCertificate: this.#identity.certificate });
  }
  removeCaCertificateListener(l: Listener<CaUpdate>): void {
    this.#caListeners.delete(l);
  }
  addIdentityCertificateListener(l: Listener<IdentityUpdate>): void {
    this.#idListeners.add(l);
    process.nextTick(l, this.#identity);
  }
  removeIdentityCertificateListener(l: Listener<IdentityUpdate>): void {
    this.#idListeners.delete(l);
  }
}

export interface HubbleServerCredentials extends Disposable {
  readonly credentials: grpc.ServerCredentials;
  /** True when clients must show a certificate (client CA files given). */
  readonly mutual: boolean;
}

/** Server credentials over the files (throws, naming the file, when one cannot be read at start). */
export function hubbleServerCredentials(files: HubbleTlsFiles, log: Logger, refreshMs = 60_000): HubbleServerCredentials {
  const provider = new FilesProvider(files, refreshMs, log);
  const mutual = files.clientCAFiles.length > 0;
  // One provider as both the CA and the identity provider: grpc-js 1.14's function hands its first two
  // arguments to the class constructor swapped, and this way the order cannot matter. Without client
  // CAs the "CA" it serves is the server's own certificate and no client certificate is required.
  const credentials = grpc.experimental.createCertificateProviderServerCredentials(provider, provider, mutual);
  provider.start();
  return { credentials, mutual, [Symbol.dispose]: () => provider.stop() };
}
