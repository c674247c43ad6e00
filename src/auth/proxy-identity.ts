/**
 * The simple (sidecar) mode's same-identity rule: a cached read is served to a client that sent
 * a credential only when that credential is of the SAME identity as the proxy's own. Identities
 * are compared, not token bytes: a projected service-account token rotates, and the client and
 * the proxy re-read the file at different moments.
 *
 * 1. The proxy's current and previous token (the last two distinct values its credential source
 *    returned): equal bytes need no API call.
 * 2. Otherwise a cached TokenReview of the client's token against the proxy's identity, learnt
 *    once by a SelfSubjectReview: the same username and uid are the same identity.
 * 3. A TokenReview that is forbidden (the sidecar RBAC does not grant it) or fails, or an
 *    unknown proxy identity: a different identity (the request goes upstream, never wrongly
 *    served as the proxy).
 */
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { Logger } from '../util/logger.ts';
import { bearerToken } from './bearer-token.ts';
import type { ReviewUpstream } from './review-client.ts';
import { selfSubjectReview, type TokenReviewAuthenticator } from './token-review.ts';
import type { UserInfo } from './user-info.ts';

/** Options of {@link ProxyIdentity}. */
export interface ProxyIdentityOptions {
  /** The proxy's own credentials (its `authorization()` is the proxy's current header). */
  upstream: ReviewUpstream;
  tokens: TokenReviewAuthenticator;
  /** How long a failed SelfSubjectReview is not retried (ms, default 10 000). */
  retryMs?: number;
  /**
   * How long a comparison of a client credential is kept (ms, default 10 000): a forbidden
   * TokenReview (never cached by the authenticator) must not be sent for every request.
   */
  ttlMs?: number;
  now?: () => number;
  log?: Logger;
}

/** The proxy's identity and the comparison of a client's credential with it. */
export class ProxyIdentity {
  readonly #o: ProxyIdentityOptions;
  /** The last two distinct `Authorization` values of the proxy (current first). */
  #seen: string[] = [];
  /** When the proxy's header was last read (ms): at most once a second (exec plugins are costly). */
  #readAt = -Infinity;
  #self: Promise<UserInfo | undefined> | undefined;
  #selfFailedAt = -Infinity;
  readonly #compared: LRUCache<string, boolean>;

  constructor(o: ProxyIdentityOptions) {
    this.#o = o;
    const now = o.now ?? Date.now;
    this.#compared = new LRUCache({
      max: 10_000,
      ttl: Math.max(o.ttlMs ?? 10_000, 1),
      ttlResolution: 0,
      perf: { now },
    });
  }

  /** Whether the client's `Authorization` header value is the proxy's identity. Never throws. */
  async sameAsAuthorization(authorization: string): Promise<boolean> {
    if (this.#seen.includes(authorization)) return true;
    const now = (this.#o.now ?? Date.now)();
    if (now - this.#readAt >= 1000) {
      this.#readAt = now;
      const current = await Promise.resolve(this.#o.upstream.authorization()).catch(() => undefined);
      if (current !== undefined && current !== this.#seen[0])
        this.#seen = [current, ...this.#seen].slice(0, 2);
      if (this.#seen.includes(authorization)) return true;
    }
    // The token as the apiserver's bearer authenticator takes it; none: not the proxy's identity
    // (the apiserver would see an anonymous request).
    const token = bearerToken(authorization);
    if (token === undefined) return false;
    const key = createHash('sha256').update(token).digest('hex');
    const known = this.#compared.get(key);
    if (known !== undefined) return known;
    let same: boolean;
    try {
      const r = await this.#o.tokens.authenticate(token);
      same = r.authenticated && (await this.sameAsUser(r.user));
    } catch (err) {
      this.#o.log?.debug({ err: (err as Error).message }, 'TokenReview failed: treated as another identity');
      same = false;
    }
    this.#compared.set(key, same);
    return same;
  }

  /** Whether `user` (e.g. a client certificate's) is the proxy's identity: same username and uid. */
  async sameAsUser(user: UserInfo): Promise<boolean> {
    const self = await this.identity();
    return self !== undefined && self.username === user.username && self.uid === user.uid;
  }

  /** The proxy's identity by SelfSubjectReview (kept once learnt), or undefined when unknown. */
  identity(): Promise<UserInfo | undefined> {
    const now = (this.#o.now ?? Date.now)();
    if (this.#self === undefined && now - this.#selfFailedAt >= (this.#o.retryMs ?? 10_000)) {
      this.#self = selfSubjectReview(this.#o.upstream).then(
        (u) => (u.username !== '' ? u : undefined),
        (err: unknown) => {
          this.#o.log?.debug({ err: (err as Error).message }, 'SelfSubjectReview failed');
          this.#selfFailedAt = (this.#o.now ?? Date.now)();
          this.#self = undefined;
          return undefined;
        },
      );
    }
    return this.#self ?? Promise.resolve(undefined);
  }
}
