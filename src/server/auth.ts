/**
 * Kubernetes authentication and authorization of a scrape, as kube-rbac-proxy and controller-runtime's
 * secure metrics serving do it: the bearer token goes to TokenReview (authentication.k8s.io/v1), the
 * user it names to SubjectAccessReview (authorization.k8s.io/v1) for `get` on the non-resource URL
 * (/metrics). Answers are cached by the token's SHA-256 (never the token itself), allowed ones longer
 * than refused ones, in a map of bounded size (least recently used dropped first); concurrent scrapes
 * with one token share one review.
 * An API server that cannot answer is not cached: that scrape fails with 503 and the next one asks again.
 * At most `maxReviewsInFlight` reviews run at once: a flood of distinct tokens (each a cache miss) gets
 * 429 beyond that instead of queueing work on the API server, while cached scrapers keep their answer.
 */
import { createHash } from 'node:crypto';
import type { RestClient } from '../k8s/index.js';
import type { Logger } from '../log/index.js';

export type AuthDecision =
  | { readonly outcome: 'allowed'; readonly user: string }
  | { readonly outcome: 'unauthenticated'; readonly reason: string }
  | { readonly outcome: 'forbidden'; readonly user: string; readonly reason: string }
  | { readonly outcome: 'unavailable'; readonly reason: string }
  | { readonly outcome: 'throttled'; readonly reason: string };

export interface RequestAuthorizer {
  /** Decides for the Authorization header of a request to `path`. */
  authorize(authorization: string | undefined, path: string): Promise<AuthDecision>;
}

export interface KubeAuthorizerOptions {
  readonly client: RestClient;
  readonly log: Logger;
  readonly allowedTtlMs: number;
  readonly deniedTtlMs: number;
  readonly cacheSize: number;
  /** TokenReview audiences; empty: the API server's own. */
  readonly audiences?: readonly string[];
  readonly now?: () => number;
  readonly timeoutMs?: number;
  /** Reviews running at once before further cache misses are refused with 'throttled' (default 16). */
  readonly maxReviewsInFlight?: number;
}

/** Concurrent TokenReview+SubjectAccessReview pairs before cache misses are throttled. */
export const DEFAULT_MAX_REVIEWS_IN_FLIGHT = 16;

interface TokenReviewStatus {
  authenticated?: boolean;
  user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
  error?: string;
}

interface SubjectAccessReviewStatus {
  allowed?: boolean;
  denied?: boolean;
  reason?: string;
  evaluationError?: string;
}

/** The token of `Authorization: Bearer <token>`, or undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  const m = /^Bearer[ \t]+([^\s]+)[ \t]*$/i.exec(header ?? '');
  return m?.[1];
}

export function createKubeAuthorizer(o: KubeAuthorizerOptions): RequestAuthorizer & { cacheEntries(): number; reviews(): number; throttled(): number } {
  const now = o.now ?? Date.now;
  const cache = new Map<string, { expires: number; decision: Promise<AuthDecision> }>();
  const maxInFlight = o.maxReviewsInFlight ?? DEFAULT_MAX_REVIEWS_IN_FLIGHT;
  let reviews = 0;
  let inFlight = 0;
  let throttled = 0;

  async function review(token: string, path: string): Promise<AuthDecision> {
    reviews++;
    const tr = await o.client.request<{ status?: TokenReviewStatus }>('POST', '/apis/authentication.k8s.io/v1/tokenreviews', {
      timeoutMs: o.timeoutMs ?? 10_000,
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token, ...(o.audiences?.length ? { audiences: o.audiences } : {}) } },
    });
    const status = tr.status ?? {};
    if (!status.authenticated || !status.user?.username) return { outcome: 'unauthenticated', reason: status.error || 'token not authenticated' };
    const user = status.user.username;
    const sar = await o.client.request<{ status?: SubjectAccessReviewStatus }>('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
      timeoutMs: o.timeoutMs ?? 10_000,
      body: {
        apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview',
        spec: {
          user, ...(status.user.uid ? { uid: status.user.uid } : {}), groups: status.user.groups ?? [], ...(status.user.extra ? { extra: status.user.extra } : {}),
          nonResourceAttributes: { path, verb: 'get' },
        },
      },
    });
    if (sar.status?.allowed) return { outcome: 'allowed', user };
    return { outcome: 'forbidden', user, reason: sar.status?.reason || sar.status?.evaluationError || 'no RBAC rule allows it' };
  }

  return {
    async authorize(header, path) {
      const token = bearerToken(header);
      if (token === undefined) return { outcome: 'unauthenticated', reason: header === undefined ? 'no bearer token' : 'Authorization is not a bearer token' };
      const key = createHash('sha256').update(path).update('\0').update(token).digest('base64');
      const t = now();
      const hit = cache.get(key);
      if (hit && hit.expires > t) {
        // Least recently used goes first: a scraper's entry is not pushed out by a burst of bad tokens before older ones.
        cache.delete(key);
        cache.set(key, hit);
        return hit.decision;
      }
      if (hit) cache.delete(key);
      if (inFlight >= maxInFlight) {
        if (throttled++ % 1000 === 0) o.log.warn('too many metrics tokens to review at once; refusing the excess with 429', { maxReviewsInFlight: maxInFlight, throttledSoFar: throttled });
        return { outcome: 'throttled', reason: `${inFlight} token reviews already in flight` };
      }
      inFlight++;
      const decision = review(token, path).catch((e: unknown): AuthDecision => {
        cache.delete(key);
        o.log.warn('cannot review a metrics token with the API server', { error: (e as Error).message });
        return { outcome: 'unavailable', reason: 'the API server could not review the token' };
      }).finally(() => { inFlight--; });
      // In flight: shared by concurrent scrapes until it settles, then kept for its TTL.
      const entry = { expires: Number.POSITIVE_INFINITY, decision };
      cache.set(key, entry);
      while (cache.size > o.cacheSize) cache.delete(cache.keys().next().value as string);
      const d = await decision;
      if (d.outcome !== 'unavailable' && cache.get(key) === entry) entry.expires = now() + (d.outcome === 'allowed' ? o.allowedTtlMs : o.deniedTtlMs);
      return d;
    },
    cacheEntries: () => cache.size,
    reviews: () => reviews,
    throttled: () => throttled,
  };
}
