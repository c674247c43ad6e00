/**
 * Process wiring: config → upstream → the set of cached resources (`resources/`: one reflector
 * and watch cache per resource, configured and on demand) → the API server and the ops listener
 * (metrics, health, /debug/cache). SIGTERM/SIGINT: stop accepting, end open watches cleanly, stop
 * the reflectors, exit 0 (docs/design.md §5).
 */

import type { Dispatcher } from 'undici';
import { scopeString } from './apimachinery/resource-scope.ts';
import { createAuditor, loadPolicyFile } from './audit/from-config.ts';
import { createAccessControl } from './auth/access-control-config.ts';
import { RequestFilter } from './auth/request-filter.ts';
import type { ReviewUpstream } from './auth/review-client.ts';
import { cacheCodec } from './cache/codec.ts';
import { ParkedWatchers } from './cache/parked-watchers.ts';
import { type Config, loadConfig, renderHelp } from './config/config.ts';
import type { ListenAddress } from './config/listen-address.ts';
import { onDemandRequestHook } from './on-demand/server-hook.ts';
import { createOnDemand } from './on-demand/wiring.ts';
import type { HealthCheck } from './ops/health-checks.ts';
import { type CacheStatusSource, createMetrics, type Metrics, resourceMetricsHooks } from './ops/metrics.ts';
import { type OpsServer, startOpsServer } from './ops/ops-server.ts';
import { snapshotMetricsHooks } from './ops/snapshot-metrics.ts';
import { observeUpstream } from './ops/upstream-observer.ts';
import type { Serving } from './resources/cached-resource.ts';
import { ResourceSet } from './resources/resource-set.ts';
import { buildServer, type KubeServer } from './server/app.ts';
import type { CacheCodec } from './server/cache-api.ts';
import type { RequestHook } from './server/request-hooks.ts';
import { servingTlsFiles } from './server/serving-tls.ts';
import type { UpstreamTarget } from './server/upstream-target.ts';
import { snapshotSettings } from './snapshot/snapshot-settings.ts';
import { createUpstream, discoverServedResources, type Upstream, UpstreamMonitor } from './upstream/index.ts';
import { versionLine } from './util/build-info.ts';
import { ConfigError } from './util/errors.ts';
import { createLogger, type Logger } from './util/logger.ts';

/** Exit codes. */
export const EXIT_OK = 0;
export const EXIT_CONFIG = 2;
export const EXIT_FAILURE = 1;

/**
 * Everything below the server that `runProxy` needs, built from the config by
 * {@link createParts} (or by tests).
 */
export interface ProxyParts {
  upstream: UpstreamTarget;
  codec: CacheCodec;
  /** The cached resources (configured and on demand). */
  resources: ResourceSet;
  /** Per-resource state for the ops listener and metrics. */
  statusSource: CacheStatusSource;
  /**
   * The proxy's own credentials on a pool of their own, for TokenReview, SubjectAccessReview and
   * SelfSubjectReview; absent: no review is possible (any client credential goes upstream).
   */
  reviews?: ReviewUpstream;
  /** Subscribers to the server's request hooks (caching on demand, `--resources=auto`). */
  hooks: RequestHook[];
  /**
   * The periodic upstream check behind `/readyz`'s `upstream` check; started by
   * {@link runProxy} once the listeners are bound, stopped by {@link ProxyParts.close}.
   */
  upstreamMonitor?: UpstreamMonitor;
  /** Stops reflectors and closes upstream connections. */
  close(): Promise<void>;
}

/** A running proxy. */
export interface RunningProxy {
  server: KubeServer;
  /** `http://HOST:PORT` (`https://` with TLS) the API listener is bound to. */
  address: string;
  /** `http://HOST:PORT` of the ops listener (/metrics, /readyz, …). */
  opsAddress: string;
  /** Graceful stop (what SIGTERM does, minus the exit). */
  stop(): Promise<void>;
}

/**
 * Longest a warm start holds requests while its snapshots are restored (ms); past it they are
 * classified as usual (a resource not restored yet passes upstream as `not-cached`).
 */
export const RESTORE_HOLD_MS = 10_000;

/** Builds and starts the server on `config.listen` in front of `parts`. */
export async function runProxy(
  config: Config,
  parts: ProxyParts,
  logger: Logger,
  metrics: Metrics = createMetrics(),
): Promise<RunningProxy> {
  let shuttingDown = false;
  const tlsFiles = servingTlsFiles(config, logger, metrics, () => server);
  const tls = tlsFiles?.current();
  const audit = createAuditor(config, logger, metrics);
  const server = buildServer({
    access: createAccessControl(config, parts.reviews, logger, metrics),
    ...(audit ? { audit } : {}),
    filter: new RequestFilter(config),
    filterMetrics: metrics,
    ...(tls ? { tls } : {}),
    metrics,
    upstream: parts.upstream,
    caches: [],
    codec: parts.codec,
    consistentReads: config.consistentReads,
    responseCompression: config.responseCompression,
    protobufAnswers: config.protobufAnswers,
    ...(parts.upstreamMonitor ? { upstreamVersion: () => parts.upstreamMonitor!.version() } : {}),
    maxInflight: config.maxInflight,
    maxWatchers: config.maxWatchers,
    logger,
    ...(config.namespace !== undefined ? { namespace: config.namespace } : {}),
    hooks: parts.hooks,
  });
  // A warm start holds the requests until the snapshots are restored (bounded): see below.
  const restoring = config.snapshotDir !== undefined ? Promise.withResolvers<void>() : undefined;
  if (restoring) server.holdRequestsUntil(restoring.promise);
  // Listen first: a port already in use must fail before any reflector starts. Until a
  // resource's cache is added, its requests are simply passed upstream.
  try {
    await server.app.listen({ host: config.listen.host, port: config.listen.port });
  } catch (err) {
    audit?.o.backend.shutdown();
    throw listenError('--listen', config.listen, err);
  }
  let ops: OpsServer;
  try {
    ops = await startOpsServer({
      metrics,
      source: parts.statusSource,
      logger,
      listen: config.opsListen,
      shuttingDown: () => shuttingDown,
      ...(parts.upstreamMonitor ? { readyChecks: [upstreamHealthCheck(parts.upstreamMonitor)] } : {}),
    });
  } catch (err) {
    restoring?.resolve();
    await server.app.close();
    audit?.o.backend.shutdown();
    throw listenError('--ops-listen', config.opsListen, err);
  }
  parts.resources.start(serving(server, logger));
  if (restoring) {
    // Local files only, no upstream request: a client resuming at once then finds its resource's
    // cache (served from the snapshot) instead of being passed upstream for its whole watch.
    const bound = setTimeout(restoring.resolve, RESTORE_HOLD_MS);
    void parts.resources.restored().then(() => {
      clearTimeout(bound);
      restoring.resolve();
    });
  }
  tlsFiles?.start();
  // Not awaited: a down apiserver must not hold up the listeners (it is /readyz's to say).
  void parts.upstreamMonitor?.start();
  const addr = server.app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : config.listen.port;
  const host = config.listen.host.includes(':') ? `[${config.listen.host}]` : config.listen.host;
  const address = `${tls ? 'https' : 'http'}://${host}:${port}`;
  logger.info(
    {
      address,
      ops: ops.url,
      resources: [
        ...config.resources.map((r) => `${r.name}${scopeString(r)}`),
        ...(config.auto ? ['auto'] : []),
      ],
    },
    'kube-cache-proxy listening',
  );
  let stopping: Promise<void> | undefined;
  return {
    server,
    address,
    opsAddress: ops.url,
    stop() {
      stopping ??= (async () => {
        shuttingDown = true;
        tlsFiles?.stop();
        await server.shutdown();
        // The batch buffer is written out and the file closed after the last request ended.
        audit?.o.backend.shutdown();
        await parts.close();
        await ops.close();
      })();
      return stopping;
    },
  };
}

/**
 * A listener that could not be bound, as one line naming its flag and address, e.g.
 * `--listen 127.0.0.1:8001: listen EADDRINUSE: address already in use 127.0.0.1:8001` or
 * `--ops-listen $(HOST_IP):6447: getaddrinfo ENOTFOUND $(HOST_IP)` (Node's message kept: it
 * says which call failed and why); the original error is the `cause`.
 */
export function listenError(flag: string, at: ListenAddress, err: unknown): Error {
  const host = at.host.includes(':') ? `[${at.host}]` : at.host;
  const message = (err as Error)?.message ?? String(err);
  return new Error(`${flag} ${host}:${at.port}: ${message.replace(/\s*\n\s*/g, ' ')}`, { cause: err });
}

/** `/readyz`'s `upstream` check: the last result of the periodic upstream check. */
function upstreamHealthCheck(monitor: UpstreamMonitor): HealthCheck {
  return { name: 'upstream', check: () => monitor.reason() };
}

/** The server's registry as the {@link ResourceSet} sees it: a watch cache served, or no longer. */
function serving(server: KubeServer, logger: Logger): Serving {
  return {
    serve(cache) {
      server.addCache(cache);
      const scope = scopeString(cache.resource.scope);
      const ns = cache.resource.namespace;
      logger.info(
        {
          resource: cache.resource.gvr,
          ...(scope ? { scope } : {}),
          ...(ns !== undefined ? { namespace: ns } : {}),
        },
        'serving resource from the cache once synced',
      );
    },
    unserve: (cache) => server.removeCache(cache),
  };
}

/**
 * Builds the real parts from the config: the upstream (with separate pools, `createDispatcher`,
 * for the reflectors and for long-running pass-through requests, same kubeconfig TLS), the
 * {@link ResourceSet} of cached resources (started by {@link runProxy} once the server listens),
 * the on-demand manager over it, and the {@link CacheStatusSource} the ops listener and metrics read.
 */
export async function createParts(config: Config, logger: Logger, metrics?: Metrics): Promise<ProxyParts> {
  const source = config.kubeconfig !== undefined ? { kubeconfig: config.kubeconfig } : {};
  // A client certificate from files (the node-local DaemonSet's) is reloaded as it rotates.
  const upstream = await createUpstream({
    ...source,
    certReloadIntervalMs: config.certReloadInterval,
    log: logger.child({ component: 'certificates' }),
  });
  // The separate pool for long-running pass-through requests: same kubeconfig (loaded once), same TLS.
  const longRunning = upstream.createDispatcher();
  // Every upstream request is counted (verb/resource/code, latency); the reflectors' copy also
  // logs a 403 as a missing RBAC permission of the proxy's own identity, naming verb and resource.
  const observe = (d: Dispatcher, forbiddenLogger?: Logger): Dispatcher =>
    metrics ? observeUpstream(d, { metrics, ...(forbiddenLogger ? { forbiddenLogger } : {}) }) : d;
  // The reflectors (discovery, LIST, WATCH) have a pool of their own: on the pass-through pool a
  // re-watch queued behind slow pass-through requests (up to --max-inflight of them against 64
  // connections) left the cache without a stream (issue 11).
  const reflectorUpstream: Upstream = {
    ...upstream,
    dispatcher: observe(upstream.createDispatcher(), logger),
    watchEncoding: config.upstreamWatchEncoding,
  };
  // On-demand caches are never saved (docs/design.md §3): with nothing configured the flag would
  // silently save nothing, and every restart would relist.
  if (config.snapshotDir !== undefined && config.resources.length === 0) {
    logger.warn(
      { snapshotDir: config.snapshotDir },
      '--snapshot-dir saves only the resources named in --resources; on-demand caches (--resources=auto) are not saved, so nothing will be',
    );
  }
  const resources = new ResourceSet({
    upstream: reflectorUpstream,
    resources: config.resources,
    logger,
    reflector: { livenessWindowMs: config.watchLivenessWindow },
    // --namespace: every reflector lists/watches only that namespace (namespace-scoped RBAC).
    ...(config.namespace !== undefined ? { namespace: config.namespace } : {}),
    ...(metrics ? { metrics: resourceMetricsHooks(metrics) } : {}),
    // One bound for every cache, configured and on demand (--max-parked-watchers).
    parkedWatchers: new ParkedWatchers(config.maxParkedWatchers),
    ...(config.snapshotDir !== undefined
      ? {
          snapshots: await snapshotSettings(
            config,
            reflectorUpstream,
            logger,
            metrics && snapshotMetricsHooks(metrics),
          ),
        }
      : {}),
  });
  // Reviews have their own pool: they must not queue behind pass-through requests.
  const reviews: ReviewUpstream = {
    baseUrl: upstream.baseUrl,
    dispatcher: observe(upstream.createDispatcher({ connections: 16 })),
    authorization: () => upstream.authorization(),
  };
  const upstreamMonitor = new UpstreamMonitor({
    target: reviews,
    log: logger.child({ component: 'upstream-check' }),
    intervalMs: config.upstreamCheckInterval,
  });
  const onDemand = createOnDemand({
    config,
    upstream: reflectorUpstream,
    reviews,
    set: resources,
    logger,
    ...(metrics ? { metrics } : {}),
  });
  const statusSource: CacheStatusSource = { resources: () => resources.states() };
  metrics?.setStatusSource(statusSource);
  // What may label the request metrics: discovery's resources, read now and then again at most
  // every 30 s when a request names one it does not know (ops/metric-labels.ts).
  void metrics?.resourceLabels.known.discoverWith(
    (signal) => discoverServedResources(reflectorUpstream, signal),
    (err) =>
      logger.warn({ err }, 'discovery for metric labels failed; unknown resources are labelled <other>'),
  );
  // Short pass-through requests speak HTTP/1.1 (undici's HTTP/2 cost 10–35 % more CPU per
  // forwarded GET, docs/benchmarks.md): one connection per in-flight request (pipelining 1: a
  // slow answer never holds up the next), at most --max-inflight of them, the upstream slots
  // the server already caps them at, so none waits inside undici; idle ones close after
  // undici's keep-alive timeout. Watches and the reflectors stay on HTTP/2 pools (one
  // connection for all of their streams).
  const shortPool = { http1Only: true, connections: config.maxInflight } as const;
  return {
    upstream: {
      server: new URL(upstream.baseUrl),
      dispatcher: observe(upstream.createDispatcher(shortPool)),
      longRunningDispatcher: observe(longRunning),
      upgradeDispatcher: observe(upstream.createDispatcher({ http1Only: true })),
      authorization: () => upstream.authorization(),
      ...(upstream.hasClientCertificate
        ? {
            clientCredentialPools: {
              dispatcher: observe(upstream.createDispatcher({ ...shortPool, clientCertificate: false })),
              longRunningDispatcher: observe(upstream.createDispatcher({ clientCertificate: false })),
              upgradeDispatcher: observe(
                upstream.createDispatcher({ clientCertificate: false, http1Only: true }),
              ),
            },
          }
        : {}),
    },
    codec: cacheCodec,
    statusSource,
    reviews,
    resources,
    hooks: onDemand ? [onDemandRequestHook(onDemand)] : [],
    upstreamMonitor,
    async close() {
      upstreamMonitor.stop();
      metrics?.resourceLabels.known.close();
      onDemand?.close();
      await resources.close();
      await upstream.close();
    },
  };
}

/** I/O of {@link main}, injectable for tests. */
export interface MainIO {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
}

/**
 * The command. Returns the exit code for configuration errors, help and version; otherwise
 * runs until SIGTERM/SIGINT and exits 0 after a clean shutdown.
 */
export async function main(
  argv: string[],
  env: Record<string, string | undefined>,
  io: MainIO = { stdout: (s) => process.stdout.write(s), stderr: (s) => process.stderr.write(s) },
): Promise<number | undefined> {
  let config: Config;
  try {
    const r = loadConfig({ argv, env });
    if (r.kind === 'help') {
      io.stdout(renderHelp());
      return EXIT_OK;
    }
    if (r.kind === 'version') {
      io.stdout(`${versionLine()}\n`);
      return EXIT_OK;
    }
    config = r.config;
    // An audit policy that does not load is the operator's error (exit 2), before anything starts.
    if (config.auditPolicyFile !== undefined) loadPolicyFile(config.auditPolicyFile);
  } catch (err) {
    if (err instanceof ConfigError) {
      io.stderr(`kube-cache-proxy: ${err.message}\n`);
      return EXIT_CONFIG;
    }
    throw err;
  }
  const logger = createLogger({ level: config.logLevel });
  let proxy: RunningProxy;
  let parts: ProxyParts | undefined;
  try {
    const metrics = createMetrics();
    parts = await createParts(config, logger, metrics);
    proxy = await runProxy(config, parts, logger, metrics);
  } catch (err) {
    logger.fatal({ err }, 'kube-cache-proxy failed to start');
    // One line: a message from below (a parser's excerpt) may span several.
    io.stderr(`kube-cache-proxy: ${(err as Error).message.replace(/\s*\n\s*/g, ' ')}\n`);
    // Nothing may keep the process alive after a failed start (pools, reflector timers).
    await parts?.close().catch(() => {});
    return EXIT_FAILURE;
  }
  const onSignal = (sig: string) => {
    logger.info({ signal: sig }, 'shutting down: no new connections, ending watches');
    proxy.stop().then(
      () => process.exit(EXIT_OK),
      (err) => {
        logger.error({ err }, 'unclean shutdown');
        process.exit(EXIT_FAILURE);
      },
    );
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  return undefined;
}
