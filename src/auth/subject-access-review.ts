/**
 * Authorization of cached reads by `SubjectAccessReview` (`authorization.k8s.io/v1`), the
 * delegated authorizer of an extension apiserver (`k8s.io/apiserver/plugin/pkg/authorizer/webhook`
 * `WebhookAuthorizer.Authorize`): the spec carries user, uid, groups, extra and the resource
 * attributes (`request-attributes.ts`); the answer is cached under the JSON of the spec, allowed
 * ones for `authorizedTtlMs`, denied ones for `unauthorizedTtlMs`
 * (`--authorization-webhook-cache-authorized-ttl` / `-unauthorized-ttl`, delegated defaults 10 s).
 * A revoked RoleBinding therefore stops cached reads within the authorized TTL.
 * Attributes longer than the webhook's `maxControlledAttrCacheSize` (10 000 bytes) are not cached.
 * Outage grace (`outageGraceMs`, `--authorization-outage-grace`, `outage-grace.ts`): when a
 * review fails for want of an answer, an allowed decision of the same spec may be reused up to
 * `outageGraceMs` after its TTL; a denial never is, nor a spec never answered. With `outage`
 * (`review-outage.ts`), while an outage is remembered such a decision is reused at once and the
 * review sent in the background, instead of waiting out the review's timeout.
 */
import { LRUCache } from 'lru-cache';
import { type Clock, realClock } from '../util/clock.ts';
import { GracedReview } from './graced-review.ts';
import { OutageGrace } from './outage-grace.ts';
import type { AuthorizationAttributes } from './request-attributes.ts';
import { createReview, type ReviewUpstream } from './review-client.ts';
import type { ReviewOutage } from './review-outage.ts';
import type { UserInfo } from './user-info.ts';

/**
 * An authorization decision. `reason` is the authorizer's (e.g. the Node authorizer's), maybe "".
 * `grace` (only when true): the review failed (outage) and an earlier allowed decision was
 * reused within `--authorization-outage-grace`.
 */
export interface AuthorizationDecision {
  allowed: boolean;
  reason: string;
  cached: boolean;
  grace?: true;
}

/** Options of {@link SubjectAccessReviewAuthorizer}. Durations in ms. */
export interface SubjectAccessReviewOptions {
  upstream: ReviewUpstream;
  authorizedTtlMs: number;
  unauthorizedTtlMs: number;
  /** Max cached decisions (default 10 000). */
  max?: number;
  onCacheLookup?: (hit: boolean) => void;
  /** How long after its TTL an allowed decision may be reused while reviews fail (ms; default 0). */
  outageGraceMs?: number;
  /** Called for every decision reused within the outage grace, with the review's error. */
  onGrace?: (err: Error) => void;
  /**
   * The outage memory shared with the TokenReview client (with `outageGraceMs` only): while it
   * remembers an outage, a decision within its grace is reused without waiting for a review.
   */
  outage?: ReviewOutage;
  clock?: Clock;
}

/** The SubjectAccessReview path. */
export const SUBJECT_ACCESS_REVIEW_PATH = '/apis/authorization.k8s.io/v1/subjectaccessreviews';

/** `maxControlledAttrCacheSize` of webhook.go. */
const MAX_CONTROLLED_ATTR_CACHE_SIZE = 10_000;

/** Builds `authorizationv1.SubjectAccessReviewSpec` (the webhook's field order, empty fields omitted). */
export function subjectAccessReviewSpec(user: UserInfo, a: AuthorizationAttributes): Record<string, unknown> {
  return {
    resourceAttributes: a,
    user: user.username,
    ...(user.groups.length > 0 ? { groups: user.groups } : {}),
    ...(Object.keys(user.extra).length > 0 ? { extra: user.extra } : {}),
    ...(user.uid !== '' ? { uid: user.uid } : {}),
  };
}

/** Authorizes requests by SubjectAccessReview, with an lru-cache of the decisions. */
export class SubjectAccessReviewAuthorizer {
  readonly #o: SubjectAccessReviewOptions;
  readonly #cache: LRUCache<string, { allowed: boolean; reason: string }>;
  readonly #grace: OutageGrace<{ allowed: boolean; reason: string }>;
  readonly #reviews: GracedReview<{ allowed: boolean; reason: string }>;

  constructor(o: SubjectAccessReviewOptions) {
    this.#o = o;
    const clock = o.clock ?? realClock;
    this.#grace = new OutageGrace({ graceMs: o.outageGraceMs ?? 0, max: o.max ?? 10_000, clock });
    this.#reviews = new GracedReview({ grace: this.#grace, outage: o.outage, onGrace: o.onGrace });
    this.#cache = new LRUCache({
      max: o.max ?? 10_000,
      ttl: Math.max(o.authorizedTtlMs, o.unauthorizedTtlMs, 1),
      ttlResolution: 0,
      perf: { now: () => clock.now() },
    });
  }

  /**
   * Whether `user` may do `a`.
   * @throws the review's error (UpstreamError, network error) when no allowed decision of this
   *   spec is within its outage grace: the caller decides (never "allowed").
   */
  async authorize(user: UserInfo, a: AuthorizationAttributes): Promise<AuthorizationDecision> {
    const spec = subjectAccessReviewSpec(user, a);
    const key = JSON.stringify(spec);
    const hit = this.#cache.get(key);
    this.#o.onCacheLookup?.(hit !== undefined);
    if (hit) return { ...hit, cached: true };
    // During a remembered outage (review-outage.ts) or a failed review, an allowed decision
    // within its grace is reused.
    const cacheable = controlledSize(a) < MAX_CONTROLLED_ATTR_CACHE_SIZE;
    const r = await this.#reviews.decide(
      key,
      () => this.#review(spec),
      (d) => {
        const ttl = d.allowed ? this.#o.authorizedTtlMs : this.#o.unauthorizedTtlMs;
        if (ttl > 0 && cacheable) this.#cache.set(key, d, { ttl });
        if (!d.allowed) this.#grace.denied(key);
        else if (cacheable) this.#grace.allowed(key, d, ttl);
      },
    );
    return r.grace ? { ...r.value, cached: true, grace: true } : { ...r.value, cached: false };
  }

  async #review(spec: Record<string, unknown>): Promise<{ allowed: boolean; reason: string }> {
    const answer = await createReview<{ status?: { allowed?: boolean; denied?: boolean; reason?: string } }>(
      this.#o.upstream,
      SUBJECT_ACCESS_REVIEW_PATH,
      { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec },
    );
    const st = answer.status ?? {};
    // Denied wins over allowed (webhook.go: both set is a deny).
    return { allowed: st.allowed === true && st.denied !== true, reason: st.reason ?? '' };
  }
}

function controlledSize(a: AuthorizationAttributes): number {
  return (
    (a.namespace?.length ?? 0) +
    a.verb.length +
    a.group.length +
    a.version.length +
    a.resource.length +
    (a.subresource?.length ?? 0) +
    (a.name?.length ?? 0)
  );
}
