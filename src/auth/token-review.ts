/**
 * Bearer token authentication by `TokenReview` (`authentication.k8s.io/v1`), the delegated
 * authenticator of an extension apiserver (`k8s.io/apiserver/plugin/pkg/authenticator/token/webhook`
 * `AuthenticateToken`, wrapped by `token/cache/cached_token_authenticator.go`).
 *
 * - Answers (authenticated or not) are cached for `ttlMs` (`--authentication-token-webhook-cache-ttl`,
 *   delegated default 10 s for both); a failed review (network, 5xx, 403) is not cached.
 * - The cache key is the SHA-256 of the token: the token itself is never kept as a key nor logged.
 * - Concurrent reviews of one token share one request.
 * - Audiences: none are sent by default (an extension apiserver without `--api-audiences`), so the
 *   apiserver checks the token against its own API audiences. With `audiences`, they are sent and
 *   the answer's `status.audiences` (when present) must intersect them, else unauthenticated.
 * - Outage grace (`outageGraceMs`, `--authorization-outage-grace`, `outage-grace.ts`): when a
 *   review fails for want of an answer, an authenticated answer of the same token may be reused
 *   up to `outageGraceMs` after its TTL; never an unauthenticated one, never an unseen token.
 *   With `outage` (`review-outage.ts`), while an outage is remembered such an answer is reused at
 *   once and the review sent in the background, instead of waiting out the review's timeout.
 */
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { type Clock, realClock } from '../util/clock.ts';
import { GracedReview } from './graced-review.ts';
import { OutageGrace } from './outage-grace.ts';
import { createReview, type ReviewUpstream } from './review-client.ts';
import type { ReviewOutage } from './review-outage.ts';
import type { UserInfo } from './user-info.ts';

/**
 * The outcome of reviewing one token. `grace` (only when true): the review failed (outage) and
 * an earlier authenticated answer was reused within `--authorization-outage-grace`.
 */
export type TokenResult = Reviewed & { cached: boolean; grace?: true };

/** A TokenReview's answer: the user, or not authenticated with the apiserver's error text. */
type Reviewed = { authenticated: true; user: UserInfo } | { authenticated: false; error: string };

/** `authenticationv1.UserInfo` as answered. */
interface AnsweredUser {
  username?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

/** `authenticationv1.TokenReview` as answered. */
interface TokenReviewAnswer {
  status?: {
    authenticated?: boolean;
    user?: AnsweredUser;
    audiences?: string[];
    error?: string;
  };
}

/** Options of {@link TokenReviewAuthenticator}. */
export interface TokenReviewOptions {
  upstream: ReviewUpstream;
  /** Cache TTL (ms) of every answer; 0 disables the cache. */
  ttlMs: number;
  audiences?: string[];
  /** Max cached tokens (default 10 000). */
  max?: number;
  /** Called on every lookup: whether the cache answered. */
  onCacheLookup?: (hit: boolean) => void;
  /** How long after its TTL an authenticated answer may be reused while reviews fail (ms; default 0). */
  outageGraceMs?: number;
  /** Called for every answer reused within the outage grace, with the review's error. */
  onGrace?: (err: Error) => void;
  /**
   * The outage memory shared with the SubjectAccessReview client (with `outageGraceMs` only):
   * while it remembers an outage, an answer within its grace is reused without waiting for a review.
   */
  outage?: ReviewOutage;
  clock?: Clock;
}

/** The TokenReview path. */
export const TOKEN_REVIEW_PATH = '/apis/authentication.k8s.io/v1/tokenreviews';

/** Authenticates bearer tokens by TokenReview, with an lru-cache of the answers. */
export class TokenReviewAuthenticator {
  readonly #o: TokenReviewOptions;
  readonly #cache: LRUCache<string, Reviewed> | undefined;
  readonly #grace: OutageGrace<Reviewed>;
  readonly #reviews: GracedReview<Reviewed>;

  constructor(o: TokenReviewOptions) {
    this.#o = o;
    const clock = o.clock ?? realClock;
    this.#grace = new OutageGrace({ graceMs: o.outageGraceMs ?? 0, max: o.max ?? 10_000, clock });
    this.#reviews = new GracedReview({ grace: this.#grace, outage: o.outage, onGrace: o.onGrace });
    this.#cache =
      o.ttlMs > 0
        ? new LRUCache({
            max: o.max ?? 10_000,
            ttl: o.ttlMs,
            ttlResolution: 0,
            perf: { now: () => clock.now() },
          })
        : undefined;
  }

  /**
   * Reviews `token` (without the `Bearer ` prefix).
   * @throws the review's error (UpstreamError, network error) when the apiserver gave no answer
   *   and no authenticated answer of this token is within its outage grace.
   */
  async authenticate(token: string): Promise<TokenResult> {
    const key = createHash('sha256').update(token).digest('hex');
    const hit = this.#cache?.get(key);
    this.#o.onCacheLookup?.(hit !== undefined);
    if (hit) return { ...hit, cached: true };
    // During a remembered outage (review-outage.ts) or a failed review, an authenticated answer
    // within its grace is reused.
    const r = await this.#reviews.decide(
      key,
      () => this.#review(token),
      (v) => {
        this.#cache?.set(key, v);
        if (v.authenticated) this.#grace.allowed(key, v, this.#o.ttlMs);
        else this.#grace.denied(key);
      },
    );
    return r.grace ? { ...r.value, cached: true, grace: true } : { ...r.value, cached: false };
  }

  async #review(token: string): Promise<Reviewed> {
    const auds = this.#o.audiences ?? [];
    const answer = await createReview<TokenReviewAnswer>(this.#o.upstream, TOKEN_REVIEW_PATH, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenReview',
      spec: { token, ...(auds.length > 0 ? { audiences: auds } : {}) },
    });
    const st = answer.status ?? {};
    if (auds.length > 0 && st.audiences && st.audiences.length > 0) {
      if (!st.audiences.some((a) => auds.includes(a)))
        return { authenticated: false, error: 'token audiences do not match' };
    }
    if (st.authenticated !== true || !st.user?.username)
      return { authenticated: false, error: st.error ?? '' };
    return {
      authenticated: true,
      user: {
        username: st.user.username,
        uid: st.user.uid ?? '',
        groups: st.user.groups ?? [],
        extra: st.user.extra ?? {},
      },
    };
  }
}

/**
 * The proxy's own identity by `SelfSubjectReview` (`authentication.k8s.io/v1`, what
 * `kubectl auth whoami` sends).
 * @throws the review's error.
 */
export async function selfSubjectReview(upstream: ReviewUpstream): Promise<UserInfo> {
  const answer = await createReview<{ status?: { userInfo?: AnsweredUser } }>(
    upstream,
    '/apis/authentication.k8s.io/v1/selfsubjectreviews',
    { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
  );
  const u = answer.status?.userInfo ?? {};
  return { username: u.username ?? '', uid: u.uid ?? '', groups: u.groups ?? [], extra: u.extra ?? {} };
}
