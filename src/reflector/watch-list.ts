/**
 * The watch-list burst (client-go `tools/cache/reflector.go` `watchList`, KEP-3157 streaming
 * lists): one WATCH with `sendInitialEvents=true` delivers the current state as synthetic ADDED
 * events, in storage order, ended by a BOOKMARK annotated `k8s.io/initial-events-end`. The events
 * go into a temporary store; only the complete burst becomes a snapshot, at the bookmark's RV (the
 * RVs of the synthetic ADDED are never published: they are not in increasing order).
 */
import type { UpstreamObject } from '../apimachinery/object.ts';
import type { Clock } from '../util/clock.ts';
import { WatchListIncompleteError } from '../util/errors.ts';
import type { ListerWatcher, WatchStream } from './list-watch.ts';
import { isRefusedForNow, isResourceVersionUnavailable, StopRequested } from './reflector-errors.ts';
import type { StatusRecorder } from './reflector-status.ts';
import type { SyncMode, SyncProgress } from './sync-progress.ts';
import type { StoreOp, WatchHandlers } from './watch-handler.ts';

/** A complete snapshot. */
export interface Snapshot {
  /** The objects; a key may repeat in a watch-list burst of ADDED only (the later one wins). */
  objects: UpstreamObject[];
  /** The snapshot's RV (here: the initial-events-end bookmark's). */
  resourceVersion: string;
  /** That bookmark's `object` bytes: the cache copies the upstream's bookmark shape. */
  endBookmark?: Buffer | undefined;
}

/** What {@link watchList} uses of the reflector. */
export interface WatchListContext {
  lw: ListerWatcher;
  clock: Clock;
  signal: AbortSignal;
  status: Pick<StatusRecorder, 'noteError' | 'setLive'>;
  stopped(): boolean;
  /** Sleeps the reflector's next backoff; false when stopped meanwhile. */
  sleepBackoff(): Promise<boolean>;
  watchTimeoutSeconds(): number;
  /** client-go `rewatchResourceVersion`. */
  rewatchRV(): string;
  /** true: the RV resumed from is gone or unknown, the next attempt starts at "". */
  setRVUnavailable(unavailable: boolean): void;
  progress(mode: SyncMode, start: number): SyncProgress;
  /** Runs `handleAnyWatch` on `w` under the liveness watchdog. */
  handle(w: WatchStream, start: number, exitOnInitialEventsEnd: boolean, h: WatchHandlers): Promise<boolean>;
  /** Hands a complete snapshot to the sink; it becomes the resume point. */
  replace(snapshot: Snapshot, mode: SyncMode, start: number): void;
  /** The sink's `compact` (identity when it has none). */
  compact?(obj: UpstreamObject): UpstreamObject;
}

/**
 * client-go `watchList`: the snapshot replaces the sink at the end bookmark's RV and the
 * still-open stream is returned for live events. 410 / too-large RV → retry at RV=""; 429 /
 * connection refused → retry after backoff; other errors are thrown (the caller falls back to
 * LIST, never passing a half-consumed stream on).
 * @throws StopRequested once stopped.
 */
export async function watchList(ctx: WatchListContext): Promise<WatchStream> {
  for (;;) {
    if (ctx.stopped()) throw new StopRequested();
    const start = ctx.clock.now();
    let w: WatchStream;
    try {
      w = await ctx.lw.watch(
        {
          resourceVersion: ctx.rewatchRV(),
          allowWatchBookmarks: true,
          sendInitialEvents: true,
          resourceVersionMatch: 'NotOlderThan',
          timeoutSeconds: ctx.watchTimeoutSeconds(),
        },
        ctx.signal,
      );
    } catch (err) {
      if (await retriableWithSideEffects(ctx, err)) continue;
      throw err;
    }
    let snapshot: Snapshot;
    try {
      const stream = w;
      const progress = ctx.progress('watch-list', start);
      snapshot = await collectInitialEvents((h) => ctx.handle(stream, start, true, h), progress, ctx.compact);
    } catch (err) {
      w.close();
      if (err instanceof StopRequested || ctx.stopped()) throw new StopRequested();
      if (await retriableWithSideEffects(ctx, err)) continue;
      throw err;
    }
    ctx.replace(snapshot, 'watch-list', start);
    return w;
  }
}

/** client-go watchList's `isErrorRetriableWithSideEffectsFn`. */
async function retriableWithSideEffects(ctx: WatchListContext, err: unknown): Promise<boolean> {
  if (ctx.stopped()) throw new StopRequested();
  if (isRefusedForNow(err)) {
    ctx.status.noteError(err, 'watch-list request refused; backing off');
    ctx.status.setLive(false);
    if (!(await ctx.sleepBackoff())) throw new StopRequested();
    return true;
  }
  if (isResourceVersionUnavailable(err)) {
    // The RV we resumed from is gone (or unknown to this server): start over from "".
    ctx.setRVUnavailable(true);
    ctx.status.noteError(err, 'watch-list resource version unavailable; retrying at RV=""');
    return true;
  }
  return false;
}

/**
 * Consumes a watch-list stream up to its initial-events-end bookmark. `handle` runs the event
 * loop (`handleAnyWatch` with `exitOnInitialEventsEnd`) with the given handlers and resolves true
 * when it stopped at that bookmark.
 * @throws WatchListIncompleteError when the stream ended first; `handle`'s errors.
 */
export async function collectInitialEvents(
  handle: (h: WatchHandlers) => Promise<boolean>,
  progress: SyncProgress,
  compact: (obj: UpstreamObject) => UpstreamObject = (o) => o,
): Promise<Snapshot> {
  // A burst of ADDED (what the apiserver sends) is held as a list, with no key per object (issue
  // 12: 100,000 `ns/name` strings and Map slots, ~11 MB, outlived the sync as old-generation
  // garbage); the first other event turns it into the temporary store it stands for.
  let adds: UpstreamObject[] | undefined = [];
  let temp: Map<string, UpstreamObject> | undefined;
  const store = (op: StoreOp, obj: UpstreamObject): void => {
    if (adds && op === 'add') {
      adds.push(compact(obj));
      return;
    }
    if (!temp) {
      temp = new Map();
      for (const o of adds ?? []) temp.set(keyOf(o), o);
      adds = undefined;
    }
    applyToMap(temp, op, op === 'delete' ? obj : compact(obj));
  };
  let resourceVersion = '';
  let endBookmark: Buffer | undefined;
  const done = await handle({
    store,
    bookmark: (_rv, raw) => {
      endBookmark = raw;
    },
    // Synthetic ADDED carry storage-order RVs: only an RV seen after another event type counts.
    onRV: (rv, besidesAdded) => {
      if (besidesAdded) resourceVersion = rv;
    },
    progress: () => progress.tick(() => adds?.length ?? temp?.size ?? 0),
  });
  if (!done)
    throw new WatchListIncompleteError('watch-list stream ended before the initial-events-end bookmark');
  return { objects: adds ?? [...temp!.values()], resourceVersion, endBookmark };
}

function keyOf(obj: UpstreamObject): string {
  const m = obj.object.metadata;
  return m.namespace ? `${m.namespace}/${m.name}` : m.name;
}

function applyToMap(m: Map<string, UpstreamObject>, op: StoreOp, obj: UpstreamObject): void {
  if (op === 'delete') m.delete(keyOf(obj));
  else m.set(keyOf(obj), obj);
}
