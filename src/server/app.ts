/**
 * The main listener: pure Kubernetes API (docs/design.md §5). Every request is classified by
 * `router.ts`; cacheable LIST/GET/WATCH are answered by `serve-cache.ts`, everything else (and
 * anything the cache declines) is passed through by `passthrough.ts`. HTTP Upgrade
 * (exec/attach/port-forward) is answered 501 for now.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import { parseGoQuery } from '../apimachinery/go-query.ts';
import { isLongRunning, isWatchParam } from '../apimachinery/request-info.ts';
import { requestVerb } from '../apimachinery/request-verb.ts';
import { notImplemented, tooManyRequests } from '../apimachinery/status.ts';
import type { Metrics } from '../ops/metrics.ts';
import { type Clock, realClock } from '../util/clock.ts';
import type { Logger } from '../util/logger.ts';
import type { CacheCodec, ServedCache } from './cache-api.ts';
import { Limiter } from './limiter.ts';
import { passThrough } from './passthrough.ts';
import { CacheRegistry, route } from './router.ts';
import { writeStatus } from './send-status.ts';
import { type ServeContext, serveGet, serveList, serveWatch, TOO_MANY_REQUESTS } from './serve-cache.ts';
import type { UpstreamTarget } from './upstream-target.ts';
import { WriteTracker, writeEffectOf, writeKey } from './write-tracker.ts';

/** Options of {@link buildServer}. Durations in ms. */
export interface ServerOptions {
  upstream: UpstreamTarget;
  caches: ServedCache[];
  codec: CacheCodec;
  /** `--namespace`: caches hold only this namespace; other namespaces go upstream. */
  namespace?: string;
  consistentReads: 'cache' | 'upstream';
  /** Cap on concurrent short (non-long-running) requests; default 400 (apiserver `--max-requests-inflight`). */
  maxInflight?: number;
  /** Cap on concurrent watches and other long-running requests; default 1000. */
  maxWatchers?: number;
  freshnessWaitMs?: number;
  syncWaitMs?: number;
  minRequestTimeoutMs?: number;
  /** Request counters/latency (`kube_cache_proxy_requests_total{…,served_from}`); optional. */
  metrics?: Pick<Metrics, 'requests' | 'requestDuration' | 'readWait'>;
  /** How long shutdown lets short requests finish before cutting connections (ms, default 5000). */
  shutdownGraceMs?: number;
  clock?: Clock;
  random?: () => number;
  logger: Logger;
}

/** A built server. */
export interface KubeServer {
  app: FastifyInstance;
  writes: WriteTracker;
  /** Starts serving a resource from `cache` (caches appear as discovery of each resource succeeds). */
  addCache(cache: ServedCache): void;
  /** Stops accepting, ends open watches and streams cleanly, waits for short requests. */
  shutdown(): Promise<void>;
}

const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** The message of the 501 for HTTP Upgrade requests. */
export const UPGRADE_MESSAGE =
  'kube-cache-proxy does not support upgraded connections (exec, attach, port-forward) yet; use the apiserver directly for them';

/** Largest request line + headers accepted (bytes), as the apiserver's 1 MiB. */
export const MAX_HEADER_BYTES = 1 << 20;

/** Whether an `Upgrade` header asks for a stream protocol the apiserver speaks (WebSocket, SPDY). */
export function isStreamUpgrade(upgrade: string | undefined): boolean {
  if (!upgrade) return false;
  return upgrade
    .split(',')
    .map((t) => t.trim().toLowerCase())
    .some((t) => t === 'websocket' || t.startsWith('spdy/'));
}

/**
 * The origin-form (`/path?query`) of a request target. An absolute-form target
 * (`GET http://host/api/v1/pods`, RFC 9112 §3.2.2: what clients send to an HTTP proxy) is
 * served by the apiserver (Go's server) as its path; passed on verbatim it failed upstream
 * (HTTP/2 `:path` must be a path: 503 "Stream closed with error code NGHTTP2_PROTOCOL_ERROR").
 */
export function originForm(target: string): string {
  const m = /^https?:\/\/[^/?#]*(.*)$/i.exec(target);
  if (!m) return target;
  const rest = m[1]!;
  return rest.startsWith('/') ? rest : `/${rest}`;
}

/** Builds the fastify app (not listening). */
export function buildServer(opts: ServerOptions): KubeServer {
  const log = opts.logger;
  const app = Fastify({
    loggerInstance: log as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    routerOptions: { ignoreDuplicateSlashes: false, maxParamLength: 10_000 },
    // The apiserver accepts request lines + headers up to 1 MiB (Go's http.DefaultMaxHeaderBytes,
    // `server.MaxHeaderBytes` in apiserver secure serving); Node's default is 16 KiB, which
    // answered long label selectors (`in (...)` of a few thousand values) 431 instead.
    // Only stream upgrades (exec/attach/port-forward/websocket: `websocket`, `SPDY/3.1`) get the
    // 501 below; any other `Upgrade` (e.g. `h2c`, sent by `curl --http2`) is a normal request, as
    // Go's server ignores it (it was 501 for every such request, even a plain LIST).
    http: {
      maxHeaderSize: MAX_HEADER_BYTES,
      shouldUpgradeCallback: (req: IncomingMessage) => isStreamUpgrade(req.headers.upgrade),
    },
  });
  const registry = new CacheRegistry(opts.caches, opts.namespace);
  const writes = new WriteTracker();
  const inflight = new Limiter(opts.maxInflight ?? 400);
  // Short requests passed upstream have their own slots: when the apiserver hangs (frozen,
  // black-holed) they wait up to the upstream header timeout, and must not take every slot the
  // requests answered from the cache need (README: RV=0 reads keep working while it is down).
  const upstreamInflight = new Limiter(opts.maxInflight ?? 400);
  const watchers = new Limiter(opts.maxWatchers ?? 1000);
  const open = new Set<() => void>();
  const track = (end: () => void) => {
    open.add(end);
    return () => open.delete(end);
  };
  const ctx: ServeContext = {
    codec: opts.codec,
    writes,
    consistentReads: opts.consistentReads,
    freshnessWaitMs: opts.freshnessWaitMs ?? 3000,
    syncWaitMs: opts.syncWaitMs ?? 3000,
    minRequestTimeoutMs: opts.minRequestTimeoutMs ?? 1_800_000,
    clock: opts.clock ?? realClock,
    random: opts.random ?? Math.random,
    watchers,
    trackWatch: track,
  };
  const m = opts.metrics;
  if (m) {
    ctx.onReadWait = (cache, seconds, result) =>
      m.readWait.observe(
        { group: cache.resource.gvr.group, resource: cache.resource.gvr.resource, result },
        seconds,
      );
  }

  // Bodies are streamed upstream untouched: no parser ever reads them.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req, _payload, done) => done(null));

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = originForm(req.url ?? '/');
    req.url = url;
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const query = parseGoQuery(q < 0 ? '' : url.slice(q + 1));
    const method = req.method ?? 'GET';
    const longRunning = isLongRunning(path, query);
    const r = route(registry, method, path, query, req.headers);
    const shortSlots = r.kind === 'cache' ? inflight : upstreamInflight;
    let release = longRunning ? watchers.tryAcquire() : shortSlots.tryAcquire();
    if (!release) return writeStatus(res, tooManyRequests(TOO_MANY_REQUESTS, 1));
    const ac = new AbortController();
    // Abort waits/upstream calls only when the client left early: an abort builds an exception
    // with a stack trace, measurable on every request (bench: 3% of busy CPU).
    res.on('close', () => {
      if (!res.writableFinished) ac.abort();
    });
    let servedFrom: 'cache' | 'upstream' = 'upstream';
    const started = ctx.clock.now();
    try {
      if (opts.metrics) {
        const m = opts.metrics;
        const verb = requestVerb(method, r.info, isWatchParam(query.get('watch')));
        res.once('close', () => {
          const labels = {
            verb,
            group: r.info?.group ?? '',
            version: r.info?.version ?? '',
            resource: r.info?.resource ?? '',
            subresource: r.info?.subresource ?? '',
            served_from: servedFrom,
          };
          m.requests.inc({ ...labels, code: String(res.statusCode) });
          if (verb !== 'WATCH' && !longRunning)
            m.requestDuration.observe(labels, (ctx.clock.now() - started) / 1000);
        });
      }
      if (r.kind === 'cache') {
        servedFrom = 'cache';
        // A cached watch holds a watcher slot of its own (taken in serveWatch), not this one.
        if (r.verb === 'watch') release();
        const serve = r.verb === 'list' ? serveList : r.verb === 'get' ? serveGet : serveWatch;
        try {
          if (await serve(r.cache, r.info, query, res, ctx, ac.signal)) return;
        } catch (err) {
          if (!res.headersSent) writeStatus(res, err);
          return;
        }
        servedFrom = 'upstream';
        log.debug({ url }, 'cache declined; passing upstream');
        // The request moves to the slots of what it now is: an upstream short request, or a
        // watch (whose slot was handed back above) that must count against --max-watchers.
        release();
        const again = longRunning ? watchers.tryAcquire() : upstreamInflight.tryAcquire();
        if (!again) return writeStatus(res, tooManyRequests(TOO_MANY_REQUESTS, 1));
        release = again;
      }
      const info = r.info;
      const tracked =
        WRITE_METHODS.has(method) &&
        info !== undefined &&
        registry.cachesGroupResource(info.group, info.resource);
      await passThrough(req, res, {
        upstream: opts.upstream,
        longRunning,
        log,
        track,
        ...(tracked
          ? {
              onWriteAnswer: (body: Buffer) =>
                writes.apply(
                  writeKey(info.group, info.resource),
                  writeEffectOf(body, method, info.namespace),
                  ctx.clock.now(),
                ),
            }
          : {}),
      });
    } finally {
      release();
    }
  };

  app.all('*', (request, reply) => {
    reply.hijack();
    return handle(request.raw, reply.raw).catch((err) => {
      log.error({ err }, 'request failed');
      if (!reply.raw.headersSent) writeStatus(reply.raw, err);
      else reply.raw.destroy();
    });
  });

  app.server.on('upgrade', (_req: IncomingMessage, socket: Duplex) => {
    const body = JSON.stringify(notImplemented(UPGRADE_MESSAGE).status);
    socket.end(
      `HTTP/1.1 501 Not Implemented\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });

  return {
    app,
    writes,
    addCache: (cache) => registry.add(cache),
    async shutdown() {
      // Stop accepting first, then end every open watch/stream cleanly (a terminating chunk,
      // not a reset). Connections that turn idle afterwards are closed as they do, instead of
      // lingering for the keep-alive timeout.
      const closing = app.close();
      log.info({ streams: open.size, inflight: inflight.inUse }, 'shutdown: ending open watches and streams');
      for (const end of [...open]) end();
      const sweep = setInterval(() => app.server.closeIdleConnections(), 50);
      setImmediate(() => app.server.closeIdleConnections());
      // Short requests get a grace period to finish; whatever is still open then is cut.
      const force = setTimeout(() => app.server.closeAllConnections(), opts.shutdownGraceMs ?? 5000);
      try {
        await closing;
      } finally {
        clearInterval(sweep);
        clearTimeout(force);
      }
    },
  };
}
