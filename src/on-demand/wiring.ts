/**
 * The real I/O of {@link OnDemandCaches} (`--resources=auto`), wired from the config and the
 * parts `createParts` (main.ts) already has: discovery on the reflectors' pool,
 * SelfSubjectAccessReviews on the reviews pool, caches added to and removed from the
 * {@link ResourceSet} (which serves and unserves them), each with the on-demand policy: its
 * first sync hands passed-through watches over, a relist or an error re-checks its resource.
 */
import type { ResourceInfo } from '../apimachinery/gvr.ts';
import { createReview, type ReviewUpstream } from '../auth/review-client.ts';
import type { Config } from '../config/config.ts';
import type { Metrics } from '../ops/metrics.ts';
import type { ResourceSet } from '../resources/resource-set.ts';
import { discoverResource, parseResourceName, type Upstream } from '../upstream/index.ts';
import { realClock } from '../util/clock.ts';
import type { Logger } from '../util/logger.ts';
import { OnDemandCaches } from './caches.ts';

/** What {@link createOnDemand} needs. */
export interface OnDemandDeps {
  config: Config;
  /** The reflectors' upstream (discovery). */
  upstream: Upstream;
  /** The proxy's own credentials on the reviews pool. */
  reviews: ReviewUpstream;
  /** The cached resources: on-demand ones are added to and removed from it. */
  set: ResourceSet;
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
  const manager: OnDemandCaches = new OnDemandCaches({
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
    start: (name, info, onError) =>
      d.set.add({
        name,
        origin: 'auto',
        info,
        policy: {
          onFirstSync: () => manager.synced(name),
          onRelist: () => manager.relisted(name),
          onError: (_r, err) => onError(err),
          lastUsedMs: () => manager.lastUsed(name) ?? null,
        },
      }),
    async stop(name) {
      await d.set.remove(name);
    },
    usage(name) {
      const s = d.set.get(name)?.cache?.stats();
      return s ? { watchers: s.watchers, bytes: s.bytes } : undefined;
    },
    totalBytes: () => d.set.totalBytes(),
    extendWindowBack: async (name, rv) => (await d.set.get(name)?.cache?.extendWindowBack?.(rv)) ?? false,
    clock: realClock,
    log: d.logger,
    ...(d.metrics ? { count: (event, reason) => d.metrics!.onDemandCaches.inc({ event, reason }) } : {}),
  });
  return manager;
}
