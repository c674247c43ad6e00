/**
 * The bound on parked watchers, shared by every watch cache of the process
 * (`--max-parked-watchers`). A watcher whose queue fills is parked (`cache-watcher.ts`: its queue
 * released, only its resourceVersion and filter kept) instead of closed, as the apiserver's
 * watch cache does behind `WatchCacheStallResume` (KEP-6268). The apiserver bounds a parked
 * watcher only by its request deadline; the proxy also bounds how many are parked at once, so
 * clients that stop reading cannot hold an unbounded number of connections and watcher objects.
 *
 * Past the bound, the watcher parked the longest is closed first (terminated watchers reason
 * `stalled_client`, the apiserver's name for its stalled-client cull): the longer a client has
 * not read, the likelier it is dead or wedged rather than briefly behind (a GC pause, a burst),
 * and the likelier its resourceVersion is to leave the window anyway; closing the newest instead
 * would let dead clients keep every slot and close the ones most likely to recover.
 */

/** What the bound needs of a parked watcher. */
export interface Parkable {
  /** Closes the watcher because the bound was reached (called at most once per park). */
  evictParked(): void;
}

/** Default `--max-parked-watchers`: as many as `--max-watchers`' default, i.e. never the binding limit by default. */
export const DEFAULT_MAX_PARKED_WATCHERS = 1000;

/** The watchers parked right now, oldest park first, and the bound on them. */
export class ParkedWatchers {
  readonly max: number;
  /** Insertion order = park order: the first is the one parked the longest. */
  readonly #parked = new Set<Parkable>();

  /** `max` ≤ 0 disables parking: a watcher whose queue fills is closed (the apiserver without the gate). */
  constructor(max = DEFAULT_MAX_PARKED_WATCHERS) {
    this.max = max;
  }

  /** Whether a watcher may be parked at all. */
  get enabled(): boolean {
    return this.max > 0;
  }

  /** Watchers parked right now, over all caches. */
  get size(): number {
    return this.#parked.size;
  }

  /**
   * Records `w` as parked (newest), then closes the longest-parked ones while more than `max`
   * are parked (never `w` itself, since `max` ≥ 1 when enabled).
   * @throws Error when parking is disabled (check {@link enabled} first).
   */
  park(w: Parkable): void {
    if (!this.enabled) throw new Error('parking is disabled');
    this.#parked.delete(w);
    this.#parked.add(w);
    while (this.#parked.size > this.max) {
      const oldest = this.#parked.values().next().value as Parkable;
      this.#parked.delete(oldest);
      oldest.evictParked();
    }
  }

  /** Forgets `w` (resumed or closed); a no-op when it is not parked. */
  unpark(w: Parkable): void {
    this.#parked.delete(w);
  }
}
