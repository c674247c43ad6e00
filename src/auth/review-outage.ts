/**
 * Remembering that the delegated reviews get no answer (docs/design.md §4, outage grace), so that
 * during an outage a read whose allowed decision is within `--authorization-outage-grace` is
 * answered at once instead of waiting out a review first. Without it, on a frozen apiserver
 * (SIGSTOP, a hung network path: no refused connection, no answer) every cached read whose
 * decisions had expired waited for the TokenReview's and then the SubjectAccessReview's 10 s
 * timeout (`review-client.ts`) before the grace applied: 21–31 s per read.
 *
 * - An outage is remembered when a review fails without any HTTP answer (a timeout, a refused or
 *   reset connection, a TLS failure), for {@link OUTAGE_MEMORY_MS} after that failure and for as
 *   long as a probe is in flight. Any HTTP answer (2xx, 4xx or 5xx) forgets it at once: the
 *   apiserver is answering.
 * - While it is remembered, a review that has an allowed answer within its grace is not sent:
 *   the caller reuses the answer at once ({@link ReviewOutageError}) and starts a **probe** — the
 *   review it skipped, sent in the background, at most one at a time for the whole process (the
 *   TokenReviews and SubjectAccessReviews share one memory: one apiserver answers both). The
 *   probe's answer updates the decision caches as any review's does (a denial ends that key's
 *   grace), and its first HTTP answer ends the outage.
 * - Nothing else changes: a token never seen and a denied decision have no allowed answer to
 *   reuse, so their reviews are sent as ever (and fail as ever); a denial is never extended. The
 *   exposure added is at most one probe's round trip after the apiserver is back: reads in that
 *   moment still reuse allowed answers that are within their grace anyway.
 */
import { type Clock, realClock } from '../util/clock.ts';
import { UpstreamError } from '../util/errors.ts';
import { REVIEW_TIMEOUT_MS } from './review-client.ts';

/** How long a review failure without an answer is remembered (ms): one review timeout. */
export const OUTAGE_MEMORY_MS = REVIEW_TIMEOUT_MS;

/** The error a review skipped during a remembered outage stands for (an outage: `isReviewOutage`). */
export class ReviewOutageError extends Error {
  constructor(sinceMs: number) {
    super(`review not sent: the apiserver gave no answer to a review ${Math.round(sinceMs / 1000)}s ago`);
    this.name = 'ReviewOutageError';
  }
}

/** Whether `err` is a review failure without any HTTP answer (a 2xx body that did not parse is an answer). */
function noAnswer(err: unknown): boolean {
  return err instanceof Error && !(err instanceof UpstreamError) && !(err instanceof SyntaxError);
}

/** See the module comment. One per process, shared by the TokenReview and SubjectAccessReview clients. */
export class ReviewOutage {
  readonly #clock: Clock;
  readonly #memoryMs: number;
  /** When the last review failed without an answer; undefined when an answer came since. */
  #failedAt: number | undefined;
  #probing = false;

  /** `memoryMs`: how long a failure is remembered (default {@link OUTAGE_MEMORY_MS}). */
  constructor(o: { clock?: Clock; memoryMs?: number } = {}) {
    this.#clock = o.clock ?? realClock;
    this.#memoryMs = o.memoryMs ?? OUTAGE_MEMORY_MS;
  }

  /** A review ended: with an answer (`err` undefined, or an HTTP error) or without one. */
  settled(err?: unknown): void {
    if (err !== undefined && noAnswer(err)) this.#failedAt = this.#clock.now();
    else this.#failedAt = undefined;
  }

  /**
   * The error to reuse an allowed answer with, when an outage is remembered now (a review would
   * most likely wait for its timeout); undefined when reviews should be sent.
   */
  remembered(): ReviewOutageError | undefined {
    if (this.#failedAt === undefined) return undefined;
    const since = this.#clock.now() - this.#failedAt;
    if (since >= this.#memoryMs && !this.#probing) return undefined;
    return new ReviewOutageError(since);
  }

  /** Starts `review` in the background unless a probe is in flight; its outcome is the review's to record. */
  probe(review: () => Promise<unknown>): void {
    if (this.#probing) return;
    this.#probing = true;
    void review()
      .catch(() => undefined)
      .finally(() => {
        this.#probing = false;
      });
  }

  /** Whether a probe is in flight (tests and the bound: at most one). */
  get probing(): boolean {
    return this.#probing;
  }
}
