/**
 * The main listener: pure Kubernetes API (docs/design.md §5). Builds the fastify app and the
 * state every request shares; each request runs the steps of `handle-request.ts` (classify by
 * `delegate.ts`, limit, serve from the cache by `serve-read.ts`/`serve-watch.ts` or pass upstream by
 * `passthrough.ts`, record). HTTP Upgrade (exec/attach/port-forward/cp, WebSocket watches) is
 * tunnelled to the apiserver by `upgrade-tunnel.ts`.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Server as TlsServer } from 'node:tls';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import type { Auditor } from '../audit/auditor.ts';
import type { AccessControl } from '../auth/access-control.ts';
import type { RequestFilter } from '../auth/request-filter.ts';
import type { Metrics } from '../ops/metrics.ts';
import { type Clock, realClock } from '../util/clock.ts';
import type { Logger } from '../util/logger.ts';
import type { CacheCodec, ServedCache } from './cache-api.ts';
import { CacheRegistry } from './cache-registry.ts';
import { answerGlobalOptions, isGlobalOptions } from './global-options.ts';
import { handleRequest, type Lifecycle, originForm } from './handle-request.ts';
import { Limiter } from './limiter.ts';
import { teeAnswers } from './read-your-writes/answer-tee.ts';
import { WriteTracker } from './read-your-writes/write-tracker.ts';
import type { RequestHook } from './request-hooks.ts';
import { writeStatus } from './send-status.ts';
import type { ServeContext } from './serve-context.ts';
import { ShardSupport, upstreamShardProbe } from './shard-support.ts';
import { tablePrinterOf } from './table-printers.ts';
import { tunnelUpgrade, writeRawStatus } from './upgrade-tunnel.ts';
import type { UpstreamTarget } from './upstream-target.ts';

/** Options of {@link buildServer}. Durations in ms. */
export interface ServerOptions {
  upstream: UpstreamTarget;
  /** Whether each resource's upstream honours `shardSelector` (default: probed on `upstream`). */
  shardSupport?: ShardSupport;
  caches: ServedCache[];
  codec: CacheCodec;
  /** `--namespace`: caches hold only this namespace; other namespaces go upstream. */
  namespace?: string;
  /** Subscribers to the request hooks (`request-hooks.ts`: caching on demand); default none. */
  hooks?: readonly RequestHook[];
  consistentReads: 'cache' | 'proven' | 'upstream';
  /** `--response-compression`: `gzip` compresses cache answers above 128 KiB for clients that accept it; default `none`. */
  responseCompression?: 'none' | 'gzip';
  /** `--protobuf-answers`: `cache` (default) answers protobuf-picking clients protobuf from the cache; `json` does not. */
  protobufAnswers?: 'cache' | 'json';
  /** The upstream's `gitVersion` as last checked, for the protobuf schema table's version check (see `ServeContext`). */
  upstreamVersion?: () => string | undefined;
  /** Cap on concurrent short (non-long-running) requests; default 400 (apiserver `--max-requests-inflight`). */
  maxInflight?: number;
  /** Cap on concurrent watches and other long-running requests; default 1000. */
  maxWatchers?: number;
  freshnessWaitMs?: number;
  syncWaitMs?: number;
  minRequestTimeoutMs?: number;
  /** Request counters/latency (`kube_cache_proxy_requests_total{…,served_from,reason}`); optional. */
  metrics?: Pick<Metrics, 'requests' | 'requestDuration' | 'refusedRequests' | 'readWait' | 'resourceLabels'>;
  /**
   * How long a connection may take to send a request's line and headers, counted from its first
   * byte, or from the connection's start when it never sends one (ms, default
   * {@link READ_HEADER_TIMEOUT_MS}, the apiserver's); also the TLS handshake's bound. Tests set
   * it small.
   */
  readHeaderTimeoutMs?: number;
  /** How long shutdown lets short requests finish before cutting connections (ms, default 5000). */
  shutdownGraceMs?: number;
  clock?: Clock;
  random?: () => number;
  logger: Logger;
  /** Who asks (docs/design.md §4); absent only in unit tests of the other steps. */
  access?: AccessControl;
  /** The audit of requests the proxy answers itself (docs/audit.md); absent: none. */
  audit?: Auditor;
  /**
   * `--accept-paths`, `--reject-paths`, `--reject-methods` (`auth/request-filter.ts`): checked on
   * every request and HTTP Upgrade before anything else; absent: every request passes.
   */
  filter?: RequestFilter;
  /** `kube_cache_proxy_requests_filtered_total{filter}` and `…_requests_refused_total{code}` of its refusals. */
  filterMetrics?: Pick<Metrics, 'filteredRequests' | 'refusedRequests'>;
  /**
   * Serve HTTPS (`--tls-cert-file`, `--tls-private-key-file`: PEM); `ca` (`--client-ca-file`)
   * asks for client certificates and verifies them (an unverified one is 401 in `access`).
   */
  tls?: { cert: Buffer; key: Buffer; ca?: Buffer };
}

/** A built server. */
export interface KubeServer {
  app: FastifyInstance;
  writes: WriteTracker;
  /** Starts serving a resource from `cache` (caches appear as discovery of each resource succeeds). */
  addCache(cache: ServedCache): void;
  /**
   * Stops serving a resource from `cache` (its resource stopped, changed upstream or turned out
   * not to be cacheable): its requests go upstream at once, as for a resource not cached.
   */
  removeCache(cache: ServedCache): void;
  /**
   * New TLS material for connections accepted from now on (Node's `setSecureContext`: open
   * connections keep theirs, nothing is dropped): a rotated serving certificate or client CA.
   * Ignored by a plain-HTTP server.
   */
  setTls(tls: { cert: Buffer; key: Buffer; ca?: Buffer }): void;
  /**
   * Holds every request from now on until `gate` settles (then classified as usual; a rejected
   * gate releases them too): a warm start (main.ts) listens first, so that a port in use fails
   * before anything starts, and holds the requests until the snapshots are restored — a client
   * resuming in that moment would otherwise find no cache and be passed upstream (`not-cached`)
   * for its whole watch.
   */
  holdRequestsUntil(gate: Promise<void>): void;
  /** Stops accepting, ends open watches and streams cleanly, waits for short requests. */
  shutdown(): Promise<void>;
}

/** Largest request line + headers accepted (bytes), as the apiserver's 1 MiB. */
export const MAX_HEADER_BYTES = 1 << 20;

/**
 * How long a connection may take to send a request's headers, and a TLS handshake to finish (ms):
 * the apiserver's `ReadHeaderTimeout`. Go's server bounds the TLS handshake by the smallest of its
 * read and write timeouts (`tlsHandshakeTimeout`: here this one), then each request's headers from
 * the moment it reads the request; a connection that never sends a byte is closed after it,
 * without an answer (a timeout is a "common net read error": no 408).
 *
 * Go (k8s.io/apiserver pkg/server/secure_serving.go):
 *
 * ```go
 * secureServer := &http.Server{
 *     Addr:           s.Listener.Addr().String(),
 *     Handler:        handler,
 *     MaxHeaderBytes: 1 << 20,
 *     TLSConfig:      tlsConfig,
 *
 *     IdleTimeout:       90 * time.Second, // matches http.DefaultTransport keep-alive timeout
 *     ReadHeaderTimeout: 32 * time.Second, // just shy of requestTimeoutUpperBound
 * }
 * ```
 */
export const READ_HEADER_TIMEOUT_MS = 32_000;

/**
 * How long a kept-alive connection may sit idle between requests (ms): the apiserver's
 * `IdleTimeout` (see {@link READ_HEADER_TIMEOUT_MS}); fastify's default is 72 s.
 */
export const IDLE_TIMEOUT_MS = 90_000;

/**
 * How often Node checks connections for the header timeout (ms): a tenth of it, at most 1 s, so a
 * silent connection is closed within 1 s of the apiserver's moment (Node's default, 30 s, let
 * them live up to 62 s).
 */
function checkingInterval(readHeaderTimeoutMs: number): number {
  return Math.max(10, Math.min(1000, Math.floor(readHeaderTimeoutMs / 10)));
}

/** Whether an `Upgrade` header asks for a stream protocol the apiserver speaks (WebSocket, SPDY). */
export function isStreamUpgrade(upgrade: string | undefined): boolean {
  if (!upgrade) return false;
  return upgrade
    .split(',')
    .map((t) => t.trim().toLowerCase())
    .some((t) => t === 'websocket' || t.startsWith('spdy/'));
}

/** What the main listener does with every request: the raw request and response. */
type Serve = (req: IncomingMessage, res: ServerResponse) => unknown;

/**
 * The fastify app of the main listener: raw requests (hijacked), no body parsing, 1 MiB headers.
 * Every request goes to `serve`, also those fastify's router refuses (a path whose
 * percent-encoding is not UTF-8, `FST_ERR_BAD_URL`): the apiserver routes those as any other
 * path (a GET of `configmaps/a%FFb` is its 404 `configmaps "a\xffb" not found`), and fastify
 * answered them 400 with a body of its own.
 */
function createApp(
  log: Logger,
  tls: ServerOptions['tls'],
  serve: Serve,
  readHeaderTimeoutMs: number,
): FastifyInstance {
  const serverOptions = {
    maxHeaderSize: MAX_HEADER_BYTES,
    // Go's ReadHeaderTimeout (READ_HEADER_TIMEOUT_MS). No bound on reading a body: the apiserver
    // sets no ReadTimeout (fastify's `requestTimeout` stays 0).
    headersTimeout: readHeaderTimeoutMs,
    connectionsCheckingInterval: checkingInterval(readHeaderTimeoutMs),
    shouldUpgradeCallback: (req: IncomingMessage) => isStreamUpgrade(req.headers.upgrade),
  };
  // TLS: a client certificate is asked for but not required (bearer clients have none); the
  // verification result (`socket.authorized`) is read per request by the access control.
  const transport = tls
    ? {
        https: {
          ...serverOptions,
          cert: tls.cert,
          key: tls.key,
          // Go's tlsHandshakeTimeout: the smallest of the read timeouts (Node's default is 120 s).
          handshakeTimeout: readHeaderTimeoutMs,
          ...(tls.ca ? { ca: tls.ca, requestCert: true, rejectUnauthorized: false } : {}),
        },
      }
    : { http: serverOptions };
  const app = Fastify({
    loggerInstance: log as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    // No per-request child logger (a pino child with a reqId per request, measurable on the
    // pass-through path, issue 12): requests are logged by handle-request.ts with their own fields.
    childLoggerFactory: (logger) => logger,
    return503OnClosing: false,
    keepAliveTimeout: IDLE_TIMEOUT_MS,
    forceCloseConnections: 'idle',
    routerOptions: { ignoreDuplicateSlashes: false, maxParamLength: 10_000 },
    frameworkErrors: (_err, request, reply) => {
      reply.hijack();
      return serve(request.raw, reply.raw);
    },
    // The apiserver accepts request lines + headers up to 1 MiB (Go's http.DefaultMaxHeaderBytes,
    // `server.MaxHeaderBytes` in apiserver secure serving); Node's default is 16 KiB, which
    // answered long label selectors (`in (...)` of a few thousand values) 431 instead.
    // Only stream upgrades (exec/attach/port-forward/websocket: `websocket`, `SPDY/3.1`) are
    // tunnelled; any other `Upgrade` (e.g. `h2c`, sent by `curl --http2`) is a normal request, as
    // Go's server ignores it (it was 501 for every such request, even a plain LIST).
    ...transport,
  }) as unknown as FastifyInstance;
  // A header timeout closes the connection without an answer, as Go's server does (fastify's
  // own clientError handler writes a 408 with a JSON body of its own; it skips a destroyed socket).
  app.server.prependListener('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') socket.destroy();
  });
  // Bodies are streamed upstream untouched: no parser ever reads them.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req, _payload, done) => done(null));
  return app;
}

/** What every request shares: caches, write tracker, slot caps, the serve context. */
function createLifecycle(opts: ServerOptions, track: Lifecycle['track']): Lifecycle {
  const writes = new WriteTracker();
  const watchers = new Limiter(opts.maxWatchers ?? 1000);
  const serve: ServeContext = {
    codec: opts.codec,
    writes,
    consistentReads: opts.consistentReads,
    gzip: opts.responseCompression === 'gzip',
    protobuf: opts.protobufAnswers !== 'json',
    ...(opts.upstreamVersion ? { upstreamVersion: opts.upstreamVersion } : {}),
    freshnessWaitMs: opts.freshnessWaitMs ?? 3000,
    syncWaitMs: opts.syncWaitMs ?? 3000,
    minRequestTimeoutMs: opts.minRequestTimeoutMs ?? 1_800_000,
    clock: opts.clock ?? realClock,
    random: opts.random ?? Math.random,
    watchers,
    trackWatch: track,
    log: opts.logger,
    shardSupport: opts.shardSupport ?? new ShardSupport(upstreamShardProbe(opts.upstream)),
  };
  const m = opts.metrics;
  // A cached resource is real: its name may label the request metrics (ops/metric-labels.ts).
  for (const c of opts.caches) m?.resourceLabels.known.add(c.resource.gvr);
  if (m) {
    serve.onReadWait = (cache, seconds, result) =>
      m.readWait.observe(
        { group: cache.resource.gvr.group, resource: cache.resource.gvr.resource, result },
        seconds,
      );
  }
  const registry = new CacheRegistry(opts.caches, opts.namespace);
  serve.tablePrinter = (r) => tablePrinterOf(registry, r);
  return {
    registry,
    writes,
    serve,
    upstream: withAnswerTee(opts.upstream),
    inflight: new Limiter(opts.maxInflight ?? 400),
    upstreamInflight: new Limiter(opts.maxInflight ?? 400),
    watchers,
    track,
    metrics: m,
    log: opts.logger,
    access: opts.access,
    hooks: opts.hooks ?? [],
    audit: opts.audit,
  };
}

/**
 * `upstream` whose short-request pools carry the read-your-writes tee interceptor
 * (`read-your-writes/answer-tee.ts`); long-running and upgrade pools are used as they are.
 */
function withAnswerTee(upstream: UpstreamTarget): UpstreamTarget {
  const c = upstream.clientCredentialPools;
  return {
    server: upstream.server,
    // A target without a short pool (a test that never passes a request upstream) stays without.
    dispatcher: upstream.dispatcher && teeAnswers(upstream.dispatcher),
    longRunningDispatcher: upstream.longRunningDispatcher,
    ...(upstream.upgradeDispatcher ? { upgradeDispatcher: upstream.upgradeDispatcher } : {}),
    authorization: () => upstream.authorization(),
    ...(c ? { clientCredentialPools: { ...c, dispatcher: teeAnswers(c.dispatcher) } } : {}),
  };
}

/** Builds the fastify app (not listening). */
export function buildServer(opts: ServerOptions): KubeServer {
  const log = opts.logger;
  // Open watches and streams, each with the function that ends it cleanly at shutdown.
  const open = new Set<() => void>();
  const track = (end: () => void) => {
    open.add(end);
    return () => open.delete(end);
  };
  const lifecycle = createLifecycle(opts, track);
  /** The filter's refusal of `req` (counted), or undefined when it passes. */
  const refused = (req: IncomingMessage) => {
    const r = opts.filter?.check(req.method ?? 'GET', originForm(req.url ?? '/'));
    if (r) {
      opts.filterMetrics?.filteredRequests.inc({ filter: r.rule });
      opts.filterMetrics?.refusedRequests.inc({ code: '403' });
      if (log.isLevelEnabled('debug'))
        log.debug({ method: req.method, url: req.url, code: 403, filter: r.rule }, 'request filtered');
    }
    return r;
  };
  const serve: Serve = (req, res) => {
    // `OPTIONS *` is answered by Go's server itself, before the apiserver's handler chain (and
    // before kubectl proxy's filter).
    if (isGlobalOptions(req)) return answerGlobalOptions(req, res);
    const r = refused(req);
    if (r) return writeStatus(res, r.status);
    return handleRequest(lifecycle, req, res);
  };
  const app = createApp(log, opts.tls, serve, opts.readHeaderTimeoutMs ?? READ_HEADER_TIMEOUT_MS);
  app.all('*', (request, reply) => {
    reply.hijack();
    return serve(request.raw, reply.raw);
  });
  app.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    req.url = originForm(req.url ?? '/');
    const r = refused(req);
    if (r) {
      socket.on('error', () => socket.destroy());
      return writeRawStatus(socket, r.status);
    }
    tunnelUpgrade(req, socket, head, {
      upstream: opts.upstream,
      ...(opts.access ? { access: opts.access } : {}),
      watchers: lifecycle.watchers,
      track,
      ...(opts.shutdownGraceMs !== undefined ? { shutdownGraceMs: opts.shutdownGraceMs } : {}),
      log,
    });
  });

  return {
    app,
    writes: lifecycle.writes,
    addCache: (cache) => {
      lifecycle.registry.add(cache);
      // A served resource is real: its name may label the request metrics from now on.
      opts.metrics?.resourceLabels.known.add(cache.resource.gvr);
    },
    removeCache: (cache) => lifecycle.registry.remove(cache),
    holdRequestsUntil(gate) {
      const held: Promise<void> = gate.then(
        () => {},
        () => {},
      );
      lifecycle.held = held;
      void held.then(() => {
        if (lifecycle.held === held) lifecycle.held = undefined;
      });
    },
    setTls(tls) {
      if (!opts.tls) return;
      // The secure-context options createApp passed, nothing else (requestCert is the server's).
      (app.server as unknown as TlsServer).setSecureContext({
        cert: tls.cert,
        key: tls.key,
        ...(tls.ca ? { ca: tls.ca } : {}),
      });
    },
    async shutdown() {
      // Stop accepting first, then end every open watch/stream cleanly (a terminating chunk,
      // not a reset). Connections that turn idle afterwards are closed as they do, instead of
      // lingering for the keep-alive timeout.
      const closing = app.close();
      log.info(
        { streams: open.size, inflight: lifecycle.inflight.inUse },
        'shutdown: ending open watches and streams',
      );
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
