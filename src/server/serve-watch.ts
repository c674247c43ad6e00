/**
 * WATCH answered from the watch cache (docs/design.md §3): the read decoded and waited for
 * (`read-your-writes/consistent-read.ts`), a resume below the window proved by the upstream
 * where it can be, a watcher slot of `--max-watchers`, then one JSON line per event, flushed per
 * event, until the watch's timeout, its watcher's end, the client leaving, or shutdown. A client
 * that stops reading has its watcher parked (`cache/cache-watcher.ts`): the connection stays
 * open and the watch resumes from the history when the response drains; it is cut only once its
 * watcher was closed (parking disabled, or the bound on parked watchers), as the apiserver's
 * `cache_watcher.go` drops a watcher that blocks its dispatch. A watcher that fell out of the
 * window is not cut: its backlog and its 410 ERROR event wait for the client until the timeout.
 */
import type { ServerResponse } from 'node:http';
import type { ListOptions } from '../apimachinery/list-options.ts';
import { PROTOBUF_WATCH_CONTENT_TYPE } from '../apimachinery/protobuf/envelope.ts';
import { tooManyRequests } from '../apimachinery/status.ts';
import { isTransient, releaseTransient } from '../util/buffer-pool.ts';
import type { TimerHandle } from '../util/clock.ts';
import type { ServedCache } from './cache-api.ts';
import { watchRead } from './delegate.ts';
import {
  answerEncoding,
  jsonFallback,
  protobufAnswers,
  protobufWatchFrame,
  watchableInProtobuf,
} from './protobuf-answers.ts';
import { readable } from './read-your-writes/consistent-read.ts';
import { writeKey } from './read-your-writes/write-tracker.ts';
import { writeStatus } from './send-status.ts';
import {
  type CacheHandler,
  decodeWithSelectors,
  headersFor,
  type ServeContext,
  TOO_MANY_REQUESTS,
} from './serve-context.ts';
import { askedTable, TableWatchEncoder } from './serve-table.ts';
import { shardRead } from './shard-support.ts';

/**
 * How often (ms) a watch whose client stopped reading checks whether its watcher was closed
 * meanwhile (buffer overflow without parking, the parked bound, relist, timeout, shutdown).
 */
export const STALLED_CHECK_MS = 1000;

/**
 * Writes one watch event (a Buffer, or the chunks of one line, corked: one writev); false =
 * backpressure. A Buffer of util/buffer-pool.ts's blocks (an initial event's protobuf frame) is
 * handed back once the socket wrote it, so its block is freed without waiting for a full GC.
 */
function writeLine(res: ServerResponse, line: Buffer | readonly Buffer[]): boolean {
  if (Buffer.isBuffer(line))
    return isTransient(line)
      ? res.write(line, (err) => {
          if (!err) releaseTransient(line);
        })
      : res.write(line);
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
 * (A negative one never gets here: {@link serveWatch} ends such a watch before it starts.)
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
export const serveWatch: CacheHandler = async (cache, info, query, res, ctx, signal) => {
  const { opts, sel } = decodeWithSelectors(query, cache, ctx.codec);
  if (sel.field === undefined) return 'field-selector-unknown';
  const shard = shardRead(query, cache, info.namespace, ctx.shardSupport);
  if (typeof shard === 'string') return shard;
  const read = watchRead(opts);
  if (typeof read === 'string') return read;
  const enc = answerEncoding(res.req.headers, protobufAnswers(ctx), cache.resource);
  if (typeof enc === 'string') return enc;
  let protobuf = enc.encoding === 'protobuf';
  const asked = askedTable(res.req.headers, query, cache.resource, ctx.tablePrinter);
  if (asked === 'table-printer') return asked;
  // A kind whose events the encoder may decline mid-stream: JSON when the client takes it.
  if (protobuf && enc.metadata === undefined && !watchableInProtobuf(cache.resource)) {
    if (!jsonFallback(res.req.headers, cache.resource, undefined)) return 'protobuf-inexact';
    protobuf = false;
  }
  const type: Record<string, string> = protobuf ? { 'content-type': PROTOBUF_WATCH_CONTENT_TYPE } : {};
  // A negative timeoutSeconds: the apiserver's watch context (`context.WithTimeout` in
  // handlers/get.go `handleWatch`) is done before the watch starts; it answers 200 and ends the
  // stream at once with no event (checked on v1.37.2 for RV "", "0", N and watch-lists; now and
  // then an event or an ERROR "context deadline exceeded" slips out first, a race of its watcher).
  if (opts.timeoutSeconds !== undefined && opts.timeoutSeconds < 0) {
    res.writeHead(200, headersFor(cache, { 'transfer-encoding': 'chunked', ...type }));
    res.end();
    return undefined;
  }
  const notReadable = await readable(cache, info, read, ctx, signal);
  if (notReadable) return notReadable;
  if (signal.aborted) return undefined;
  // A resume below the window (a proxy restarted, its clients resume from older RVs): the
  // cache may prove with its upstream that nothing changed since, instead of a 410 (docs/design.md §6).
  // When it cannot, the cache answers 410 — except for an RV this proxy itself showed a client
  // of the resource in a forwarded answer moments ago (the LIST that started an on-demand cache
  // is answered upstream, below the cache's first snapshot): the apiserver still streams a watch
  // from it, so it answers for itself. (A 410 there failed the upstream e2e ResourceQuota status
  // spec: "too old resource version: 258 (259)" for the RV of the LIST it had just made.)
  if (
    read.mode !== 'consistent' &&
    read.mode !== 'continue' &&
    read.rv > 0n &&
    opts.sendInitialEvents !== true
  ) {
    const inWindow = await cache.extendWindowBack?.(read.rv, signal);
    if (signal.aborted) return undefined;
    if (
      inWindow === false &&
      ctx.writes.shownRecently(writeKey(info.group, info.resource), read.rv, ctx.clock.now())
    )
      return 'watch-outside-window';
  }
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
    ...(enc.metadata !== undefined ? { metadata: enc.metadata } : {}),
  };
  if (info.namespace !== undefined) q.namespace = info.namespace;
  if (shard.selector) q.shardSelector = shard.selector;
  if (read.mode !== 'consistent' && read.mode !== 'continue') q.resourceVersion = read.rv;
  if (opts.sendInitialEvents !== undefined) q.sendInitialEvents = opts.sendInitialEvents;
  let w: ReturnType<ServedCache['watch']>;
  try {
    w = cache.watch(q);
  } catch (err) {
    release();
    throw err;
  }
  res.writeHead(200, headersFor(cache, { 'transfer-encoding': 'chunked', ...type }));
  res.flushHeaders();
  // A client that stopped reading: the response cannot drain, so the watcher's stream is paused
  // (its watcher parks once its queue is full and resumes when 'drain' resumes the stream) and
  // its end (overflow, parked bound, relist, timeout, shutdown) is never read, 'end' never fires
  // and res.end() never completes. Once the watcher is closed nothing more can reach that client:
  // cut the connection (it resumes by RV), the only way to free it. The apiserver likewise
  // drops a watcher that blocks its dispatch (storage/cacher/cache_watcher.go). Not a watcher
  // that fell out of the window: as the apiserver's drain mode (KEP-6268), its backlog and then
  // its 410 ERROR event are delivered if the client reads before the watch's timeout.
  let stallTimer: TimerHandle | undefined;
  const checkStalled = () => {
    stallTimer = undefined;
    if (!w.closed || w.closeReason === 'fell-behind') {
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
    if (w.closeReason === 'overflow' || w.closeReason === 'parked-bound') res.socket?.end();
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
  const watched = { resource: cache.resource, metadata: enc.metadata };
  const table = asked ? new TableWatchEncoder(asked, () => ctx.clock.now()) : undefined;
  w.stream.on('data', (line: Buffer | readonly Buffer[]) => {
    if (res.writableEnded) return;
    let out = line;
    try {
      if (protobuf) out = protobufWatchFrame(line, watched);
      else if (table) out = table.encode(line);
    } catch (err) {
      // An event the encoder cannot write exactly (CannotEncode: a relist of such objects goes
      // upstream as protobuf-inexact) or the printer fails on: the watch ends and the client
      // re-watches, as the apiserver's watch handler ends on an encoder error, logged (k8s.io/apiserver
      // `endpoints/handlers/watch.go`: HandleErrorWithContext(…, "Failed to encode watch event"),
      // return). Thrown from this handler, it would end the process.
      ctx.log?.error(
        {
          group: cache.resource.gvr.group,
          resource: cache.resource.gvr.resource,
          encoding: protobuf ? 'protobuf' : 'table',
          err,
        },
        'watch ended: failed to encode watch event',
      );
      finish();
      return;
    }
    // Wait for 'drain' only while the response still needs one: a line of chunks over the
    // high-water mark, written corked, answers false, and `uncork()` emits 'drain' at once when
    // the socket took it all (Node 24 `_http_outgoing.js`), before this listener could be added;
    // a watch paused for that 'drain' stalled until its timeout (writableNeedDrain is then false).
    if (!writeLine(res, out) && res.writableNeedDrain) {
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
};
