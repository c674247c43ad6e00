/**
 * The compaction floor of one watch cache: the highest resourceVersion the upstream has shown to
 * be compacted, learnt the way a client can. The apiserver's watch cache learns etcd's compacted
 * revision by polling it every 15 s (`k8s.io/apiserver` `pkg/storage/cacher/compactor.go`) and
 * drops its snapshots below it (`store.Compact` → `RemoveLess`), so an Exact LIST or a `continue`
 * page at a compacted revision goes to etcd, which answers 410 Expired (a `continue` page: with
 * an "inconsistent" continue token `{"rv":-1,"start":…}`, `pkg/storage/etcd3/errors.go`). The
 * proxy's window knows nothing of compaction: without the floor it answered such reads 200 for as
 * long as the RV stayed in its window (`test/e2e/apimachinery/chunking.go`, "should support
 * continue listing from the last key if the original version has been compacted away").
 *
 * A poll sends one Exact LIST of one item (reflector/compaction-probe.ts) at the oldest RV the
 * cache would still serve such a read at (the window's start, or just above the floor). 200: the
 * floor stands. 410: the floor rises to that RV, and a binary search between it and the current
 * RV (at most one probe per bit of the range, once per compaction) finds the highest compacted
 * one. Reads at or below the floor go upstream (`compacted`, docs/delegation.md).
 *
 * Polls cost the upstream a request each, so they run only while the resource is read that way:
 * an Exact or continue read arms a poll every {@link COMPACTION_POLL_MS} until none came for
 * {@link COMPACTION_IDLE_MS}. A read that finds the floor staler than one poll period (the first
 * after an idle spell) waits for one poll (shared, at most {@link COMPACTION_WAIT_MS}); the others
 * decide at once. So the floor trails the apiserver's by at most one poll period, as the
 * apiserver's own compactor trails etcd.
 */
import type { CompactionAnswer } from '../reflector/compaction-probe.ts';
import type { Clock, TimerHandle } from '../util/clock.ts';
import { untilAborted } from './until-aborted.ts';

/** Asks the upstream whether `rv` is compacted (an Exact LIST of one item at it); never rejects. */
export type CompactionProbe = (rv: bigint, signal: AbortSignal) => Promise<CompactionAnswer>;

/** Poll period while the resource is read at exact RVs, ms (the apiserver's `compactorPollPeriod`). */
export const COMPACTION_POLL_MS = 15_000;

/** Polling stops this long after the last Exact or continue read, ms. */
export const COMPACTION_IDLE_MS = 120_000;

/** The longest a read waits for a poll when the floor is stale, ms; then the floor as it is decides. */
export const COMPACTION_WAIT_MS = 3_000;

/** The RVs the cache serves an Exact or continue read at: [start, current]. */
export interface ServedWindow {
  start: bigint;
  current: bigint;
}

/** Options of a {@link CompactionFloor}. */
export interface CompactionFloorOptions {
  probe: CompactionProbe;
  /** The cache's window now; undefined before its first snapshot (nothing to poll). */
  window: () => ServedWindow | undefined;
  clock: Clock;
  /** Default {@link COMPACTION_POLL_MS}. */
  pollMs?: number;
  /** Default {@link COMPACTION_IDLE_MS}. */
  idleMs?: number;
  /** Default {@link COMPACTION_WAIT_MS}. */
  waitMs?: number;
  /** Told every probe's answer (a metric); must not throw. */
  onProbe?: (answer: CompactionAnswer) => void;
  /** Told once per poll that raised the floor, with the new floor (a log line); must not throw. */
  onRaise?: (floor: bigint) => void;
}

/** See the module docstring. All calls on one event loop. */
export class CompactionFloor {
  readonly #o: CompactionFloorOptions;
  readonly #pollMs: number;
  readonly #ac = new AbortController();
  #floor = 0n;
  /** When the last completed poll started (clock ms); undefined before the first. */
  #polledAt: number | undefined;
  #inFlight: Promise<void> | undefined;
  #timer: TimerHandle | undefined;
  #lastAsked = Number.NEGATIVE_INFINITY;

  constructor(o: CompactionFloorOptions) {
    this.#o = o;
    this.#pollMs = o.pollMs ?? COMPACTION_POLL_MS;
  }

  /** The highest RV known compacted; 0n while none is. */
  get floor(): bigint {
    return this.#floor;
  }

  /** Whether a poll timer is armed (polling while the resource is read at exact RVs). */
  get polling(): boolean {
    return this.#timer !== undefined;
  }

  /**
   * Whether an Exact or continue read at `rv` must go upstream: `rv` at or below the floor. For
   * an `rv` inside the window, arms the polling and, when the floor is staler than one poll
   * period, first waits for a poll (bounded by `waitMs` and `signal`). Never rejects.
   */
  async compacted(rv: bigint, signal?: AbortSignal): Promise<boolean> {
    if (this.#ac.signal.aborted) return rv <= this.#floor;
    // Outside the window the read goes upstream anyway: nothing to wait or poll for.
    const w = this.#o.window();
    if (!w || rv < w.start || rv > w.current) return rv <= this.#floor;
    this.#lastAsked = this.#o.clock.now();
    this.#arm();
    if (rv <= this.#floor) return true;
    if (this.#polledAt !== undefined && this.#o.clock.now() - this.#polledAt < this.#pollMs) return false;
    const poll = this.poll();
    const waited = new Promise<void>((resolve) => {
      const t = this.#o.clock.setTimeout(resolve, this.#o.waitMs ?? COMPACTION_WAIT_MS);
      void poll.then(() => {
        this.#o.clock.clearTimeout(t);
        resolve();
      });
    });
    await untilAborted(waited, undefined, signal);
    return rv <= this.#floor;
  }

  /** One poll (see the module docstring), shared with a poll already in flight. Never rejects. */
  poll(): Promise<void> {
    if (!this.#inFlight) {
      const p = this.#search().finally(() => {
        if (this.#inFlight === p) this.#inFlight = undefined;
      });
      this.#inFlight = p;
    }
    return this.#inFlight;
  }

  /** No more polls; probes in flight are aborted. */
  stop(): void {
    this.#ac.abort();
    if (this.#timer !== undefined) this.#o.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /**
   * Probes the oldest RV the cache serves above the floor; on a 410 searches (lo, hi) for the
   * highest compacted RV, where lo is compacted and hi (the current RV + 1 at first) is not.
   */
  async #search(): Promise<void> {
    const started = this.#o.clock.now();
    const before = this.#floor;
    try {
      const w = this.#o.window();
      if (!w) return;
      let lo = this.#floor > w.start - 1n ? this.#floor : w.start - 1n;
      let hi = w.current + 1n;
      let rv = lo + 1n;
      while (rv < hi && !this.#ac.signal.aborted) {
        const answer = await this.#o.probe(rv, this.#ac.signal);
        this.#o.onProbe?.(answer);
        if (answer === 'unknown') return;
        if (answer === 'available') hi = rv;
        else {
          lo = rv;
          if (rv > this.#floor) this.#floor = rv;
        }
        rv = lo + (hi - lo) / 2n;
        if (rv === lo) break;
      }
    } finally {
      this.#polledAt = started;
      if (this.#floor > before) this.#o.onRaise?.(this.#floor);
    }
  }

  /** Arms the next poll unless one is armed or the floor is stopped. */
  #arm(): void {
    if (this.#timer !== undefined || this.#ac.signal.aborted) return;
    this.#timer = this.#o.clock.setTimeout(() => {
      this.#timer = undefined;
      if (this.#ac.signal.aborted) return;
      // Idle: no Exact or continue read for a while, so no poll either until the next one.
      if (this.#o.clock.now() - this.#lastAsked >= (this.#o.idleMs ?? COMPACTION_IDLE_MS)) return;
      void this.poll().then(() => this.#arm());
    }, this.#pollMs);
  }
}
