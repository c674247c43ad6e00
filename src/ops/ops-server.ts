/**
 * The ops HTTP listener (fastify), separate from the main Kubernetes API listener: `/metrics`,
 * `/livez`, `/readyz`, `/healthz` (the apiserver's health-check semantics) and `/debug/cache`.
 * Exports {@link buildOpsServer}, {@link startOpsServer}, {@link opsHealthChecks} and their
 * option types; default address {@link DEFAULT_OPS_LISTEN} (`127.0.0.1:8081`).
 */
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
} from 'fastify';
import type { ListenAddress } from '../config/listen-address.ts';
import { type Clock, realClock } from '../util/clock.ts';
import { type Logger, silentLogger } from '../util/logger.ts';
import { debugCacheView } from './debug-cache.ts';
import { type EventLoopMonitor, startEventLoopMonitor } from './event-loop-monitor.ts';
import { type HealthCheck, pingCheck, runCheck, runHealthChecks } from './health-checks.ts';
import type { CacheStatusSource, Metrics } from './metrics.ts';

/**
 * The ops listener (docs/design.md §5): the proxy's own endpoints, apart from the main listener which
 * is pure Kubernetes API and passes the apiserver's `/metrics`, `/healthz`, `/readyz`, `/livez`
 * through. Routes:
 * - `GET /metrics`: Prometheus text exposition of {@link Metrics.registry};
 * - `GET /livez`: checks `ping`, `event-loop` (delay below `maxEventLoopDelayMs`);
 * - `GET /readyz`: checks `ping`, `shutdown` (fails once shutdown began, like the apiserver's
 *   readyz `shutdown` check, so endpoints drop the pod before watches are closed), the
 *   {@link OpsServerOptions.readyChecks} (`upstream`), and one `cache-sync/<resource>` per
 *   configured resource (fails until its first snapshot);
 * - `GET /healthz`: all checks of both;
 * - `GET /{livez,readyz,healthz}/<check>`: one check (`ok` or `internal server error: reason`);
 * - `GET /debug/cache`: {@link debugCacheView} JSON.
 * Health bodies are the apiserver's (`ok`, `?verbose`, `?exclude=`); failures answer 503.
 */
export interface OpsServerOptions {
  metrics: Metrics;
  source: CacheStatusSource;
  /** Errors only: probes are not request-logged (the kubelet polls every few seconds). */
  logger?: Logger;
  clock?: Clock;
  /** Event-loop delay source for `/livez`; {@link startOpsServer} starts a real one when omitted. */
  eventLoop?: Pick<EventLoopMonitor, 'maxDelayMs'>;
  /** `/livez` fails when the event loop was late by more than this (ms). Default 10 000. */
  maxEventLoopDelayMs?: number;
  /** True once graceful shutdown began: `/readyz` then fails its `shutdown` check. */
  shuttingDown?: () => boolean;
  /**
   * Further `/readyz` (and `/healthz`) checks, listed after `shutdown`: the proxy's `upstream`
   * check (`upstream/upstream-monitor.ts`: can the apiserver be reached, with the proxy's TLS
   * and credentials).
   */
  readyChecks?: readonly HealthCheck[];
}

/** A listening ops server. */
export interface OpsServer {
  readonly app: FastifyInstance;
  /** `http://host:port` actually bound (the real port when 0 was asked). */
  readonly url: string;
  /** Stops listening (and the event-loop monitor it started). Idempotent. */
  close(): Promise<void>;
}

/** Default `--ops-listen`. */
export const DEFAULT_OPS_LISTEN: ListenAddress = { host: '127.0.0.1', port: 8081 };

const HEALTH_HEADERS = { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' };

/**
 * The checks behind each health endpoint, in the order they are listed. Called per request: the
 * per-resource checks are rebuilt from the status source each time (it is the single truth).
 */
export function opsHealthChecks(
  opts: OpsServerOptions,
): Record<'livez' | 'readyz' | 'healthz', HealthCheck[]> {
  const maxDelay = opts.maxEventLoopDelayMs ?? 10_000;
  const eventLoop: HealthCheck = {
    name: 'event-loop',
    check() {
      const d = opts.eventLoop?.maxDelayMs() ?? 0;
      return d > maxDelay ? `event loop delayed ${Math.round(d)}ms (limit ${maxDelay}ms)` : undefined;
    },
  };
  const shutdown: HealthCheck = {
    name: 'shutdown',
    check: () => (opts.shuttingDown?.() ? 'process is shutting down' : undefined),
  };
  // On-demand caches (`--resources=auto`) never gate readiness: only configured ones do.
  const configured = opts.source.resources().filter((s) => s.origin === 'configured');
  const cacheSync: HealthCheck[] = configured.map((s) => ({
    name: `cache-sync/${s.name}`,
    // A resource served by pass-through only (issue 11 item 9) never syncs and needs not.
    check: () =>
      s.synced || s.phase === 'pass-through'
        ? undefined
        : s.lastError
          ? `not synced: ${s.lastError}`
          : 'not synced',
    // Ready from a snapshot (docs/operations.md, readiness): RV="0" reads and watches are served
    // from it; consistent and Exact reads go upstream until the upstream accepts its watch.
    note: () =>
      s.restoredFromMs === null
        ? undefined
        : `served from a snapshot taken ${Math.round((Date.now() - s.restoredFromMs) / 1000)}s ago, not live`,
  }));
  const extra = opts.readyChecks ?? [];
  return {
    livez: [pingCheck, eventLoop],
    readyz: [pingCheck, shutdown, ...extra, ...cacheSync],
    healthz: [pingCheck, eventLoop, shutdown, ...extra, ...cacheSync],
  };
}

/** Builds the ops app without listening (tests use `app.inject`). */
export function buildOpsServer(opts: OpsServerOptions): FastifyInstance {
  const clock = opts.clock ?? realClock;
  const app = Fastify({
    loggerInstance: (opts.logger ?? silentLogger) as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
  });
  for (const name of ['livez', 'readyz', 'healthz'] as const) {
    const list = () => opsHealthChecks(opts)[name];
    app.get(`/${name}`, (req: FastifyRequest, reply: FastifyReply) => {
      const q = req.query as Record<string, string | string[] | undefined>;
      const exclude = q.exclude === undefined ? [] : ([] as string[]).concat(q.exclude);
      const report = runHealthChecks(name, list(), { verbose: 'verbose' in q, exclude });
      return reply
        .code(report.healthy ? 200 : 503)
        .headers(HEALTH_HEADERS)
        .send(report.body);
    });
    app.get(`/${name}/*`, (req: FastifyRequest, reply: FastifyReply) => {
      const checkName = (req.params as { '*': string })['*'];
      const check = list().find((c) => c.name === checkName);
      if (!check) return reply.code(404).headers(HEALTH_HEADERS).send('404 page not found\n');
      // The apiserver's per-check handler (`adaptCheckToHandler`).
      const reason = runCheck(check);
      return reply
        .code(reason === undefined ? 200 : 503)
        .headers(HEALTH_HEADERS)
        .send(reason === undefined ? 'ok' : `internal server error: ${reason}\n`);
    });
  }

  app.get('/metrics', async (_req, reply) => {
    const body = await opts.metrics.scrape();
    return reply.code(200).header('content-type', opts.metrics.registry.contentType).send(body);
  });

  app.get('/debug/cache', (_req, reply) => {
    return reply.code(200).send(debugCacheView(opts.source.resources(), clock.now()));
  });

  return app;
}

/**
 * Starts the ops listener on `listen` (parsed by `config/listen-address.ts`, default
 * {@link DEFAULT_OPS_LISTEN}). Starts an event-loop monitor unless `opts.eventLoop` is given.
 * Rejects when the address cannot be bound (EADDRINUSE, EACCES).
 */
export async function startOpsServer(
  opts: OpsServerOptions & { listen?: ListenAddress },
): Promise<OpsServer> {
  const { host, port } = opts.listen ?? DEFAULT_OPS_LISTEN;
  const monitor = opts.eventLoop ? undefined : startEventLoopMonitor();
  const app = buildOpsServer(monitor ? { ...opts, eventLoop: monitor } : opts);
  try {
    await app.listen({ host, port });
  } catch (err) {
    monitor?.stop();
    throw err;
  }
  const addr = app.server.address();
  const boundPort = typeof addr === 'object' && addr ? addr.port : port;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  let closed: Promise<void> | undefined;
  return {
    app,
    url: `http://${urlHost}:${boundPort}`,
    close() {
      closed ??= (async () => {
        monitor?.stop();
        await app.close();
      })();
      return closed;
    },
  };
}
