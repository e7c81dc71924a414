/**
 * Keys of the agent's Hubble service (Observer and Peer over gRPC; off by default). Names follow
 * Cilium's hubble-* flags where one exists (listen address `:4244`, a unix socket).
 */
import { InvalidValue } from './errors.js';
import type { LoadedValues } from './load.js';
import { boolKey, intKey, stringKey, type KeySpec } from './schema.js';

export interface HubbleConfig {
  readonly enabled: boolean;
  /** host and port to listen on; host '' means every address. */
  readonly listen: { readonly host: string; readonly port: number };
  /** Unix socket path, '' for none. */
  readonly socketPath: string;
  readonly maxFlows: number;
}

/** `host:port`, `:port` or `[v6]:port`; port 0 takes any free port. */
export function parseListenAddress(s: string): { host: string; port: number } | undefined {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(s.trim());
  if (!m) return undefined;
  const port = Number(m[3]);
  if (port > 65535) return undefined;
  return { host: m[1] ?? m[2] ?? '', port };
}

const listenKey: KeySpec<{ host: string; port: number }> = {
  key: 'hubble.listenAddress', default: { host: '', port: 4244 }, defaultText: ':4244',
  doc: 'Ours: where the Hubble gRPC service (Observer, Peer) listens: host:port, or :port for every address.',
  allowed: 'host:port, [ipv6]:port or :port, port from 0 to 65535',
  schema: { type: 'string', pattern: '^(\\[[0-9a-fA-F:.]+\\]|[^:\\[\\]]*):[0-9]{1,5}$' },
  parse(raw) {
    const a = typeof raw === 'string' || typeof raw === 'number' ? parseListenAddress(String(raw)) : undefined;
    if (!a) throw new InvalidValue();
    return a;
  },
};

export function hubbleKeys() {
  return {
    hubbleEnabled: boolKey('hubble.enabled', false, 'Ours: serve Hubble\'s Observer and Peer gRPC services (flow logs for the hubble CLI and Hubble Relay).'),
    hubbleListenAddress: listenKey,
    hubbleSocketPath: stringKey('hubble.socketPath', '', 'Ours: also serve Hubble on this unix socket (\'\' for none), e.g. /var/run/retina/hubble.sock.'),
    hubbleMaxFlows: intKey('hubble.maxFlows', 4096, 'Ours: how many of the last flows the Hubble ring keeps.', { min: 1, max: 65_536 }),
  };
}

export type HubbleKeys = ReturnType<typeof hubbleKeys>;

export function hubbleConfig(keys: HubbleKeys, v: LoadedValues): HubbleConfig {
  return Object.freeze({
    enabled: v.get(keys.hubbleEnabled),
    listen: Object.freeze({ ...v.get(keys.hubbleListenAddress) }),
    socketPath: v.get(keys.hubbleSocketPath),
    maxFlows: v.get(keys.hubbleMaxFlows),
  });
}
