/**
 * The outage policy of delegated decisions (`--authorization-outage-grace`, docs/design.md §4):
 * while TokenReview or SubjectAccessReview requests fail for want of an answer (connection
 * refused, reset, timeout, a 5xx), a decision that was **allowed** may be reused for at most
 * `graceMs` after its cache TTL ended. The apiserver has no such policy (its delegated
 * authenticator answers 401 and its authorizer an error as soon as a review fails:
 * `token/cache/cached_token_authenticator.go`, `authorizer/webhook/webhook.go`); the proxy adds it
 * opt-in so that cached reads survive an apiserver outage longer than the decision TTLs.
 *
 * - A denial (unauthenticated token, denied review) is never extended, and forgets an earlier
 *   allowed decision of the same key: the newest answer wins.
 * - A key never answered (a token never seen) has nothing to reuse: the failure stands.
 * - An answer of the apiserver (a 4xx such as 401/403) is not an outage: the failure stands.
 * - Bounded: at most `max` keys (least recently used dropped), each kept `ttl + graceMs` after
 *   its answer; keys are what the decision caches key by (a token's SHA-256, never the token).
 * - `graceMs` 0 keeps nothing (the default: today's behaviour).
 */
import { LRUCache } from 'lru-cache';
import { type Clock, realClock } from '../util/clock.ts';
import { UpstreamError } from '../util/errors.ts';

/**
 * Whether a review's failure is an outage (no usable answer from the apiserver): a network
 * error (connection refused, reset, TLS, undici's timeouts) or a 5xx answer. A 4xx answer
 * (401, 403, 429, …) and an unparsable 2xx body are not.
 */
export function isReviewOutage(err: unknown): boolean {
  if (err instanceof UpstreamError) return err.statusCode >= 500;
  if (err instanceof SyntaxError) return false;
  return err instanceof Error;
}

/** Options of {@link OutageGrace}. Durations in ms. */
export interface OutageGraceOptions {
  /** How long after its TTL an allowed decision may be reused while reviews fail; 0: never. */
  graceMs: number;
  /** Max keys kept (default 10 000, the decision caches' bound). */
  max?: number;
  clock?: Clock;
}

/** The allowed decisions that may outlive their TTL during an outage, by cache key. */
export class OutageGrace<V extends {}> {
  readonly graceMs: number;
  readonly #kept: LRUCache<string, V> | undefined;

  constructor(o: OutageGraceOptions) {
    this.graceMs = o.graceMs;
    const clock = o.clock ?? realClock;
    this.#kept =
      o.graceMs > 0
        ? new LRUCache({
            max: o.max ?? 10_000,
            ttl: o.graceMs,
            ttlResolution: 0,
            perf: { now: () => clock.now() },
          })
        : undefined;
  }

  /** An allowed answer, cached for `ttlMs`: reusable during an outage until `ttlMs + graceMs` from now. */
  allowed(key: string, value: V, ttlMs: number): void {
    this.#kept?.set(key, value, { ttl: Math.max(0, ttlMs) + this.graceMs });
  }

  /** A denial of `key`: an earlier allowed answer is no longer reusable. */
  denied(key: string): void {
    this.#kept?.delete(key);
  }

  /**
   * What a review of `key` that failed with `err` may reuse: the allowed answer still within its
   * grace when `err` is an outage ({@link isReviewOutage}), else undefined (the failure stands).
   */
  reuse(key: string, err: unknown): V | undefined {
    if (!this.#kept || !isReviewOutage(err)) return undefined;
    return this.#kept.get(key);
  }

  /** Keys kept (for tests and the bound). */
  get size(): number {
    return this.#kept?.size ?? 0;
  }
}
