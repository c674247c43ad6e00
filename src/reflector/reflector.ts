import { groupResourceString, type ResourceInfo } from '../apimachinery/gvr.ts';
import type { UpstreamObject } from '../apimachinery/object.ts';
import type { Status } from '../apimachinery/status.ts';
import {
  isConnectionRefused,
  isExpired,
  isInternalError,
  isTooLargeResourceVersion,
  isTooManyRequests,
  UpstreamError,
} from '../upstream/errors.ts';
import { type Clock, realClock } from '../util/clock.ts';
import { type Logger, silentLogger } from '../util/logger.ts';
import { Backoff } from './backoff.ts';
import type { CacheSink } from './cache-sink.ts';
import type { ListerWatcher, WatchStream } from './list-watch.ts';
import type { WatchEvent } from './watch-decoder.ts';

/** `metav1.InitialEventsAnnotationKey`: marks the bookmark that ends a watch-list burst. */
export const INITIAL_EVENTS_END_ANNOTATION = 'k8s.io/initial-events-end';

/** client-go pager `defaultPageSize`. */
export const DEFAULT_PAGE_SIZE = 500;

/** Construction options (client-go `ReflectorOptions`, plus what the proxy needs). */
export interface ReflectorOptions {
  info: ResourceInfo;
  lw: ListerWatcher;
  sink: CacheSink;
  clock?: Clock;
  /** Uniform [0, 1) source for watch timeouts and backoff jitter; default `Math.random`. */
  random?: () => number;
  logger?: Logger;
  /** Try watch-list (sendInitialEvents) before LIST; default true. */
  useWatchList?: boolean;
  /** Forced page size for LIST (client-go `WatchListPageSize`); default 0 = client-go's rules. */
  pageSize?: number;
  /** No event/bookmark for longer than this (ms) → stream presumed half-open; default 180 000. */
  livenessWindowMs?: number;
  /** Watch `timeoutSeconds` is uniform in [min, max); defaults 300 / 600 (client-go). */
  minWatchTimeoutSeconds?: number;
  maxWatchTimeoutSeconds?: number;
  /** Internal (5xx) watch errors are retried without relisting within this deadline (ms); default 30 000. */
  maxInternalErrorRetryMs?: number;
  /** Interval (ms) of the progress log line during an initial sync; default 5 000. */
  progressIntervalMs?: number;
  /** Backoff override (tests); default client-go's 800 ms ×2 jitter 1.0 cap 30 s reset 2 min. */
  backoff?: Backoff;
}

/** What the reflector exposes for metrics, /readyz and /debug. */
export interface ReflectorStatus {
  /** `pods`, `deployments.apps`, … */
  resource: string;
  /** A complete snapshot has been delivered to the sink at least once. */
  synced: boolean;
  /** ms since epoch of the last snapshot delivered (`sink.replace`). */
  lastSyncTime: number | undefined;
  /** How the last snapshot was obtained. */
  lastSyncMode: 'watch-list' | 'list' | undefined;
  /** Objects in the last snapshot. */
  lastSyncObjects: number;
  /** Snapshots taken after the first, by the reason that forced them. */
  relists: Record<string, number>;
  /** Watch streams re-opened without a relist (timeouts, liveness, 429, …). */
  watchRestarts: number;
  /** Watch-list attempts that fell back to LIST. */
  watchListFallbacks: number;
  /** The RV the reflector resumes from ("" until earned). */
  lastResourceVersion: string;
  /** The upstream stream is proven live (what `sink.setLive` was last told). */
  live: boolean;
  lastError: string | undefined;
}

/** A watch closed within 1 s without any event (client-go `VeryShortWatchError`). */
export class VeryShortWatchError extends Error {
  override readonly name = 'VeryShortWatchError';
  readonly code = 'VeryShortWatch';
}

/** The watch stream ended before the `k8s.io/initial-events-end` bookmark. */
export class WatchListIncompleteError extends Error {
  override readonly name = 'WatchListIncompleteError';
  readonly code = 'WatchListIncomplete';
}

class StopRequested extends Error {}
class LivenessExpired extends Error {}

/**
 * client-go `retryWithDeadline` for internal errors: retry while the first error of the current
 * run is at most `deadlineMs` old; a run ends after 1 min without errors, or when the deadline
 * is passed (`ShouldRetry` then resets).
 */
class RetryWithDeadline {
  readonly #clock: Clock;
  readonly #deadlineMs: number;
  #first: number | undefined;
  #last: number | undefined;
  constructor(clock: Clock, deadlineMs: number) {
    this.#clock = clock;
    this.#deadlineMs = deadlineMs;
  }
  /** Records an internal error (client-go `After`) and says whether to retry (`ShouldRetry`). */
  afterInternalError(): boolean {
    const now = this.#clock.now();
    if (this.#last !== undefined && now - this.#last > 60_000) this.#first = undefined;
    this.#first ??= now;
    this.#last = now;
    if (this.#deadlineMs <= 0) return false;
    if (now - this.#first <= this.#deadlineMs) return true;
    this.#first = undefined;
    this.#last = undefined;
    return false;
  }
}

type StoreOp = 'add' | 'update' | 'delete';

/**
 * The ListAndWatch loop for one resource: a TypeScript port of client-go
 * `tools/cache/reflector.go` (v1.3x, with the RV-withholding fix) writing into a
 * {@link CacheSink}. See docs/design.md §2 for the rules; each method names the Go function it copies.
 *
 * Invariants:
 * - The sink only ever sees complete snapshots (`replace`) followed by events in the order the
 *   upstream sent them; a watch-list stream that fails before its end bookmark is discarded.
 * - `lastSyncResourceVersion()` is only ever an RV the upstream reached: never the RV of a
 *   synthetic ADDED of a watch started at "" or "0".
 * - At most one stream is open; `stop()` closes it and ends `run()`.
 */
export class Reflector {
  readonly #info: ResourceInfo;
  readonly #name: string;
  readonly #lw: ListerWatcher;
  readonly #sink: CacheSink;
  readonly #clock: Clock;
  readonly #random: () => number;
  readonly #log: Logger;
  readonly #useWatchList: boolean;
  readonly #pageSize: number;
  readonly #livenessMs: number;
  readonly #minTimeout: number;
  readonly #maxTimeout: number;
  readonly #progressMs: number;
  readonly #backoff: Backoff;
  readonly #retry: RetryWithDeadline;
  readonly #ac = new AbortController();

  #lastSyncRV = '';
  #rvUnavailable = false;
  #paginatedResult = false;
  #stream: WatchStream | undefined;
  #lastEventAt = 0;
  #livenessTimer: ReturnType<Clock['setTimeout']> | undefined;
  #livenessExpired = false;
  #pendingRelistReason = 'initial';
  #status: ReflectorStatus;

  constructor(opts: ReflectorOptions) {
    this.#info = opts.info;
    this.#name = groupResourceString(opts.info.gvr);
    this.#lw = opts.lw;
    this.#sink = opts.sink;
    this.#clock = opts.clock ?? realClock;
    this.#random = opts.random ?? Math.random;
    this.#log = (opts.logger ?? silentLogger).child({ reflector: this.#name });
    this.#useWatchList = opts.useWatchList ?? true;
    this.#pageSize = opts.pageSize ?? 0;
    this.#livenessMs = opts.livenessWindowMs ?? 180_000;
    this.#minTimeout = opts.minWatchTimeoutSeconds ?? 300;
    this.#maxTimeout = opts.maxWatchTimeoutSeconds ?? 600;
    this.#progressMs = opts.progressIntervalMs ?? 5_000;
    this.#backoff = opts.backoff ?? new Backoff({ clock: this.#clock, random: this.#random });
    this.#retry = new RetryWithDeadline(this.#clock, opts.maxInternalErrorRetryMs ?? 30_000);
    this.#status = {
      resource: this.#name,
      synced: false,
      lastSyncTime: undefined,
      lastSyncMode: undefined,
      lastSyncObjects: 0,
      relists: {},
      watchRestarts: 0,
      watchListFallbacks: 0,
      lastResourceVersion: '',
      live: false,
      lastError: undefined,
    };
  }

  /** The RV the next watch resumes from: "" until one was earned (client-go `LastSyncResourceVersion`). */
  lastSyncResourceVersion(): string {
    return this.#lastSyncRV;
  }

  /** A copy of the current status. */
  status(): ReflectorStatus {
    return { ...this.#status, relists: { ...this.#status.relists } };
  }

  /**
   * Runs ListAndWatch until {@link Reflector.stop}, sleeping a backoff between attempts
   * (client-go `Run`: `wait.BackoffUntil` immediate + sliding). Never rejects.
   */
  async run(): Promise<void> {
    while (!this.#stopped()) {
      try {
        await this.#listAndWatch();
      } catch (err) {
        if (err instanceof StopRequested || this.#stopped()) break;
        this.#noteError(err, 'list-and-watch failed');
      }
      if (this.#stopped()) break;
      this.#setLive(false);
      if (!(await this.#sleep(this.#backoff.next()))) break;
    }
    this.#closeStream();
  }

  /** Stops the loop and closes the open stream. */
  stop(): void {
    if (this.#ac.signal.aborted) return;
    this.#ac.abort(new StopRequested('reflector stopped'));
    this.#closeStream();
  }

  #stopped(): boolean {
    return this.#ac.signal.aborted;
  }

  /** client-go `ListAndWatchWithContext`: watch-list first, LIST on any watch-list failure. */
  async #listAndWatch(): Promise<void> {
    if (this.#status.synced) {
      const r = this.#pendingRelistReason;
      this.#status.relists[r] = (this.#status.relists[r] ?? 0) + 1;
    }
    this.#pendingRelistReason = 'error';
    let w: WatchStream | undefined;
    if (this.#useWatchList) {
      try {
        w = await this.#watchList();
      } catch (err) {
        if (err instanceof StopRequested || this.#stopped()) throw new StopRequested();
        // Never pass a half-consumed stream on (client-go: "ensure that we won't accidentally
        // pass some garbage down the watch").
        w = undefined;
        this.#status.watchListFallbacks++;
        this.#log.debug(
          { err: errText(err) },
          'data could not be fetched in watch-list mode; falling back to LIST (expected when the upstream does not support watch-list)',
        );
      }
    }
    if (!w) await this.#list();
    await this.#watch(w);
  }

  /** client-go `rewatchResourceVersion`. */
  #rewatchRV(): string {
    return this.#rvUnavailable ? '' : this.#lastSyncRV;
  }

  /** client-go `relistResourceVersion`: "0" for the first list so a watch cache can serve it. */
  #relistRV(): string {
    if (this.#rvUnavailable) return '';
    return this.#lastSyncRV === '' ? '0' : this.#lastSyncRV;
  }

  #watchTimeoutSeconds(): number {
    return Math.floor(this.#minTimeout + this.#random() * (this.#maxTimeout - this.#minTimeout));
  }

  /**
   * client-go `watchList`: one WATCH with sendInitialEvents; synthetic ADDED land in a temporary
   * store; the initial-events-end bookmark ends the burst, the snapshot replaces the sink at the
   * bookmark's RV and the still-open stream is returned for live events. 410 / too-large RV →
   * retry at RV=""; 429 / connection refused → retry after backoff; other errors are thrown
   * (the caller falls back to LIST).
   */
  async #watchList(): Promise<WatchStream> {
    for (;;) {
      if (this.#stopped()) throw new StopRequested();
      const rv = this.#rewatchRV();
      const temp = new Map<string, UpstreamObject>();
      const start = this.#clock.now();
      let w: WatchStream;
      try {
        w = await this.#lw.watch(
          {
            resourceVersion: rv,
            allowWatchBookmarks: true,
            sendInitialEvents: true,
            resourceVersionMatch: 'NotOlderThan',
            timeoutSeconds: this.#watchTimeoutSeconds(),
          },
          this.#ac.signal,
        );
      } catch (err) {
        if (await this.#retriableWithSideEffects(err)) continue;
        throw err;
      }
      let bookmarkRV = '';
      let endBookmark: Buffer | undefined;
      try {
        const done = await this.#handleAnyWatch(w, start, true, {
          store: (op, obj) => applyToMap(temp, op, obj),
          // The end bookmark's bytes: the cache copies the upstream's bookmark shape.
          bookmark: (_rv, raw) => {
            endBookmark = raw;
          },
          onRV: (r, besidesAdded) => {
            if (besidesAdded) bookmarkRV = r;
          },
          progress: () => temp.size,
        });
        if (!done)
          throw new WatchListIncompleteError(
            'watch-list stream ended before the initial-events-end bookmark',
          );
      } catch (err) {
        w.close();
        if (err instanceof StopRequested || this.#stopped()) throw new StopRequested();
        if (await this.#retriableWithSideEffects(err)) continue;
        throw err;
      }
      const objects = [...temp.values()];
      this.#sink.replace(objects, bookmarkRV, endBookmark);
      this.#rvUnavailable = false;
      this.#setLastSyncRV(bookmarkRV);
      this.#synced('watch-list', objects.length, start);
      return w;
    }
  }

  /** client-go watchList's `isErrorRetriableWithSideEffectsFn`. */
  async #retriableWithSideEffects(err: unknown): Promise<boolean> {
    if (this.#stopped()) throw new StopRequested();
    if (isConnectionRefused(err) || isTooManyRequests(err)) {
      this.#noteError(err, 'watch-list request refused; backing off');
      this.#setLive(false);
      if (!(await this.#sleep(this.#backoff.next()))) throw new StopRequested();
      return true;
    }
    if (isExpired(err) || isTooLargeResourceVersion(err)) {
      // The RV we resumed from is gone (or unknown to this server): start over from "".
      this.#rvUnavailable = true;
      this.#noteError(err, 'watch-list resource version unavailable; retrying at RV=""');
      return true;
    }
    return false;
  }

  /** client-go `list`: paginated LIST with the pager's page-size rules, then `store.Replace`. */
  async #list(): Promise<void> {
    const start = this.#clock.now();
    const rv = this.#relistRV();
    let limit: number;
    if (this.#pageSize > 0) limit = this.#pageSize;
    else if (this.#paginatedResult) limit = DEFAULT_PAGE_SIZE;
    // A non-zero RV without a limit can be served by the upstream's watch cache instead of etcd.
    else if (rv !== '' && rv !== '0') limit = 0;
    else limit = DEFAULT_PAGE_SIZE;
    let result: { items: UpstreamObject[]; resourceVersion: string; paginated: boolean };
    try {
      result = await this.#pagedList(rv, limit, start);
    } catch (err) {
      if (!(isExpired(err) || isTooLargeResourceVersion(err))) throw err;
      if (this.#stopped()) throw new StopRequested();
      // "Retry immediately if the resource version used to list is unavailable."
      this.#rvUnavailable = true;
      this.#noteError(err, 'list resource version unavailable; relisting at RV=""');
      result = await this.#pagedList(this.#relistRV(), limit, start);
    }
    if (result.resourceVersion === '' || result.resourceVersion === '0') {
      // Without a list RV there is no safe point to watch from (docs/design.md §3: a resource whose
      // RVs do not parse is not cached).
      throw new Error(`${this.#name}: upstream LIST returned no usable resourceVersion`);
    }
    if (rv === '0' && result.paginated) this.#paginatedResult = true;
    this.#rvUnavailable = false;
    this.#sink.replace(result.items, result.resourceVersion);
    this.#setLastSyncRV(result.resourceVersion);
    this.#synced('list', result.items.length, start);
  }

  /** client-go `pager.List` with FullListIfExpired. */
  async #pagedList(
    rv: string,
    limit: number,
    start: number,
  ): Promise<{ items: UpstreamObject[]; resourceVersion: string; paginated: boolean }> {
    const items: UpstreamObject[] = [];
    let cont = '';
    let paginated = false;
    let listRV = '';
    let lastLog = start;
    for (;;) {
      if (this.#stopped()) throw new StopRequested();
      let page: Awaited<ReturnType<ListerWatcher['list']>>;
      try {
        // Continue requests must not carry a resourceVersion (kubernetes#85221).
        page = await this.#lw.list(
          { resourceVersion: cont ? '' : rv, limit, continue: cont },
          this.#ac.signal,
        );
      } catch (err) {
        if (!isExpired(err) || cont === '') throw err;
        // The snapshot of the first page was compacted meanwhile: one full list at the same RV.
        page = await this.#lw.list({ resourceVersion: rv }, this.#ac.signal);
        return { items: page.items, resourceVersion: page.resourceVersion, paginated };
      }
      for (const it of page.items) items.push(it);
      if (!cont) listRV = page.resourceVersion;
      if (!page.continue) return { items, resourceVersion: listRV || page.resourceVersion, paginated };
      cont = page.continue;
      paginated = true;
      const now = this.#clock.now();
      if (now - lastLog >= this.#progressMs) {
        lastLog = now;
        this.#progress(items.length, start, 'list');
      }
    }
  }

  /**
   * client-go `watch`: consume the handed-over watch-list stream, or open watches from the
   * last RV, until an error that needs a relist. 429 / connection refused / 5xx (within the
   * deadline) re-watch after backoff without relisting; a clean end re-watches at once.
   * Deliberate deviations from client-go: a 5xx is retried after a backoff sleep (client-go
   * re-watches at once, i.e. up to 30 s of back-to-back requests against a failing upstream),
   * and a 5xx answer to the watch request itself gets the same deadline retry (client-go
   * relists at once).
   */
  async #watch(handed: WatchStream | undefined): Promise<void> {
    let w = handed;
    if (this.#lastSyncRV === '' || this.#lastSyncRV === '0') {
      // Unreachable with a real apiserver (#list rejects an RV-less answer); guards the invariant.
      throw new Error(`${this.#name}: refusing to watch from unearned resourceVersion "${this.#lastSyncRV}"`);
    }
    for (;;) {
      if (this.#stopped()) throw new StopRequested();
      const rv = this.#lastSyncRV;
      // Started before the request: some proxies hold the headers until the first event.
      const start = this.#clock.now();
      if (!w) {
        try {
          w = await this.#lw.watch(
            { resourceVersion: rv, allowWatchBookmarks: true, timeoutSeconds: this.#watchTimeoutSeconds() },
            this.#ac.signal,
          );
        } catch (err) {
          if (this.#stopped()) throw new StopRequested();
          if (
            isConnectionRefused(err) ||
            isTooManyRequests(err) ||
            (isInternalError(err) && this.#retry.afterInternalError())
          ) {
            this.#noteError(err, 'watch request failed; backing off without relisting');
            this.#setLive(false);
            if (!(await this.#sleep(this.#backoff.next()))) throw new StopRequested();
            this.#status.watchRestarts++;
            continue;
          }
          this.#pendingRelistReason = 'watch-open-error';
          throw err;
        }
        // The upstream just accepted a stream that resumes exactly at our RV: that is as good a
        // proof of liveness as an event (a half-open connection never gets this far).
        if (this.#status.synced) this.#setLive(true);
      }
      try {
        await this.#consumeLive(w, start);
      } catch (err) {
        w.close();
        w = undefined;
        if (err instanceof StopRequested || this.#stopped()) throw new StopRequested();
        if (err instanceof LivenessExpired) {
          this.#log.warn(
            { windowMs: this.#livenessMs, lastResourceVersion: this.#lastSyncRV },
            'watch stream silent for longer than the liveness window; presumed half-open, restarting it',
          );
          this.#setLive(false);
          this.#status.watchRestarts++;
          continue;
        }
        if (isExpired(err)) {
          // Relist from the last RV: a LIST at RV=N already returns data at least that fresh.
          this.#pendingRelistReason = 'expired';
          this.#log.info({ err: errText(err) }, 'watch resource version expired; relisting');
          return;
        }
        if (isTooManyRequests(err) || (isInternalError(err) && this.#retry.afterInternalError())) {
          this.#noteError(err, 'watch ended with a retriable error; backing off without relisting');
          if (!(await this.#sleep(this.#backoff.next()))) throw new StopRequested();
          this.#status.watchRestarts++;
          continue;
        }
        this.#pendingRelistReason = err instanceof VeryShortWatchError ? 'very-short-watch' : 'watch-error';
        this.#noteError(err, 'watch ended with an error; relisting after backoff');
        return;
      }
      w.close();
      w = undefined;
      this.#status.watchRestarts++;
    }
  }

  /**
   * Live phase of a stream: events go straight to the sink and every event's RV is published.
   * Safe because a live watch always starts from an earned RV (a LIST's or a watch-list
   * bookmark's), never "" or "0": only those produce synthetic ADDED in storage order, and
   * the reflector consumes those exclusively through the watch-list temporary store.
   */
  async #consumeLive(w: WatchStream, start: number): Promise<void> {
    await this.#handleAnyWatch(w, start, false, {
      store: (op, obj) => this.#sink[op](obj),
      bookmark: (rv, raw) => this.#sink.bookmark(rv, raw),
      onRV: (rv) => this.#setLastSyncRV(rv),
    });
  }

  /**
   * client-go `handleAnyWatch`: the one event loop of both paths. Returns true when it stopped
   * at the initial-events-end bookmark (`exitOnInitialEventsEnd`), false when the server ended
   * the stream. Throws the ERROR event's Status as {@link UpstreamError},
   * {@link VeryShortWatchError}, {@link LivenessExpired}, or the stream's own error.
   */
  async #handleAnyWatch(
    w: WatchStream,
    start: number,
    exitOnInitialEventsEnd: boolean,
    h: {
      store: (op: StoreOp, obj: UpstreamObject) => void;
      /** `raw`: the bookmark's `object` bytes as received. */
      bookmark: (rv: string, raw: Buffer) => void;
      onRV: (rv: string, eventReceivedBesidesAdded: boolean) => void;
      progress?: () => number;
    },
  ): Promise<boolean> {
    this.#stream = w;
    this.#armLiveness();
    let eventCount = 0;
    let besidesAdded = false;
    let lastLog = this.#clock.now();
    try {
      for (;;) {
        let ev: WatchEvent | undefined;
        try {
          ev = await w.next();
        } catch (err) {
          if (this.#stopped()) throw new StopRequested();
          if (this.#livenessExpired) throw new LivenessExpired();
          if (err instanceof SyntaxError) {
            // client-go StreamWatcher: an undecodable event is an internal error event.
            throw new UpstreamError(500, `unable to decode an event from the watch stream: ${err.message}`);
          }
          // client-go StreamWatcher: a broken connection (EOF, reset, timeout) ends the watch
          // like a normal close; the caller re-watches from the last RV.
          this.#log.debug({ err: errText(err) }, 'watch stream broken; treating as closed');
          ev = undefined;
        }
        if (this.#stopped()) throw new StopRequested();
        if (this.#livenessExpired) throw new LivenessExpired();
        if (!ev) break;
        this.#lastEventAt = this.#clock.now();
        if (ev.type === 'ERROR')
          throw UpstreamError.fromStatus(ev.object.object as unknown as Partial<Status>);
        const o = ev.object.object;
        if (o.kind !== this.#info.kind || o.apiVersion !== this.#info.apiVersion) {
          this.#log.warn(
            {
              expected: `${this.#info.apiVersion}, Kind=${this.#info.kind}`,
              got: `${o.apiVersion}, Kind=${o.kind}`,
            },
            'dropping watch event of an unexpected kind',
          );
          continue;
        }
        if (this.#status.synced && !exitOnInitialEventsEnd) this.#setLive(true);
        const rv = o.metadata?.resourceVersion ?? '';
        let endOfInitialEvents = false;
        switch (ev.type) {
          case 'ADDED':
            h.store('add', ev.object);
            break;
          case 'MODIFIED':
            besidesAdded = true;
            h.store('update', ev.object);
            break;
          case 'DELETED':
            besidesAdded = true;
            h.store('delete', ev.object);
            break;
          case 'BOOKMARK':
            besidesAdded = true;
            if (exitOnInitialEventsEnd) {
              endOfInitialEvents = o.metadata?.annotations?.[INITIAL_EVENTS_END_ANNOTATION] === 'true';
              if (endOfInitialEvents) h.bookmark(rv, ev.object.raw);
            } else if (rv !== '' && rvGreater(rv, this.#lastSyncRV)) {
              // Progress without a change; an RV the sink already has is not repeated.
              h.bookmark(rv, ev.object.raw);
            }
            break;
        }
        h.onRV(rv, besidesAdded);
        eventCount++;
        if (exitOnInitialEventsEnd && endOfInitialEvents) return true;
        if (h.progress && eventCount % 256 === 0) {
          const now = this.#clock.now();
          if (now - lastLog >= this.#progressMs) {
            lastLog = now;
            this.#progress(h.progress(), start, exitOnInitialEventsEnd ? 'watch-list' : 'watch');
          }
        }
      }
      if (this.#clock.now() - start < 1_000 && eventCount === 0) {
        throw new VeryShortWatchError(
          `very short watch: ${this.#name}: watch lasted less than a second and no items received`,
        );
      }
      return false;
    } finally {
      this.#disarmLiveness();
      this.#stream = undefined;
    }
  }

  #armLiveness(): void {
    this.#livenessExpired = false;
    this.#lastEventAt = this.#clock.now();
    const check = (delay: number) => {
      this.#livenessTimer = this.#clock.setTimeout(() => {
        const idle = this.#clock.now() - this.#lastEventAt;
        if (idle >= this.#livenessMs) {
          this.#livenessTimer = undefined;
          this.#livenessExpired = true;
          this.#setLive(false);
          this.#stream?.close();
        } else {
          check(this.#livenessMs - idle);
        }
      }, delay);
    };
    check(this.#livenessMs);
  }

  #disarmLiveness(): void {
    if (this.#livenessTimer !== undefined) this.#clock.clearTimeout(this.#livenessTimer);
    this.#livenessTimer = undefined;
  }

  #closeStream(): void {
    this.#stream?.close();
  }

  #setLastSyncRV(rv: string): void {
    this.#lastSyncRV = rv;
    this.#status.lastResourceVersion = rv;
  }

  #setLive(live: boolean): void {
    if (this.#status.live === live) return;
    this.#status.live = live;
    this.#sink.setLive(live);
  }

  #synced(mode: 'watch-list' | 'list', objects: number, start: number): void {
    const first = !this.#status.synced;
    this.#status.synced = true;
    this.#status.lastSyncTime = this.#clock.now();
    this.#status.lastSyncMode = mode;
    this.#status.lastSyncObjects = objects;
    this.#setLive(true);
    const ms = this.#clock.now() - start;
    this.#log.info(
      { mode, objects, resourceVersion: this.#lastSyncRV, durationMs: ms, initial: first },
      first ? 'initial sync complete' : 'relist complete',
    );
  }

  #progress(objects: number, start: number, mode: string): void {
    const s = (this.#clock.now() - start) / 1000;
    this.#log.info(
      { mode, objects, elapsedSeconds: s, objectsPerSecond: s > 0 ? Math.round(objects / s) : 0 },
      'sync in progress',
    );
  }

  #noteError(err: unknown, msg: string): void {
    this.#status.lastError = errText(err);
    this.#log.warn({ err: this.#status.lastError }, msg);
  }

  /** Sleeps on the clock; false when stopped meanwhile. */
  async #sleep(ms: number): Promise<boolean> {
    try {
      await this.#clock.sleep(ms, this.#ac.signal);
      return !this.#stopped();
    } catch {
      return false;
    }
  }
}

function keyOf(obj: UpstreamObject): string {
  const m = obj.object.metadata;
  return m.namespace ? `${m.namespace}/${m.name}` : m.name;
}

function applyToMap(m: Map<string, UpstreamObject>, op: StoreOp, obj: UpstreamObject): void {
  if (op === 'delete') m.delete(keyOf(obj));
  else m.set(keyOf(obj), obj);
}

/** a > b as uint64 RVs; true when either does not parse (let the sink decide). */
function rvGreater(a: string, b: string): boolean {
  if (b === '') return true;
  try {
    return BigInt(a) > BigInt(b);
  } catch {
    return true;
  }
}

function errText(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}
