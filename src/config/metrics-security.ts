/**
 * Keys of the metrics endpoint's protection, read by the agent and the operator alike: TLS from a
 * certificate and key file (reloaded when they change), and Kubernetes authentication (TokenReview)
 * and authorization (SubjectAccessReview on the non-resource URL /metrics). Both off by default, as
 * in Retina, whose /metrics is plain HTTP for anyone.
 */
import { ConfigError, ConfigErrors } from './errors.js';
import type { LoadedValues } from './load.js';
import { boolKey, durationKey, intKey, stringKey } from './schema.js';

export interface MetricsSecurityConfig {
  /** Both files, or undefined for plain HTTP. */
  readonly tls: { readonly certFile: string; readonly keyFile: string } | undefined;
  readonly auth: {
    readonly enabled: boolean;
    readonly allowedTtlMs: number;
    readonly deniedTtlMs: number;
    readonly cacheSize: number;
  };
}

export function metricsSecurityKeys() {
  return {
    metricsTlsCertFile: stringKey('metricsTLS.certFile', '', 'Ours: PEM certificate (chain) of the metrics server; with keyFile it serves HTTPS. Reloaded when the file changes.'),
    metricsTlsKeyFile: stringKey('metricsTLS.keyFile', '', 'Ours: PEM private key matching metricsTLS.certFile.'),
    metricsAuthEnabled: boolKey('metricsAuth.enabled', false, 'Ours: /metrics needs a bearer token that TokenReview accepts and whose user may `get` the non-resource URL /metrics (SubjectAccessReview).'),
    metricsAuthCacheTTL: durationKey('metricsAuth.cacheTTL', 60_000, 'Ours: how long an allowed token\'s review is reused.', { minMs: 0 }),
    metricsAuthDeniedCacheTTL: durationKey('metricsAuth.deniedCacheTTL', 10_000, 'Ours: how long a refused token\'s review is reused.', { minMs: 0 }),
    metricsAuthCacheSize: intKey('metricsAuth.cacheSize', 1024, 'Ours: most token reviews kept (oldest dropped first).', { min: 1, max: 1_000_000 }),
  };
}

export type MetricsSecurityKeys = ReturnType<typeof metricsSecurityKeys>;

/** Throws ConfigErrors naming the key when only one of the certificate and key files is set. */
export function metricsSecurityConfig(keys: MetricsSecurityKeys, v: LoadedValues): MetricsSecurityConfig {
  const certFile = v.get(keys.metricsTlsCertFile);
  const keyFile = v.get(keys.metricsTlsKeyFile);
  if ((certFile === '') !== (keyFile === '')) {
    const missing = certFile === '' ? keys.metricsTlsCertFile : keys.metricsTlsKeyFile;
    const other = certFile === '' ? keys.metricsTlsKeyFile : keys.metricsTlsCertFile;
    throw new ConfigErrors([new ConfigError(missing.key, '', `a file path: ${other.key} is set, and TLS needs both the certificate and the key`, v.sourceOf(missing.key))]);
  }
  return Object.freeze({
    tls: certFile === '' ? undefined : Object.freeze({ certFile, keyFile }),
    auth: Object.freeze({
      enabled: v.get(keys.metricsAuthEnabled),
      allowedTtlMs: v.get(keys.metricsAuthCacheTTL),
      deniedTtlMs: v.get(keys.metricsAuthDeniedCacheTTL),
      cacheSize: v.get(keys.metricsAuthCacheSize),
    }),
  });
}
