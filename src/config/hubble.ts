/**
 * Keys of the agent's Hubble service (Observer and Peer over gRPC; off by default). Names follow
 * Cilium's hubble-* flags where one exists (listen address `:4244`, a unix socket).
 */
import { ConfigError, ConfigErrors, InvalidValue } from './errors.js';
import type { LoadedValues } from './load.js';
import { boolKey, intKey, listKey, stringKey, type KeySpec } from './schema.js';

export interface HubbleConfig {
  readonly enabled: boolean;
  /** host and port to listen on; host '' means every address. */
  readonly listen: { readonly host: string; readonly port: number };
  /** Unix socket path, '' for none. */
  readonly socketPath: string;
  readonly maxFlows: number;
  /** Cilium's cluster-name: GetNamespaces' cluster and the agents' TLS names. */
  readonly clusterName: string;
  /** TLS on the TCP address (Cilium's hubble-tls-*), or undefined for plaintext. */
  readonly tls: { readonly certFile: string; readonly keyFile: string; readonly clientCAFiles: readonly string[] } | undefined;
  /** GetFlows reads hubble.export.static's files for the time before the ring (checked against it by agentConfig: historyProblems). */
  readonly historyFromExport: boolean;
}

/** `host:port`, `:port` or `[v6]:port`; port 0 takes any free port. */
export function parseListenAddress(s: string): { host: string; port: number } | undefined {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(s.trim());
  if (!m) return undefined;
  const port = Number(m[3]);
  if (port > 65535) return undefined;
  return { host: m[1] ?? m[2] ?? '', port };
}

/** A `host:port` key (`hubble.listenAddress`, `hubble.metrics.listenAddress`), every address by default. */
export function listenAddressKey(key: string, port: number, doc: string): KeySpec<{ host: string; port: number }> {
  return {
    key, default: { host: '', port }, defaultText: `:${port}`, doc,
    allowed: 'host:port, [ipv6]:port or :port, port from 0 to 65535',
    schema: { type: 'string', pattern: '^(\\[[0-9a-fA-F:.]+\\]|[^:\\[\\]]*):[0-9]{1,5}$' },
    parse(raw) {
      const a = typeof raw === 'string' || typeof raw === 'number' ? parseListenAddress(String(raw)) : undefined;
      if (!a) throw new InvalidValue();
      return a;
    },
  };
}

const listenKey = listenAddressKey('hubble.listenAddress', 4244, 'Ours: where the Hubble gRPC service (Observer, Peer) listens: host:port, or :port for every address.');

export function hubbleKeys() {
  return {
    hubbleEnabled: boolKey('hubble.enabled', false, 'Ours: serve Hubble\'s Observer and Peer gRPC services (flow logs for the hubble CLI and Hubble Relay).'),
    hubbleListenAddress: listenKey,
    hubbleSocketPath: stringKey('hubble.socketPath', '', 'Ours: also serve Hubble on this unix socket (\'\' for none), e.g. /var/run/retina/hubble.sock.'),
    hubbleMaxFlows: intKey('hubble.maxFlows', 4096, 'Ours: how many of the last flows the Hubble ring keeps.', { min: 1, max: 65_536 }),
    hubbleClusterName: stringKey('hubble.clusterName', 'default', 'Ours (Cilium\'s cluster-name): the cluster GetNamespaces names, and the middle of each agent\'s TLS name <node>.<cluster>.hubble-grpc.cilium.io.', { nonEmpty: true }),
    hubbleTlsEnabled: boolKey('hubble.tls.enabled', false, 'Ours (Cilium\'s hubble-disable-tls, inverted): serve Hubble over TLS on hubble.listenAddress (the unix socket stays plaintext).'),
    hubbleTlsCertFile: stringKey('hubble.tls.certFile', '', 'Ours (Cilium\'s hubble-tls-cert-file): PEM certificate (chain) of the Hubble server, for <node>.<cluster>.hubble-grpc.cilium.io. Re-read every minute.'),
    hubbleTlsKeyFile: stringKey('hubble.tls.keyFile', '', 'Ours (Cilium\'s hubble-tls-key-file): PEM private key of hubble.tls.certFile.'),
    hubbleHistoryFromExport: boolKey('hubble.history.fromExport', false, 'Ours: hubble observe --since/--until reach back before the ring into hubble.export.static\'s files (whole flows: no fieldMask, no aggregationInterval).'),
    hubbleTlsClientCAFiles: listKey('hubble.tls.clientCAFiles', [], 'Ours (Cilium\'s hubble-tls-client-ca-files): PEM CA bundles; when set, clients (Hubble Relay, the hubble CLI) must show a certificate they signed (mutual TLS).'),
  };
}

export type HubbleKeys = ReturnType<typeof hubbleKeys>;

/** Throws ConfigErrors naming the key when TLS is on without its certificate or key. */
export function hubbleConfig(keys: HubbleKeys, v: LoadedValues): HubbleConfig {
  const tlsOn = v.get(keys.hubbleTlsEnabled);
  const certFile = v.get(keys.hubbleTlsCertFile);
  const keyFile = v.get(keys.hubbleTlsKeyFile);
  if (tlsOn) {
    const missing = [keys.hubbleTlsCertFile, keys.hubbleTlsKeyFile].filter((k) => v.get(k) === '');
    if (missing.length > 0) {
      throw new ConfigErrors(missing.map((k) => new ConfigError(k.key, '', `a file path: ${keys.hubbleTlsEnabled.key} is true, and TLS needs both the certificate and the key`, v.sourceOf(k.key))));
    }
  }
  return Object.freeze({
    clusterName: v.get(keys.hubbleClusterName),
    tls: tlsOn ? Object.freeze({ certFile, keyFile, clientCAFiles: Object.freeze([...v.get(keys.hubbleTlsClientCAFiles)]) }) : undefined,
    enabled: v.get(keys.hubbleEnabled),
    listen: Object.freeze({ ...v.get(keys.hubbleListenAddress) }),
    socketPath: v.get(keys.hubbleSocketPath),
    maxFlows: v.get(keys.hubbleMaxFlows),
    historyFromExport: v.get(keys.hubbleHistoryFromExport),
  });
}

/**
 * hubble.history.fromExport against the static exporter: its files are the history, so it must run
 * and write whole flows, one per line. Each problem names the key to change.
 */
export function historyProblems(keys: HubbleKeys, v: LoadedValues, exportStatic: { readonly fieldMask: readonly string[]; readonly aggregationIntervalMs: number; readonly keys: { readonly fieldMask: string } } | undefined): ConfigError[] {
  if (!v.get(keys.hubbleHistoryFromExport)) return [];
  const key = keys.hubbleHistoryFromExport.key;
  if (exportStatic === undefined) {
    return [new ConfigError(key, true, 'false, or true with hubble.export.static.enabled: true (or hubble-export-file-path): the static exporter\'s files are the history', v.sourceOf(key))];
  }
  const out: ConfigError[] = [];
  if (exportStatic.fieldMask.length > 0) {
    out.push(new ConfigError(exportStatic.keys.fieldMask, exportStatic.fieldMask, `an empty list while ${key} is true: the history is read back as whole flows, and filters on a masked-out field would silently match nothing`, v.sourceOf(exportStatic.keys.fieldMask)));
  }
  if (exportStatic.aggregationIntervalMs > 0) {
    out.push(new ConfigError('hubble.export.static.aggregationInterval', `${exportStatic.aggregationIntervalMs}ms`, `0s while ${key} is true: aggregated records are not flows`, v.sourceOf('hubble.export.static.aggregationInterval')));
  }
  return out;
}
