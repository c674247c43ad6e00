/**
 * LIST, GET and WATCH answered from the watch cache with the apiserver's resourceVersion
 * semantics (docs/design.md §3 serving table). `delegate.ts` decides which read a request asks
 * for; the handlers wait (bounded) for the cache to be able to serve it. Each handler returns the
 * {@link UpstreamReason} when the request must be passed upstream instead (nothing has been
 * written to the response then), undefined when it answered.
 */
import type { ServerResponse } from 'node:http';
import { type ListOptions, parseListOptions } from '../apimachinery/list-options.ts';
import type { ResourceRequest } from '../apimachinery/request-info.ts';
import { isScoped } from '../apimachinery/resource-scope.ts';
import { notFound, StatusError, tooManyRequests } from '../apimachinery/status.ts';
import type { Clock, TimerHandle } from '../util/clock.ts';
import type { CacheCodec, FieldSelector, LabelSelector, ListPage, ServedCache } from './cache-api.ts';
import { acceptsGzip, GZIP_THRESHOLD_BYTES, writeGzip } from './compress.ts';
import {
  askedMetadata,
  type CacheRead,
  getRead,
  listRead,
  type UpstreamReason,
  watchRead,
} from './delegate.ts';
import type { Limiter } from './limiter.ts';
import { writeStatus } from './send-status.ts';
import { type PendingDelete, type WriteTracker, writeKey } from './write-tracker.ts';

/** Everything a cache handler needs besides the request. */
export interface ServeContext {
  codec: CacheCodec;
  writes: WriteTracker;
  /** `cache`: RV="" reads from the cache when live and read-your-writes holds; `upstream`: always forwarded. */
  consistentReads: 'cache' | 'upstream';
  /** `--response-compression=gzip`: LIST and GET answers above 128 KiB gzip-compressed for clients that accept it. */
  gzip: boolean;
  /** How long a read waits for the cache to catch up before forwarding (ms, default 3 s). */
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

/**
 * How often (ms) a watch whose client stopped reading checks whether its watcher was closed
 * meanwhile (buffer overflow, relist, timeout, shutdown).
 */
export const STALLED_CHECK_MS = 1000;

/** Message of the apiserver's max-in-flight 429 (`filters/maxinflight.go`). */
export const TOO_MANY_REQUESTS = 'Too many requests, please try again later.';

interface Selectors {
  label: LabelSelector;
  field: FieldSelector | undefined;
}

function decodeWithSelectors(query: URLSearchParams, cache: ServedCache, codec: CacheCodec) {
  const sel: Selectors = { label: undefined, field: undefined };
  // With the upstream's WatchList gate off, `sendInitialEvents` is a 422 and a watch at RV
  // ""/"0" is not defaulted to a watch-list (issue 11 item 8: follow what the reflector saw).
  const watchList = cache.resource.watchList !== false;
  const opts = parseListOptions(
    query,
    (o) => {
      sel.label = codec.parseLabelSelector(o.labelSelector);
      sel.field = codec.parseFieldSelector(o.fieldSelector, cache.resource);
    },
    watchList,
  );
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

/** Why a wait that returned false sends the request upstream: the client left, or time ran out. */
function waitFailed(signal: AbortSignal, timeout: UpstreamReason): UpstreamReason {
  return signal.aborted ? 'aborted' : timeout;
}

/** Synced now, or within `syncWaitMs`? (Never answer from a store that has not synced once.) */
async function ready(
  cache: ServedCache,
  ctx: ServeContext,
  signal: AbortSignal,
): Promise<UpstreamReason | undefined> {
  if (cache.isSynced()) return undefined;
  if (await cache.waitSynced(ctx.syncWaitMs, signal)) return undefined;
  return waitFailed(signal, 'not-synced');
}

/**
 * May an RV="" ("most recent") read be served from the cache? Only in `cache` mode, while the
 * upstream stream is proven live, once the cache has reached every RV an answer passed
 * upstream showed a client (`behind-upstream` at once otherwise: only an upstream event or
 * bookmark moves the cache there, rarely within a wait), when no answer with an unknown RV
 * awaits one (`write-pending`), and once it has reached every RV a write through this proxy
 * returned for the resource and no longer holds what was deleted through it (waiting up to
 * `freshnessWaitMs` in all).
 */
async function consistentFromCache(
  cache: ServedCache,
  info: ResourceRequest,
  ctx: ServeContext,
  signal: AbortSignal,
): Promise<UpstreamReason | undefined> {
  if (ctx.consistentReads === 'upstream') return 'consistent-reads-upstream';
  if (!cache.isLive()) return 'not-live';
  const key = writeKey(info.group, info.resource);
  // After a stream outage the cache may be older than what clients were shown meanwhile: a
  // live stream is not enough, the cache must have caught up with that too (never back in time).
  if (cache.resourceVersion() < ctx.writes.shownRV(key)) return 'behind-upstream';
  // A write or read whose answer could not be read (CBOR, …): its RV is unknown, so only an
  // answer from upstream to a later request can tell what the cache must reach.
  if (ctx.writes.isBlind(key)) return 'write-pending';
  const deadline = ctx.clock.now() + ctx.freshnessWaitMs;
  const required = ctx.writes.required(key);
  if (cache.resourceVersion() < required) {
    if (!(await waitFresh(cache, required, ctx.freshnessWaitMs, ctx, signal)))
      return waitFailed(signal, 'write-pending');
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
          return waitFailed(signal, 'write-pending');
        }
      }
    }
    ctx.writes.resolveDeletes(key, gone);
  }
  return cache.isLive() ? undefined : 'not-live';
}

/** RV=N NotOlderThan: the cache must reach N within `freshnessWaitMs`. */
async function notOlderThan(
  cache: ServedCache,
  rv: bigint,
  ctx: ServeContext,
  signal: AbortSignal,
): Promise<UpstreamReason | undefined> {
  if (cache.resourceVersion() >= rv) return undefined;
  if (await waitFresh(cache, rv, ctx.freshnessWaitMs, ctx, signal)) return undefined;
  return waitFailed(signal, 'freshness-timeout');
}

/**
 * Waits until the cache can serve `read`: synced, then for RV="" consistent and for RV=N
 * NotOlderThan fresh enough. Exact, continue and any-RV reads need no wait beyond the sync.
 */
async function readable(
  cache: ServedCache,
  info: ResourceRequest,
  read: CacheRead,
  ctx: ServeContext,
  signal: AbortSignal,
): Promise<UpstreamReason | undefined> {
  const notReady = await ready(cache, ctx, signal);
  if (notReady) return notReady;
  if (read.mode === 'consistent') return consistentFromCache(cache, info, ctx, signal);
  if (read.mode === 'not-older-than') return notOlderThan(cache, read.rv, ctx, signal);
  return undefined;
}

/**
 * The response headers of a cache-served answer: JSON, plus the `Warning` headers the apiserver
 * sent for this resource (a deprecated version's warning; issue 11 item 7).
 */
function headersFor(
  cache: ServedCache,
  extra: Record<string, string | number>,
): Record<string, string | number | string[]> {
  const h: Record<string, string | number | string[]> = { ...JSON_HEADERS, ...extra };
  const warnings = cache.resource.warnings;
  if (warnings && warnings.length > 0) h.warning = [...warnings];
  return h;
}

/**
 * A 200 answer of `chunks`: gzip-compressed like the apiserver's (`compress.ts`) when
 * `--response-compression=gzip`, the client accepts gzip and the body exceeds 128 KiB; else
 * identity with its length.
 */
function writeChunks(
  res: ServerResponse,
  cache: ServedCache,
  chunks: readonly Buffer[],
  ctx: ServeContext,
): Promise<void> | undefined {
  let len = 0;
  for (const c of chunks) len += c.length;
  // A gzip answer resolves once written (compress.ts): the caller awaits it in its slot.
  if (ctx.gzip && len > GZIP_THRESHOLD_BYTES && acceptsGzip(res.req.headers['accept-encoding']))
    return writeGzip(res, headersFor(cache, {}), chunks);
  res.writeHead(200, headersFor(cache, { 'content-length': len }));
  // A corked writev of the item buffers, no copy. (Concatenating them into one Buffer was
  // measured slower: 10,000-pod LISTs 23.5 → 11.6 req/s, the proxy CPU-bound on the copy.)
  res.cork();
  for (const c of chunks) res.write(c);
  res.uncork();
  res.end();
  return undefined;
}

/**
 * LIST from the cache; the reason when it must go upstream instead. For a scoped cache
 * `delegate` already checked that the request's selectors contain the scope's requirements; the
 * request's full selectors are applied as for any cache.
 */
export async function serveList(
  cache: ServedCache,
  info: ResourceRequest,
  query: URLSearchParams,
  res: ServerResponse,
  ctx: ServeContext,
  signal: AbortSignal,
): Promise<UpstreamReason | undefined> {
  const { opts, sel } = decodeWithSelectors(query, cache, ctx.codec);
  if (sel.field === undefined) return 'field-selector-unknown';
  const read = listRead(opts, ctx.codec);
  if (typeof read === 'string') return read;
  const notReadable = await readable(cache, info, read, ctx, signal);
  if (notReadable) return notReadable;
  const { metadata } = askedMetadata(res.req.headers);
  let result: ListPage;
  try {
    const q: Parameters<ServedCache['list']>[0] = { labelSelector: sel.label, fieldSelector: sel.field };
    if (info.namespace !== undefined) q.namespace = info.namespace;
    if (read.mode === 'exact') q.exactRV = read.rv;
    if (read.limit > 0) q.limit = read.limit;
    if (read.mode === 'continue') q.continueFrom = read.from;
    if (metadata !== undefined) q.metadata = metadata;
    result = cache.list(q);
  } catch (err) {
    // Outside the window: etcd may still have that RV; the apiserver answers for itself.
    if (err instanceof StatusError && err.code === 410) {
      if (read.mode === 'exact') return 'exact-outside-window';
      if (read.mode === 'continue') return 'continue-outside-window';
    }
    throw err;
  }
  if (signal.aborted) return undefined;
  await writeChunks(res, cache, ctx.codec.encodeList(cache.resource, result, metadata), ctx);
  return undefined;
}

/**
 * GET of one object from the cache; the reason when it must go upstream instead. A scoped cache
 * answers only the objects it holds: for any other name it cannot prove a 404 (`outside-scope`).
 */
export async function serveGet(
  cache: ServedCache,
  info: ResourceRequest,
  query: URLSearchParams,
  res: ServerResponse,
  ctx: ServeContext,
  signal: AbortSignal,
): Promise<UpstreamReason | undefined> {
  const read = getRead(query.get('resourceVersion') ?? '');
  if (typeof read === 'string') return read;
  const notReadable = await readable(cache, info, read, ctx, signal);
  if (notReadable) return notReadable;
  const name = info.name!;
  const obj = cache.get(cache.resource.namespaced ? info.namespace : undefined, name);
  // A scoped cache holds only its scope: an object it lacks may exist outside it.
  if (!obj && isScoped(cache.resource.scope)) return 'outside-scope';
  if (!obj) throw notFound(cache.resource.gvr.group, cache.resource.gvr.resource, name);
  if (signal.aborted) return undefined;
  const { metadata: m } = askedMetadata(res.req.headers);
  await writeChunks(res, cache, m ? obj.metadataWire(m) : [...obj.wire, NEWLINE], ctx);
  return undefined;
}

/** The apiserver's JSON serializer ends a GET answer with a newline (Go `json.Encoder.Encode`). */
const NEWLINE = Buffer.from('\n');

/** Writes one watch event (a Buffer, or the chunks of one line, corked: one writev); false = backpressure. */
function writeLine(res: ServerResponse, line: Buffer | readonly Buffer[]): boolean {
  if (Buffer.isBuffer(line)) return res.write(line);
  res.cork();
  let ok = true;
  for (const c of line) ok = res.write(c);
  res.uncork();
  return ok;
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

/**
 * WATCH from the cache: chunked JSON lines, one event per line, flushed per event; the reason
 * when it must go upstream instead.
 */
export async function serveWatch(
  cache: ServedCache,
  info: ResourceRequest,
  query: URLSearchParams,
  res: ServerResponse,
  ctx: ServeContext,
  signal: AbortSignal,
): Promise<UpstreamReason | undefined> {
  const { opts, sel } = decodeWithSelectors(query, cache, ctx.codec);
  if (sel.field === undefined) return 'field-selector-unknown';
  const read = watchRead(opts);
  if (typeof read === 'string') return read;
  const notReadable = await readable(cache, info, read, ctx, signal);
  if (notReadable) return notReadable;
  if (signal.aborted) return undefined;
  // A resume below the window (a proxy restarted, its clients resume from older RVs): the
  // cache may prove with its upstream that nothing changed since, instead of a 410 (docs/design.md §6).
  if (
    read.mode !== 'consistent' &&
    read.mode !== 'continue' &&
    read.rv > 0n &&
    opts.sendInitialEvents !== true
  )
    await cache.extendWindowBack?.(read.rv, signal);
  if (signal.aborted) return undefined;
  const release = ctx.watchers.tryAcquire();
  if (!release) {
    writeStatus(res, tooManyRequests(TOO_MANY_REQUESTS, 1));
    return undefined;
  }
  const timeoutMs = watchTimeoutMs(opts, ctx);
  const q: Parameters<ServedCache['watch']>[0] = {
    labelSelector: sel.label,
    fieldSelector: sel.field,
    allowWatchBookmarks: opts.allowWatchBookmarks,
    // The cache needs the deadline to send its bookmark 2 s before it, so the client resumes
    // from a fresh RV instead of an old one that may have left the window.
    timeoutMs,
    ...askedMetadata(res.req.headers),
  };
  if (info.namespace !== undefined) q.namespace = info.namespace;
  if (read.mode !== 'consistent' && read.mode !== 'continue') q.resourceVersion = read.rv;
  if (opts.sendInitialEvents !== undefined) q.sendInitialEvents = opts.sendInitialEvents;
  let w: ReturnType<ServedCache['watch']>;
  try {
    w = cache.watch(q);
  } catch (err) {
    release();
    throw err;
  }
  res.writeHead(200, headersFor(cache, { 'transfer-encoding': 'chunked' }));
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
  w.stream.on('data', (line: Buffer | readonly Buffer[]) => {
    if (!writeLine(res, line)) {
      w.stream.pause();
      stallTimer ??= ctx.clock.setTimeout(checkStalled, STALLED_CHECK_MS);
      res.once('drain', () => {
        if (stallTimer !== undefined) ctx.clock.clearTimeout(stallTimer);
        stallTimer = undefined;
        w.stream.resume();
      });
    }
  });
  return undefined;
}
