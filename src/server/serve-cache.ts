/**
 * LIST, GET and WATCH answered from the watch cache with the apiserver's resourceVersion
 * semantics (docs/design.md §3 serving table; apiserver `storage/cacher/delegator.go` decides cache
 * vs storage the same way). Each handler returns false when the request must be passed
 * upstream instead (nothing has been written to the response then), true when it answered.
 */
import type { ServerResponse } from 'node:http';
import { type ListOptions, parseListOptions, parseResourceVersion } from '../apimachinery/list-options.ts';
import type { ResourceRequest } from '../apimachinery/request-info.ts';
import { notFound, StatusError, tooManyRequests } from '../apimachinery/status.ts';
import type { Clock, TimerHandle } from '../util/clock.ts';
import type {
  CacheCodec,
  ContinueFrom,
  FieldSelector,
  LabelSelector,
  ListPage,
  ServedCache,
} from './cache-api.ts';
import type { Limiter } from './limiter.ts';
import { writeStatus } from './send-status.ts';
import { type PendingDelete, type WriteTracker, writeKey } from './write-tracker.ts';

/** Everything a cache handler needs besides the request. */
export interface ServeContext {
  codec: CacheCodec;
  writes: WriteTracker;
  /** `cache`: RV="" reads from the cache when live and read-your-writes holds; `upstream`: always forwarded. */
  consistentReads: 'cache' | 'upstream';
  /** How long a read waits for the cache to catch up before forwarding (ms; 3 s, docs/design.md §3). */
  freshnessWaitMs: number;
  /** How long a request for an unsynced resource waits before forwarding (ms). */
  syncWaitMs: number;
  /**
   * The apiserver's `--min-request-timeout` (ms, default 1800 s): a watch without
   * `timeoutSeconds` lasts a uniformly random duration in [min, 2·min) (`handlers/get.go`).
   */
  minRequestTimeoutMs: number;
  clock: Clock;
  random: () => number;
  watchers: Limiter;
  /** Registers a function that ends the watch cleanly at shutdown; returns its unregister. */
  trackWatch: (end: () => void) => () => void;
  /** Called after every wait for freshness: seconds waited, and whether the cache caught up. */
  onReadWait?: (cache: ServedCache, seconds: number, result: 'fresh' | 'timeout') => void;
}

const JSON_HEADERS = { 'content-type': 'application/json', 'cache-control': 'no-cache, private' };

/** Message of the apiserver's max-in-flight 429 (`filters/maxinflight.go`). */
/**
 * How often (ms) a watch whose client stopped reading checks whether its watcher was closed
 * meanwhile (buffer overflow, relist, timeout, shutdown).
 */
export const STALLED_CHECK_MS = 1000;

export const TOO_MANY_REQUESTS = 'Too many requests, please try again later.';

interface Selectors {
  label: LabelSelector;
  field: FieldSelector | undefined;
}

function decodeWithSelectors(query: URLSearchParams, cache: ServedCache, codec: CacheCodec) {
  const sel: Selectors = { label: undefined, field: undefined };
  const opts = parseListOptions(query, (o) => {
    sel.label = codec.parseLabelSelector(o.labelSelector);
    sel.field = codec.parseFieldSelector(o.fieldSelector, cache.resource);
  });
  return { opts, sel };
}

/**
 * `cache.waitUntilFresh` that reports how long the request waited and whether the cache caught
 * up (`kube_cache_proxy_watch_cache_read_wait_seconds`).
 */
async function waitFresh(
  cache: ServedCache,
  rv: bigint,
  timeoutMs: number,
  ctx: ServeContext,
  signal: AbortSignal,
): Promise<boolean> {
  const t0 = ctx.clock.now();
  const ok = await cache.waitUntilFresh(rv, timeoutMs, signal);
  ctx.onReadWait?.(cache, (ctx.clock.now() - t0) / 1000, ok ? 'fresh' : 'timeout');
  return ok;
}

/** Synced now, or within `syncWaitMs`? (Never answer from a store that has not synced once.) */
async function ready(cache: ServedCache, ctx: ServeContext, signal: AbortSignal): Promise<boolean> {
  if (cache.isSynced()) return true;
  return cache.waitSynced(ctx.syncWaitMs, signal);
}

/**
 * May an RV="" ("most recent") read be served from the cache? Only in `cache` mode, while the
 * upstream stream is proven live, once the cache has reached every RV a write through this
 * proxy returned for the resource and no longer holds what was deleted through it (waiting
 * up to `freshnessWaitMs` in all).
 */
async function consistentFromCache(
  cache: ServedCache,
  info: ResourceRequest,
  ctx: ServeContext,
  signal: AbortSignal,
): Promise<boolean> {
  if (ctx.consistentReads === 'upstream' || !cache.isLive()) return false;
  const key = writeKey(info.group, info.resource);
  const deadline = ctx.clock.now() + ctx.freshnessWaitMs;
  const required = ctx.writes.required(key);
  if (cache.resourceVersion() < required) {
    if (!(await waitFresh(cache, required, ctx.freshnessWaitMs, ctx, signal))) return false;
  }
  // Deletes answered without an RV: fresh once the deleted incarnation is gone from the cache.
  // Each event advances the cache RV, so wait for "one more event" until it is gone.
  const pending = ctx.writes.pendingDeletes(key, ctx.clock.now());
  if (pending.length > 0) {
    const gone = new Set<PendingDelete>();
    for (const d of pending) {
      for (;;) {
        const o = cache.get(cache.resource.namespaced ? d.namespace : undefined, d.name);
        if (!o || (d.uid !== undefined && o.object.metadata.uid !== d.uid)) {
          gone.add(d);
          break;
        }
        const left = deadline - ctx.clock.now();
        if (left <= 0 || !(await waitFresh(cache, cache.resourceVersion() + 1n, left, ctx, signal))) {
          ctx.writes.resolveDeletes(key, gone);
          return false;
        }
      }
    }
    ctx.writes.resolveDeletes(key, gone);
  }
  return cache.isLive();
}

/** RV=N NotOlderThan: the cache must reach N within `freshnessWaitMs`. */
async function notOlderThan(cache: ServedCache, rv: bigint, ctx: ServeContext, signal: AbortSignal) {
  if (cache.resourceVersion() >= rv) return true;
  return waitFresh(cache, rv, ctx.freshnessWaitMs, ctx, signal);
}

function writeChunks(res: ServerResponse, chunks: Buffer[]): void {
  let len = 0;
  for (const c of chunks) len += c.length;
  res.writeHead(200, { ...JSON_HEADERS, 'content-length': len });
  // A corked writev of the item buffers, no copy. (Concatenating them into one Buffer was
  // measured slower: 10,000-pod LISTs 23.5 → 11.6 req/s, the proxy CPU-bound on the copy.)
  res.cork();
  for (const c of chunks) res.write(c);
  res.uncork();
  res.end();
}

/** LIST from the cache. */
export async function serveList(
  cache: ServedCache,
  info: ResourceRequest,
  query: URLSearchParams,
  res: ServerResponse,
  ctx: ServeContext,
  signal: AbortSignal,
): Promise<boolean> {
  const { opts, sel } = decodeWithSelectors(query, cache, ctx.codec);
  if (sel.field === undefined) return false;
  const rv = parseResourceVersion(opts.resourceVersion);
  if (rv === null) return false;
  const exact = opts.resourceVersionMatch === 'Exact';
  // The apiserver ignores `limit` for RV="0" (any-RV) lists served by its cache.
  const limit = rv === 0n && !exact ? 0 : opts.limit;
  // A page at RV=N without resourceVersionMatch is the legacy exact read (cacher delegator.go).
  const legacyExact = opts.resourceVersionMatch === '' && limit > 0 && rv !== undefined && rv !== 0n;
  let continueFrom: ContinueFrom | undefined;
  if (opts.continue !== '') {
    // continue with resourceVersion=N: the apiserver's own 400 ("specifying resource version is
    // not allowed when using continue", etcd3 store); the cache used to serve the page.
    if (rv !== undefined && rv !== 0n) return false;
    continueFrom = ctx.codec.decodeContinue(opts.continue);
    if (!continueFrom) return false;
  }
  if (!(await ready(cache, ctx, signal))) return false;
  let exactRV: bigint | undefined;
  if (continueFrom) {
    // The snapshot is pinned at the token's RV: served only while it is inside the window.
  } else if (rv === undefined) {
    if (!(await consistentFromCache(cache, info, ctx, signal))) return false;
  } else if (exact || legacyExact) {
    exactRV = rv;
  } else if (rv !== 0n && !(await notOlderThan(cache, rv, ctx, signal))) return false;
  let result: ListPage;
  try {
    const q: Parameters<ServedCache['list']>[0] = { labelSelector: sel.label, fieldSelector: sel.field };
    if (info.namespace !== undefined) q.namespace = info.namespace;
    if (exactRV !== undefined) q.exactRV = exactRV;
    if (limit > 0) q.limit = limit;
    if (continueFrom) q.continueFrom = continueFrom;
    result = cache.list(q);
  } catch (err) {
    // Outside the window: etcd may still have that RV; the apiserver answers for itself.
    if (err instanceof StatusError && err.code === 410 && (exactRV !== undefined || continueFrom))
      return false;
    throw err;
  }
  if (signal.aborted) return true;
  writeChunks(res, ctx.codec.encodeList(cache.resource, result));
  return true;
}

/** GET of one object from the cache. */
export async function serveGet(
  cache: ServedCache,
  info: ResourceRequest,
  query: URLSearchParams,
  res: ServerResponse,
  ctx: ServeContext,
  signal: AbortSignal,
): Promise<boolean> {
  const rv = parseResourceVersion(query.get('resourceVersion') ?? '');
  if (rv === null) return false;
  if (!(await ready(cache, ctx, signal))) return false;
  if (rv === undefined) {
    if (!(await consistentFromCache(cache, info, ctx, signal))) return false;
  } else if (rv !== 0n && !(await notOlderThan(cache, rv, ctx, signal))) return false;
  const name = info.name!;
  const obj = cache.get(cache.resource.namespaced ? info.namespace : undefined, name);
  if (!obj) throw notFound(cache.resource.gvr.group, cache.resource.gvr.resource, name);
  if (signal.aborted) return true;
  writeChunks(res, [obj.raw]);
  return true;
}

/** Longest delay a Node timer takes (ms, 2^31 - 1, about 24.8 days); longer ones fire after 1 ms. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Watch duration (ms): `timeoutSeconds` when given, else the apiserver's jittered default.
 * Capped at {@link MAX_TIMER_MS}: `timeoutSeconds=2147484` or more (the apiserver keeps such a
 * watch open) otherwise overflowed the timers and ended the watch after 1 ms.
 */
export function watchTimeoutMs(opts: ListOptions, ctx: ServeContext): number {
  if (opts.timeoutSeconds !== undefined && opts.timeoutSeconds !== 0)
    return Math.min(MAX_TIMER_MS, Math.max(0, opts.timeoutSeconds * 1000));
  return Math.floor(ctx.minRequestTimeoutMs * (ctx.random() + 1));
}

/** WATCH from the cache: chunked JSON lines, one event per line, flushed per event. */
export async function serveWatch(
  cache: ServedCache,
  info: ResourceRequest,
  query: URLSearchParams,
  res: ServerResponse,
  ctx: ServeContext,
  signal: AbortSignal,
): Promise<boolean> {
  const { opts, sel } = decodeWithSelectors(query, cache, ctx.codec);
  if (sel.field === undefined) return false;
  const rv = parseResourceVersion(opts.resourceVersion);
  if (rv === null) return false;
  if (!(await ready(cache, ctx, signal))) return false;
  if (rv === undefined) {
    // A watch at "most recent" starts from a consistent state, like a consistent LIST.
    if (!(await consistentFromCache(cache, info, ctx, signal))) return false;
  } else if (rv !== 0n && opts.sendInitialEvents === true) {
    // The initial state must be at least N; the apiserver's own answer when it is not.
    if (!(await notOlderThan(cache, rv, ctx, signal))) return false;
  }
  if (signal.aborted) return true;
  const release = ctx.watchers.tryAcquire();
  if (!release) {
    writeStatus(res, tooManyRequests(TOO_MANY_REQUESTS, 1));
    return true;
  }
  const timeoutMs = watchTimeoutMs(opts, ctx);
  const q: Parameters<ServedCache['watch']>[0] = {
    labelSelector: sel.label,
    fieldSelector: sel.field,
    allowWatchBookmarks: opts.allowWatchBookmarks,
    // The cache needs the deadline to send its bookmark 2 s before it, so the client resumes
    // from a fresh RV instead of an old one that may have left the window.
    timeoutMs,
  };
  if (info.namespace !== undefined) q.namespace = info.namespace;
  if (rv !== undefined) q.resourceVersion = rv;
  if (opts.sendInitialEvents !== undefined) q.sendInitialEvents = opts.sendInitialEvents;
  let w: ReturnType<ServedCache['watch']>;
  try {
    w = cache.watch(q);
  } catch (err) {
    release();
    throw err;
  }
  res.writeHead(200, { ...JSON_HEADERS, 'transfer-encoding': 'chunked' });
  res.flushHeaders();
  // A client that stopped reading: the response cannot drain, so the watcher's stream is paused
  // and its end (overflow, relist, timeout, shutdown) is never read, 'end' never fires and
  // res.end() never completes. Once the watcher is closed nothing more can reach that client:
  // cut the connection (it resumes by RV), the only way to free it. The apiserver likewise
  // drops a watcher that blocks its dispatch (storage/cacher/cache_watcher.go).
  let stallTimer: TimerHandle | undefined;
  const checkStalled = () => {
    stallTimer = undefined;
    if (!w.closed) {
      stallTimer = ctx.clock.setTimeout(checkStalled, STALLED_CHECK_MS);
      return;
    }
    finish();
    res.destroy();
  };
  const finish = () => {
    ctx.clock.clearTimeout(timer);
    untrack();
    release();
    if (!w.closed) w.close();
    if (!res.writableEnded) res.end();
    // Dropped for not reading (overflow): the watch ends once its backlog drains, and the
    // connection is closed after it (FIN after the pending bytes) rather than kept alive for a
    // client that is stuck. shouldKeepAlive is fixed when the headers go out, hence socket.end().
    if (w.closeReason === 'overflow') res.socket?.end();
  };
  const timer = ctx.clock.setTimeout(finish, timeoutMs);
  // At shutdown: end cleanly AND close the connection (not left idle in keep-alive).
  const untrack = ctx.trackWatch(() => {
    res.shouldKeepAlive = false;
    finish();
  });
  res.on('close', () => {
    if (stallTimer !== undefined) ctx.clock.clearTimeout(stallTimer);
    stallTimer = undefined;
    finish();
  });
  w.stream.on('end', finish);
  w.stream.on('error', () => {
    finish();
    res.destroy();
  });
  w.stream.on('data', (chunk: Buffer) => {
    if (!res.write(chunk)) {
      w.stream.pause();
      stallTimer ??= ctx.clock.setTimeout(checkStalled, STALLED_CHECK_MS);
      res.once('drain', () => {
        if (stallTimer !== undefined) ctx.clock.clearTimeout(stallTimer);
        stallTimer = undefined;
        w.stream.resume();
      });
    }
  });
  return true;
}
