/**
 * The ListAndWatch loop for one resource: a TypeScript port of client-go
 * `tools/cache/reflector.go` (v1.3x, with the RV-withholding fix). Its satellites are apart, as in
 * client-go: retry-with-deadline.ts, pager.ts, watch-list.ts, watch-handler.ts (`handleAnyWatch`),
 * reflector-errors.ts (classification), plus liveness.ts, sync-progress.ts and reflector-status.ts.
 */
import { groupResourceString, type ResourceInfo } from '../apimachinery/gvr.ts';
import type { UpstreamObject } from '../apimachinery/object.ts';
import { scopeString } from '../apimachinery/resource-scope.ts';
import {
  isConnectionRefused,
  isExpired,
  isInternalError,
  isTooManyRequests,
  isWatchListDisabled,
} from '../upstream/api-errors.ts';
import { type Clock, realClock } from '../util/clock.ts';
import { ResourceVersionError } from '../util/errors.ts';
import { type Logger, silentLogger } from '../util/logger.ts';
import { Backoff } from './backoff.ts';
import type { CacheSink } from './cache-sink.ts';
import type { ListerWatcher, WatchStream } from './list-watch.ts';
import { LivenessWatchdog } from './liveness.ts';
import { type ListContext, Lister } from './pager.ts';
import {
  errText,
  isUncacheable,
  LivenessExpired,
  relistReasonOf,
  StopRequested,
} from './reflector-errors.ts';
import { type ReflectorStatus, StatusRecorder } from './reflector-status.ts';
import { newRetryWithDeadline, type RetryWithDeadline } from './retry-with-deadline.ts';
import { type SyncMode, SyncProgress } from './sync-progress.ts';
import { verifiedResume, type WarmResume, type WarmResumeContext } from './warm-resume.ts';
import { handleAnyWatch, type WatchHandlerContext, type WatchHandlers } from './watch-handler.ts';
import { type Snapshot, type WatchListContext, watchList } from './watch-list.ts';

export type { ReflectorStatus } from './reflector-status.ts';

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
  /**
   * No event/bookmark for longer than this (ms) → the stream is not proven live and, once its
   * resource has shown periodic bookmarks, presumed half-open and restarted; default 180 000.
   */
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
  /** A warm start: the sink holds a snapshot; the first attempt resumes from it (warm-resume.ts). */
  resume?: WarmResume;
  /**
   * Called with every error that ended a ListAndWatch attempt (before the backoff), e.g. the 404
   * of a custom resource whose CRD was deleted (`on-demand/caches.ts` drops its cache). Must not throw.
   */
  onError?: (err: unknown) => void;
}

/**
 * The ListAndWatch loop for one resource, writing into a {@link CacheSink}. See docs/design.md §2
 * for the rules; each method names the Go function it copies.
 *
 * Invariants:
 * - The sink only ever sees complete snapshots (`replace`) followed by events in the order the
 *   upstream sent them; a watch-list stream that fails before its end bookmark is discarded.
 * - `lastSyncResourceVersion()` is only ever an RV the upstream reached: never the RV of a
 *   synthetic ADDED of a watch started at "" or "0".
 * - At most one stream is open; `stop()` closes it and ends `run()`.
 */
export class Reflector {
  readonly #name: string;
  readonly #info: ResourceInfo;
  readonly #lw: ListerWatcher;
  readonly #sink: CacheSink;
  readonly #onError: ((err: unknown) => void) | undefined;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #useWatchList: boolean;
  readonly #backoff: Backoff;
  readonly #retry: RetryWithDeadline;
  readonly #liveness: LivenessWatchdog;
  readonly #status: StatusRecorder;
  /** What the satellites (watch-handler.ts, watch-list.ts, pager.ts) use of the reflector. */
  readonly #ctx: WatchHandlerContext & WatchListContext & ListContext & WarmResumeContext;
  readonly #lister: Lister;
  readonly #ac = new AbortController();
  #resume: ReflectorOptions['resume'];
  /**
   * The sink holds a restored snapshot whose resumed watch has delivered nothing yet: accepting
   * the request does not prove it (a watch the apiserver serves from etcd answers 200, then an
   * ERROR 410 once etcd compacted past the RV), its first event or bookmark does.
   */
  #unproven = false;

  #lastSyncRV = '';
  #rvUnavailable = false;
  #stream: WatchStream | undefined;
  /** The longest `timeoutSeconds` a watch is opened with, in ms. */
  readonly #maxWatchTimeoutMs: number;
  /** A tolerated silence was logged at info already (once per reflector; then debug). */
  #silenceLogged = false;

  constructor(opts: ReflectorOptions) {
    const name = groupResourceString(opts.info.gvr);
    const clock = opts.clock ?? realClock;
    const random = opts.random ?? Math.random;
    // A scoped cache's lines name its scope (`[fieldSelector=…]`): two proxies, two scopes.
    const scope = scopeString(opts.info.scope);
    const log = (opts.logger ?? silentLogger).child({ reflector: name, ...(scope ? { scope } : {}) });
    const minTimeout = opts.minWatchTimeoutSeconds ?? 300;
    const maxTimeout = opts.maxWatchTimeoutSeconds ?? 600;
    const progressMs = opts.progressIntervalMs ?? 5_000;
    this.#name = name;
    this.#info = opts.info;
    this.#lw = opts.lw;
    this.#sink = opts.sink;
    this.#onError = opts.onError;
    this.#resume = opts.resume;
    this.#clock = clock;
    this.#log = log;
    this.#useWatchList = opts.useWatchList ?? true;
    this.#backoff = opts.backoff ?? new Backoff({ clock, random });
    this.#retry = newRetryWithDeadline({
      maxRetryDurationMs: opts.maxInternalErrorRetryMs ?? 30_000,
      minResetPeriodMs: 60_000,
      isRetryable: isInternalError,
      clock,
    });
    this.#liveness = new LivenessWatchdog(clock, opts.livenessWindowMs ?? 180_000);
    this.#maxWatchTimeoutMs = maxTimeout * 1000;
    this.#status = new StatusRecorder(name, this.#sink, clock, log);
    this.#ctx = {
      info: opts.info,
      name,
      lw: this.#lw,
      clock,
      log,
      signal: this.#ac.signal,
      status: this.#status,
      liveness: this.#liveness,
      stopped: () => this.#stopped(),
      sleepBackoff: () => this.#sleep(this.#backoff.next()),
      watchTimeoutSeconds: () => Math.floor(minTimeout + random() * (maxTimeout - minTimeout)),
      lastSyncRV: () => this.#lastSyncRV,
      rewatchRV: () => (this.#rvUnavailable ? '' : this.#lastSyncRV),
      // client-go `relistResourceVersion`: "0" for the first list so a watch cache can serve it.
      relistRV: () => (this.#rvUnavailable ? '' : this.#lastSyncRV || '0'),
      setRVUnavailable: (unavailable) => {
        this.#rvUnavailable = unavailable;
      },
      progress: (mode: SyncMode, start: number, lastLogAt?: number) =>
        new SyncProgress({ log, clock, intervalMs: progressMs, mode, start, lastLogAt }),
      onLiveEvent: () => {
        this.#unproven = false;
        if (this.#status.synced) this.#status.setLive(true);
      },
      onPeriodicBookmark: () => this.#status.periodicBookmarkSeen(),
      handle: (w, start, exitOnInitialEventsEnd, h) => this.#handle(w, start, exitOnInitialEventsEnd, h),
      replace: (snapshot, mode, start) => this.#replace(snapshot, mode, start),
      ...(this.#sink.compact ? { compact: (o: UpstreamObject) => this.#sink.compact!(o) } : {}),
    };
    this.#lister = new Lister(this.#ctx, opts.pageSize ?? 0);
  }

  /** The RV the next watch resumes from: "" until one was earned (client-go `LastSyncResourceVersion`). */
  lastSyncResourceVersion(): string {
    return this.#lastSyncRV;
  }

  /** A copy of the current status. */
  status(): ReflectorStatus {
    return this.#status.snapshot();
  }

  /**
   * Runs ListAndWatch until {@link Reflector.stop}, sleeping a backoff between attempts
   * (client-go `Run`: `wait.BackoffUntil` immediate + sliding). Never rejects.
   */
  async run(): Promise<void> {
    const resume = this.#resume;
    this.#resume = undefined;
    if (resume) {
      this.#status.restored(resume.resourceVersion);
      this.#setLastSyncRV(resume.resourceVersion);
    }
    let resuming = resume !== undefined && (await verifiedResume(this.#ctx, resume));
    if (resume && !resuming) this.#setLastSyncRV('');
    this.#unproven = resuming;
    while (!this.#stopped()) {
      try {
        if (resuming) await this.#watch(undefined);
        else await this.#listAndWatch();
      } catch (err) {
        if (err instanceof StopRequested || this.#stopped()) break;
        if (isUncacheable(err)) {
          // Detected once; no retry can fix it (issue 11 item 9).
          this.#status.passThrough(err);
          break;
        }
        this.#status.noteError(err, 'list-and-watch failed');
        this.#onError?.(err);
      }
      resuming = false;
      this.#unproven = false;
      if (this.#stopped()) break;
      this.#status.setLive(false);
      if (!(await this.#sleep(this.#backoff.next()))) break;
    }
    this.#stream?.close();
  }

  /** Stops the loop and closes the open stream. */
  stop(): void {
    if (this.#ac.signal.aborted) return;
    this.#ac.abort(new StopRequested('reflector stopped'));
    this.#stream?.close();
  }

  #stopped(): boolean {
    return this.#ac.signal.aborted;
  }

  /** client-go `ListAndWatchWithContext`: watch-list first, LIST on any watch-list failure. */
  async #listAndWatch(): Promise<void> {
    this.#status.listAndWatchStarted();
    let w: WatchStream | undefined;
    if (this.#useWatchList) {
      try {
        w = await watchList(this.#ctx);
        this.#info.watchList = true;
      } catch (err) {
        if (err instanceof StopRequested || this.#stopped()) throw new StopRequested();
        if (isUncacheable(err)) throw err;
        // What the server answers `sendInitialEvents` follows what the upstream does (issue 11 item 8).
        if (isWatchListDisabled(err)) this.#info.watchList = false;
        // Never pass a half-consumed stream on (client-go: "ensure that we won't accidentally
        // pass some garbage down the watch").
        w = undefined;
        this.#status.watchListFellBack();
        this.#log.debug(
          { err: errText(err) },
          'data could not be fetched in watch-list mode; falling back to LIST (expected when the upstream does not support watch-list)',
        );
      }
    }
    if (!w) await this.#lister.list();
    await this.#watch(w);
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
      // Unreachable with a real apiserver (the Lister rejects an RV-less answer); guards the invariant.
      throw new ResourceVersionError(
        'KCP_ERR_UNEARNED_RESOURCE_VERSION',
        `${this.#name}: refusing to watch from unearned resourceVersion "${this.#lastSyncRV}"`,
      );
    }
    for (;;) {
      if (this.#stopped()) throw new StopRequested();
      const rv = this.#lastSyncRV;
      // Started before the request: some proxies hold the headers until the first event.
      const start = this.#clock.now();
      if (!w) {
        // While the re-watch is being opened there is no stream: past the liveness window since
        // the last event, the cache is not live any more, however long the open takes (issue 11).
        this.#liveness.arm(() => this.#status.setLive(false), this.#liveness.lastEventAt);
        try {
          w = await this.#lw.watch(
            {
              resourceVersion: rv,
              allowWatchBookmarks: true,
              timeoutSeconds: this.#ctx.watchTimeoutSeconds(),
            },
            this.#ac.signal,
          );
          this.#liveness.disarm();
        } catch (err) {
          this.#liveness.disarm();
          if (this.#stopped()) throw new StopRequested();
          if (isConnectionRefused(err) || isTooManyRequests(err) || this.#retryInternal(err)) {
            this.#status.noteError(err, 'watch request failed; backing off without relisting');
            this.#status.setLive(false);
            if (!(await this.#sleep(this.#backoff.next()))) throw new StopRequested();
            this.#status.watchRestarted();
            continue;
          }
          this.#status.relistReason('watch_open_error');
          throw err;
        }
        // The upstream just accepted a stream that resumes exactly at our RV: that is as good a
        // proof of liveness as an event (a half-open connection never gets this far) — except
        // for a restored snapshot, whose downtime an ERROR 410 in the stream may still refuse.
        if (this.#status.synced && !this.#unproven) this.#status.setLive(true);
      }
      try {
        await this.#handle(w, start, false, {
          store: (op, obj) => this.#sink[op](obj),
          bookmark: (bookmarkRV, raw) => this.#sink.bookmark(bookmarkRV, raw),
          onRV: (eventRV) => this.#setLastSyncRV(eventRV),
        });
      } catch (err) {
        w.close();
        w = undefined;
        if (err instanceof StopRequested || this.#stopped()) throw new StopRequested();
        if (isUncacheable(err)) throw err;
        if (err instanceof LivenessExpired) {
          this.#log.warn(
            { windowMs: this.#liveness.windowMs, lastResourceVersion: this.#lastSyncRV },
            'watch stream silent for longer than the liveness window; presumed half-open, restarting it',
          );
          this.#status.setLive(false);
          this.#status.watchRestarted();
          continue;
        }
        if (isExpired(err)) {
          // Relist from the last RV: a LIST at RV=N already returns data at least that fresh.
          this.#status.relistReason('expired');
          this.#log.info({ err: errText(err) }, 'watch resource version expired; relisting');
          return;
        }
        if (isTooManyRequests(err) || this.#retryInternal(err)) {
          this.#status.noteError(err, 'watch ended with a retriable error; backing off without relisting');
          if (!(await this.#sleep(this.#backoff.next()))) throw new StopRequested();
          this.#status.watchRestarted();
          continue;
        }
        this.#status.relistReason(relistReasonOf(err));
        this.#status.noteError(err, 'watch ended with an error; relisting after backoff');
        return;
      }
      w.close();
      w = undefined;
      this.#status.watchRestarted();
    }
  }

  /** An internal (5xx) error still within the retry deadline (client-go `retry.After` + `ShouldRetry`). */
  #retryInternal(err: unknown): boolean {
    if (!isInternalError(err)) return false;
    this.#retry.after(err);
    return this.#retry.shouldRetry();
  }

  /**
   * Runs {@link handleAnyWatch} on `w` as the open stream, under the liveness watchdog: a silent
   * stream is closed, which ends the loop with LivenessExpired.
   * Live phase (`exitOnInitialEventsEnd` false): events go straight to the sink and every event's
   * RV is published. Safe because a live watch always starts from an earned RV (a LIST's or a
   * watch-list bookmark's), never "" or "0": only those produce synthetic ADDED in storage order,
   * and the reflector consumes those exclusively through the watch-list temporary store.
   */
  async #handle(
    w: WatchStream,
    start: number,
    exitOnInitialEventsEnd: boolean,
    h: WatchHandlers,
  ): Promise<boolean> {
    this.#stream = w;
    this.#liveness.arm(
      () => {
        this.#status.setLive(false);
        this.#stream?.close();
      },
      undefined,
      {
        // Until the resource has shown a periodic bookmark, silence is no evidence of a dead
        // stream (the apiserver serves it without its watch cache and sends none: events by
        // default). Every watch ends by its timeoutSeconds, so one still open a window after
        // the longest timeout is half-open.
        until: () =>
          this.#status.periodicBookmarks
            ? undefined
            : start + this.#maxWatchTimeoutMs + this.#liveness.windowMs,
        onSilent: () => {
          this.#status.setLive(false);
          const msg =
            'watch stream silent for the liveness window, and the upstream has sent no periodic bookmark for this resource (served without the apiserver watch cache): kept open until its timeout; consistent reads go upstream until an event arrives';
          const fields = { windowMs: this.#liveness.windowMs, lastResourceVersion: this.#lastSyncRV };
          if (this.#silenceLogged) this.#log.debug(fields, msg);
          else this.#log.info(fields, msg);
          this.#silenceLogged = true;
        },
      },
    );
    try {
      return await handleAnyWatch(this.#ctx, w, start, exitOnInitialEventsEnd, h);
    } finally {
      this.#liveness.disarm();
      this.#stream = undefined;
    }
  }

  /** A complete snapshot goes to the sink and becomes the resume point. */
  #replace(snapshot: Snapshot, mode: SyncMode, start: number): void {
    this.#sink.replace(snapshot.objects, snapshot.resourceVersion, snapshot.endBookmark);
    // A snapshot is news from upstream: the liveness window of the next watch open counts from it.
    this.#liveness.touch();
    this.#rvUnavailable = false;
    this.#setLastSyncRV(snapshot.resourceVersion);
    this.#status.recordSync(mode, snapshot.objects.length, start);
  }

  #setLastSyncRV(rv: string): void {
    this.#lastSyncRV = rv;
    this.#status.setResourceVersion(rv);
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
