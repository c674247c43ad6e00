/**
 * Whether the proxy's OWN identity may use legacy impersonation (the `impersonate` verb on core
 * `users`) for a username, asked with `SelfSubjectAccessReview` (every authenticated user may
 * create one). `upstream-credentials.ts` uses the answer to choose, per client, the one
 * impersonation form whose result the apiserver cannot vary (docs/design.md §4): the apiserver
 * remembers per requestor the mode that last succeeded and tries it first, so a form that two
 * modes accept with different results would make one client's answer depend on another's.
 *
 * First the question for every user (no name), then, if that is denied, for the one username
 * (RBAC may name users). Answers are cached for `ttlMs`, allowed and denied alike: the proxy's
 * own RBAC changes rarely, and a node's kubelet asks every few seconds.
 */
import { LRUCache } from 'lru-cache';
import { type Clock, realClock } from '../util/clock.ts';
import { createReview, type ReviewUpstream } from './review-client.ts';

/** The SelfSubjectAccessReview path. */
export const SELF_SUBJECT_ACCESS_REVIEW_PATH = '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews';

/** How long the proxy keeps an answer about its own impersonation rights (ms). */
export const IMPERSONATION_RIGHTS_TTL_MS = 60_000;

/** Options of {@link LegacyImpersonationRights}. Durations in ms. */
export interface LegacyImpersonationRightsOptions {
  upstream: ReviewUpstream;
  /** How long an answer is kept (allowed and denied). */
  ttlMs: number;
  /** Max cached answers (default 10 000). */
  max?: number;
  clock?: Clock;
}

/** What {@link upstreamCredentials} asks about the proxy's rights (a fake in unit tests). */
export interface ImpersonationRights {
  /**
   * Whether the proxy may impersonate `username` with the legacy `impersonate` verb.
   * @throws when the apiserver could not be asked (the caller fails the request).
   */
  mayLegacyImpersonateUser(username: string): Promise<boolean>;
}

/** The proxy's legacy impersonation rights, by SelfSubjectAccessReview, cached. */
export class LegacyImpersonationRights implements ImpersonationRights {
  readonly #o: LegacyImpersonationRightsOptions;
  readonly #cache: LRUCache<string, boolean>;
  readonly #pending = new Map<string, Promise<boolean>>();

  constructor(o: LegacyImpersonationRightsOptions) {
    this.#o = o;
    const clock = o.clock ?? realClock;
    this.#cache = new LRUCache({
      max: o.max ?? 10_000,
      ttl: Math.max(o.ttlMs, 1),
      ttlResolution: 0,
      perf: { now: () => clock.now() },
    });
  }

  /** Whether the proxy may impersonate `username` with the legacy `impersonate` verb (any user, or this one). */
  async mayLegacyImpersonateUser(username: string): Promise<boolean> {
    return (await this.#allowed('')) || (username !== '' && (await this.#allowed(username)));
  }

  async #allowed(name: string): Promise<boolean> {
    const hit = this.#cache.get(name);
    if (hit !== undefined) return hit;
    let p = this.#pending.get(name);
    if (!p) {
      p = this.#review(name).finally(() => this.#pending.delete(name));
      this.#pending.set(name, p);
    }
    const allowed = await p;
    if (this.#o.ttlMs > 0) this.#cache.set(name, allowed);
    return allowed;
  }

  async #review(name: string): Promise<boolean> {
    const answer = await createReview<{ status?: { allowed?: boolean; denied?: boolean } }>(
      this.#o.upstream,
      SELF_SUBJECT_ACCESS_REVIEW_PATH,
      {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SelfSubjectAccessReview',
        spec: {
          resourceAttributes: {
            verb: 'impersonate',
            group: '',
            resource: 'users',
            ...(name ? { name } : {}),
          },
        },
      },
    );
    const st = answer.status ?? {};
    return st.allowed === true && st.denied !== true;
  }
}
