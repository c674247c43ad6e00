/**
 * Process wiring: config → upstream → one watch cache + reflector per resource → the API
 * server (and, once integrated, the ops listener). SIGTERM/SIGINT: stop accepting, end open
 * watches cleanly, stop the reflectors, exit 0 (DESIGN.md §5).
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Config, ConfigError, loadConfig, renderHelp } from './config.ts';
import { buildServer, type KubeServer } from './server/app.ts';
import type { CacheCodec, ServedCache } from './server/cache-api.ts';
import type { UpstreamTarget } from './server/upstream.ts';
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
  /** Starts discovery + reflectors; `onCache` is called with each resource's cache once it exists. */
  startCaches(onCache: (cache: ServedCache) => void): void;
  /** Stops reflectors and closes upstream connections. */
  close(): Promise<void>;
}

/** The package version (from the nearest package.json above this file). */
export function version(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === 'kube-cache-proxy' && pkg.version) return pkg.version;
    } catch {}
    dir = dirname(dir);
  }
  return 'unknown';
}

/** A running proxy. */
export interface RunningProxy {
  server: KubeServer;
  /** `http://HOST:PORT` the API listener is bound to. */
  address: string;
  /** Graceful stop (what SIGTERM does, minus the exit). */
  stop(): Promise<void>;
}

/** Builds and starts the server on `config.listen` in front of `parts`. */
export async function runProxy(config: Config, parts: ProxyParts, logger: Logger): Promise<RunningProxy> {
  const server = buildServer({
    upstream: parts.upstream,
    caches: [],
    codec: parts.codec,
    consistentReads: config.consistentReads,
    maxInflight: config.maxInflight,
    maxWatchers: config.maxWatchers,
    logger,
    ...(config.namespace !== undefined ? { namespace: config.namespace } : {}),
  });
  // Listen first: a port already in use must fail before any reflector starts. Until a
  // resource's cache is added, its requests are simply passed upstream.
  await server.app.listen({ host: config.listen.host, port: config.listen.port });
  parts.startCaches((cache) => {
    server.addCache(cache);
    logger.info({ resource: cache.resource.gvr }, 'serving resource from the cache once synced');
  });
  // TODO(lead): start the ops listener (src/ops/ops-server.ts) on config.opsListen here.
  const addr = server.app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : config.listen.port;
  const host = config.listen.host.includes(':') ? `[${config.listen.host}]` : config.listen.host;
  const address = `http://${host}:${port}`;
  logger.info({ address, resources: config.resources }, 'kube-cache-proxy listening');
  let stopping: Promise<void> | undefined;
  return {
    server,
    address,
    stop() {
      stopping ??= (async () => {
        await server.shutdown();
        await parts.close();
      })();
      return stopping;
    },
  };
}

/**
 * Builds the real parts from the config.
 *
 * TODO(lead, integration): `src/upstream/`, `src/reflector/` and `src/cache/` are developed on
 * other branches. Once merged, replace the dynamic imports below by static ones:
 * `createUpstream({ kubeconfig })` twice (the second Agent is the separate long-running pool),
 * `new ReflectorSet({ upstream, resources, sinkFor: (info) => new WatchCache({ resource: info }) })`,
 * `parseLabelSelector` / `parseFieldSelector` from `cache/selectors.ts`, `encodeList` from
 * `cache/watch-cache.ts`. The module paths are kept in variables so this file type-checks
 * before those modules exist.
 */
export async function createParts(config: Config, logger: Logger): Promise<ProxyParts> {
  const load = (p: string) => import(p) as Promise<Record<string, never>>;
  // biome-ignore lint/suspicious/noExplicitAny: seam until the modules land on main (see TODO).
  const up: any = await load('./upstream/index.ts');
  // biome-ignore lint/suspicious/noExplicitAny: idem
  const refl: any = await load('./reflector/index.ts');
  // biome-ignore lint/suspicious/noExplicitAny: idem
  const wc: any = await load('./cache/watch-cache.ts');
  // biome-ignore lint/suspicious/noExplicitAny: idem
  const sel: any = await load('./cache/selectors.ts');
  const source = config.kubeconfig !== undefined ? { kubeconfig: config.kubeconfig } : {};
  const upstream = await up.createUpstream(source);
  const longRunning = await up.createUpstream(source);
  let set: { start(): void; stop(): Promise<void> } | undefined;
  return {
    upstream: {
      server: new URL(upstream.baseUrl),
      dispatcher: upstream.dispatcher,
      longRunningDispatcher: longRunning.dispatcher,
      authorization: () => upstream.authorization(),
    },
    codec: {
      parseLabelSelector: sel.parseLabelSelector,
      parseFieldSelector: sel.parseFieldSelector,
      encodeList: wc.encodeList,
    },
    startCaches(onCache) {
      set = new refl.ReflectorSet({
        upstream,
        resources: config.resources,
        logger,
        // --namespace: every reflector lists/watches only that namespace (namespace-scoped RBAC).
        ...(config.namespace !== undefined
          ? {
              listerWatcherFor: (info: unknown) =>
                new refl.HttpListerWatcher(upstream, info, config.namespace),
            }
          : {}),
        sinkFor: (info: unknown) => {
          const cache = new wc.WatchCache({ resource: info, logger });
          onCache(cache);
          return cache;
        },
      });
      set!.start();
    },
    async close() {
      await set?.stop();
      await upstream.close();
      await longRunning.close();
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
      io.stdout(`kube-cache-proxy ${version()}\n`);
      return EXIT_OK;
    }
    config = r.config;
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
    parts = await createParts(config, logger);
    proxy = await runProxy(config, parts, logger);
  } catch (err) {
    logger.fatal({ err }, 'kube-cache-proxy failed to start');
    io.stderr(`kube-cache-proxy: ${(err as Error).message}\n`);
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
