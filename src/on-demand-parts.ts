/**
 * The real I/O of {@link OnDemandCaches} (`--resources=auto`), wired from the config and the
 * parts `createParts` (main.ts) already has: discovery on the reflectors' pool,
 * SelfSubjectAccessReviews on the reviews pool, caches added to and removed from the reflector
 * set and the server.
 */
import type { ResourceInfo } from './apimachinery/gvr.ts';
import { createReview, type ReviewUpstream } from './auth/review-client.ts';
import type { WatchCache } from './cache/watch-cache.ts';
import type { Config } from './config.ts';
import { OnDemandCaches } from './on-demand/caches.ts';
import type { Metrics } from './ops/metrics.ts';
import type { ReflectorSet } from './reflector/index.ts';
import type { ServedCache } from './server/cache-api.ts';
import { discoverResource, parseResourceName, type Upstream } from './upstream/index.ts';
import { realClock } from './util/clock.ts';
import type { Logger } from './util/logger.ts';

/** What {@link createOnDemand} needs; `set` and `unserve` exist only once caches are started. */
export interface OnDemandDeps {
  config: Config;
  /** The reflectors' upstream (discovery). */
  upstream: Upstream;
  /** The proxy's own credentials on the reviews pool. */
  reviews: ReviewUpstream;
  set: () => ReflectorSet | undefined;
  /** Watch caches by entry name (filled by the set's `sinkFor`). */
  caches: Map<string, WatchCache>;
  /** Removes a cache from the server's registry (its requests then pass upstream). */
  unserve: () => ((cache: ServedCache) => void) | undefined;
  logger: Logger;
  metrics?: Metrics;
}

interface SelfSubjectAccessReviewAnswer {
  status?: { allowed?: boolean };
}

/**
 * The on-demand manager of `config` (undefined when `--resources` has no `auto`).
 * SelfSubjectAccessReview: `authorization.k8s.io/v1`, what `kubectl auth can-i` sends.
 */
export function createOnDemand(d: OnDemandDeps): OnDemandCaches | undefined {
  const c = d.config;
  if (!c.auto) return undefined;
  return new OnDemandCaches({
    exclude: c.autoExclude,
    idleTimeoutMs: c.autoIdleTimeout,
    maxResources: c.autoMaxResources,
    maxBytes: c.autoMaxBytes,
    configured: c.resources.map((r) => {
      const n = parseResourceName(r.name);
      return { group: n.group, resource: n.resource };
    }),
    ...(c.namespace !== undefined ? { namespace: c.namespace } : {}),
    discover: (name) => discoverResource(d.upstream, name, AbortSignal.timeout(30_000)),
    async allowed(verb, info: ResourceInfo, namespace) {
      const a = await createReview<SelfSubjectAccessReviewAnswer>(
        d.reviews,
        '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
        {
          apiVersion: 'authorization.k8s.io/v1',
          kind: 'SelfSubjectAccessReview',
          spec: {
            resourceAttributes: {
              verb,
              group: info.gvr.group,
              version: info.gvr.version,
              resource: info.gvr.resource,
              ...(namespace ? { namespace } : {}),
            },
          },
        },
      );
      return a.status?.allowed === true;
    },
    start: (name, info, onError) => d.set()?.add({ name, origin: 'auto', info, onError }) ?? false,
    async stop(name) {
      const cache = d.caches.get(name);
      if (cache) d.unserve()?.(cache);
      await d.set()?.remove(name);
      cache?.close();
      d.caches.delete(name);
    },
    usage(name) {
      const s = d.caches.get(name)?.stats();
      return s ? { watchers: s.watchers, bytes: s.bytes } : undefined;
    },
    totalBytes: () => {
      let n = 0;
      for (const cache of d.caches.values()) n += cache.stats().bytes;
      return n;
    },
    clock: realClock,
    log: d.logger,
    ...(d.metrics ? { count: (event, reason) => d.metrics!.onDemandCaches.inc({ event, reason }) } : {}),
  });
}
