/**
 * One delegated review (TokenReview or SubjectAccessReview) as both clients send it: a single
 * request in flight per key, shared by concurrent callers; its outcome told to the remembered
 * outage (`review-outage.ts`); and, when it cannot be answered, the key's last allowed answer
 * reused within `--authorization-outage-grace` (`outage-grace.ts`). The caller keeps its own
 * decision cache and says, in `record`, what an answer does to it and to the grace.
 */
import type { OutageGrace } from './outage-grace.ts';
import type { ReviewOutage } from './review-outage.ts';

/** What {@link GracedReview.decide} needs besides the key. */
export interface GracedReviewOptions<V extends {}> {
  grace: OutageGrace<V>;
  outage: ReviewOutage | undefined;
  /** Told each time a grace answer is given, with the outage or failure that caused it. */
  onGrace: ((err: Error) => void) | undefined;
}

/** Reviews per key; `V` is the answer (a decision or an authenticated user). */
export class GracedReview<V extends {}> {
  readonly #o: GracedReviewOptions<V>;
  readonly #pending = new Map<string, Promise<V>>();

  constructor(o: GracedReviewOptions<V>) {
    this.#o = o;
  }

  /**
   * The answer for `key`: during a remembered outage an allowed answer within its grace at once
   * (`grace: true`; `review` then runs in the background as the outage's probe); else `review()`'s
   * answer (`grace: false`), or on its failure the grace answer. Throws `review`'s error when no
   * grace answer exists. `record` runs once per answer received, before callers see it.
   */
  async decide(
    key: string,
    review: () => Promise<V>,
    record: (v: V) => void,
  ): Promise<{ value: V; grace: boolean }> {
    const outage = this.#o.outage?.remembered();
    const early = outage && this.#o.grace.reuse(key, outage);
    if (outage && early) {
      this.#o.outage?.probe(() => this.#once(key, review, record));
      this.#o.onGrace?.(outage);
      return { value: early, grace: true };
    }
    try {
      return { value: await this.#once(key, review, record), grace: false };
    } catch (err) {
      const kept = this.#o.grace.reuse(key, err);
      if (!kept) throw err;
      this.#o.onGrace?.(err as Error);
      return { value: kept, grace: true };
    }
  }

  /** `review()`, shared by concurrent callers of `key`; its outcome told to the outage memory. */
  #once(key: string, review: () => Promise<V>, record: (v: V) => void): Promise<V> {
    let p = this.#pending.get(key);
    if (!p) {
      p = review()
        .then(
          (v) => {
            this.#o.outage?.settled();
            record(v);
            return v;
          },
          (err: unknown) => {
            this.#o.outage?.settled(err);
            throw err;
          },
        )
        .finally(() => this.#pending.delete(key));
      this.#pending.set(key, p);
    }
    return p;
  }
}
