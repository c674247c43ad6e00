/**
 * What a reflector exposes for metrics, /readyz and /debug ({@link ReflectorStatus}), and the
 * bookkeeping that keeps it: the sink hears every change of liveness, syncs and errors are logged,
 * relists are counted by the reason that forced them.
 */
import type { Clock } from '../util/clock.ts';
import type { Logger } from '../util/logger.ts';
import type { CacheSink } from './cache-sink.ts';
import { errText } from './reflector-errors.ts';
import type { SyncMode } from './sync-progress.ts';

/** What the reflector exposes for metrics, /readyz and /debug. */
export interface ReflectorStatus {
  /** `pods`, `deployments.apps`, … */
  resource: string;
  /** A complete snapshot has been delivered to the sink at least once. */
  synced: boolean;
  /** When the last snapshot was delivered (`sink.replace`), ms since the epoch; null before. */
  lastSyncTimeMs: number | null;
  /** How the last snapshot was obtained; null before. */
  lastSyncMode: SyncMode | null;
  /** Objects in the last snapshot. */
  lastSyncObjects: number;
  /** Snapshots taken after the first, by the reason that forced them. */
  relists: Partial<Record<RelistReason, number>>;
  /**
   * The first state came from a snapshot file (a warm start, `resume`), not from the upstream: no
   * initial LIST was taken; a later one (a refused snapshot, a 410) counts in `relists`.
   */
  warmStart: boolean;
  /** Watch streams re-opened without a relist (timeouts, liveness, 429, …). */
  watchRestarts: number;
  /** Watch-list attempts that fell back to LIST. */
  watchListFallbacks: number;
  /** The RV the reflector resumes from ("" until earned). */
  lastResourceVersion: string;
  /** The upstream stream is proven live (what `sink.setLive` was last told). */
  live: boolean;
  /**
   * The upstream has sent a periodic BOOKMARK on a live watch of this resource (the apiserver's
   * watch cache sends one about every minute; a resource served without it, e.g. events by
   * default, never does): only then is a silent stream presumed half-open and restarted.
   */
  periodicBookmarks: boolean;
  /** The last error, as `Name: message` (no credentials); null when none yet. */
  lastError: string | null;
  /**
   * Why this resource cannot be cached and is served by pass-through only (its resourceVersions
   * do not parse as uint64; the reflector stopped for good); null while it can be cached.
   */
  passThrough: string | null;
}

/**
 * Why a ListAndWatch after the first one takes a new snapshot (the keys of `relists`, and the
 * `reason` label of `kube_cache_proxy_reflector_relists_total`, spelled the same everywhere):
 * - `expired`: 410 Gone / `Expired` on the live watch (client-go `isExpiredError`);
 * - `watch_open_error`: the watch request itself failed with a non-retriable error;
 * - `very_short_watch`: a watch ended within 1 s without any event (client-go `VeryShortWatchError`);
 * - `watch_error`: the watch ended with any other error;
 * - `error`: the list or watch-list failed (e.g. 403, upstream down) and was retried after backoff;
 * - `snapshot_refused`: the snapshot a warm start restored was refused by the upstream (another
 *   apiserver identity, or a resourceVersion ahead of the upstream's: etcd restored from a backup).
 */
export const RELIST_REASONS = [
  'expired',
  'watch_open_error',
  'very_short_watch',
  'watch_error',
  'error',
  'snapshot_refused',
] as const;
/** One of {@link RELIST_REASONS}. */
export type RelistReason = (typeof RELIST_REASONS)[number];

/** Keeps one reflector's {@link ReflectorStatus}. */
export class StatusRecorder {
  readonly #s: ReflectorStatus;
  readonly #sink: Pick<CacheSink, 'setLive'>;
  readonly #clock: Clock;
  readonly #log: Logger;
  #pendingRelistReason: RelistReason | 'initial' = 'initial';

  constructor(resource: string, sink: Pick<CacheSink, 'setLive'>, clock: Clock, log: Logger) {
    this.#sink = sink;
    this.#clock = clock;
    this.#log = log;
    this.#s = {
      resource,
      synced: false,
      lastSyncTimeMs: null,
      lastSyncMode: null,
      lastSyncObjects: 0,
      relists: {},
      warmStart: false,
      watchRestarts: 0,
      watchListFallbacks: 0,
      lastResourceVersion: '',
      live: false,
      periodicBookmarks: false,
      lastError: null,
      passThrough: null,
    };
  }

  /** Whether a periodic bookmark was seen ({@link ReflectorStatus.periodicBookmarks}). */
  get periodicBookmarks(): boolean {
    return this.#s.periodicBookmarks;
  }

  /** A periodic bookmark arrived: from now on a silent stream of this resource is presumed half-open. */
  periodicBookmarkSeen(): void {
    if (this.#s.periodicBookmarks) return;
    this.#s.periodicBookmarks = true;
    this.#log.debug('the upstream sends periodic bookmarks: a silent stream is presumed half-open');
  }

  /** A copy of the current status. */
  snapshot(): ReflectorStatus {
    return { ...this.#s, relists: { ...this.#s.relists } };
  }

  get synced(): boolean {
    return this.#s.synced;
  }

  /**
   * A ListAndWatch starts: after the first sync it is a relist, counted under the reason set
   * by {@link relistReason} since the previous one ("error" when none was set).
   */
  listAndWatchStarted(): void {
    if (this.#s.synced) {
      const r = this.#pendingRelistReason;
      if (r !== 'initial') this.#s.relists[r] = (this.#s.relists[r] ?? 0) + 1;
    }
    this.#pendingRelistReason = 'error';
  }

  /** Why the next ListAndWatch relists. */
  /** Restored from a snapshot at `rv` (a warm start): synced, not live until a watch from `rv` is accepted. */
  restored(rv: string): void {
    this.#s.synced = true;
    this.#s.warmStart = true;
    this.#s.lastResourceVersion = rv;
  }

  relistReason(reason: RelistReason): void {
    this.#pendingRelistReason = reason;
  }

  setResourceVersion(rv: string): void {
    this.#s.lastResourceVersion = rv;
  }

  /** Records liveness; the sink is told only about changes. */
  setLive(live: boolean): void {
    if (this.#s.live === live) return;
    this.#s.live = live;
    this.#sink.setLive(live);
  }

  /** A snapshot was delivered to the sink (`start`: ms since epoch the sync began); the stream is live. */
  recordSync(mode: SyncMode, objects: number, start: number): void {
    const first = !this.#s.synced;
    this.#s.synced = true;
    this.#s.lastSyncTimeMs = this.#clock.now();
    this.#s.lastSyncMode = mode;
    this.#s.lastSyncObjects = objects;
    this.setLive(true);
    const ms = this.#clock.now() - start;
    this.#log.info(
      { mode, objects, resourceVersion: this.#s.lastResourceVersion, durationMs: ms, initial: first },
      first ? 'initial sync complete' : 'relist complete',
    );
  }

  /** Records `err` as `lastError` and logs it with `msg` (warn). */
  noteError(err: unknown, msg: string): void {
    this.#s.lastError = errText(err);
    this.#log.warn({ err: this.#s.lastError }, msg);
  }

  /**
   * The resource cannot be cached (`err` says why): the reflector stops for good, and the
   * resource is served by pass-through only. Logged once, as an error.
   */
  passThrough(err: unknown): void {
    this.#s.lastError = errText(err);
    this.#s.passThrough = this.#s.lastError;
    this.setLive(false);
    this.#log.error(
      { err: this.#s.lastError },
      'resource cannot be cached (its resourceVersions are not uint64): reflector stopped, every request for it is passed upstream',
    );
  }

  watchRestarted(): void {
    this.#s.watchRestarts++;
  }

  watchListFellBack(): void {
    this.#s.watchListFallbacks++;
  }
}
