/**
 * The watch cache of one resource whose reflector starts (the `sinkFor` of the reflector set,
 * wired by main.ts): the cache with its metrics hooks and its gap prover, registered and served,
 * and the sink its reflector writes into, observed for the events metric, the first sync (an
 * on-demand cache ends its passed-through watches) and every relist (issue 15: the resource may
 * have changed upstream, a CRD re-created with another scope: an on-demand cache is stopped, a
 * configured one stops being served, `configured-recheck.ts`).
 */
import type { ResourceInfo } from './apimachinery/gvr.ts';
import { WatchCache } from './cache/watch-cache.ts';
import { configuredRecheck } from './configured-recheck.ts';
import type { OnDemandCaches } from './on-demand/caches.ts';
import { entryName } from './on-demand/names.ts';
import type { Metrics } from './ops/metrics.ts';
import { type CacheSink, observedSink } from './reflector/cache-sink.ts';
import { proveNoEventsBetween } from './reflector/gap-proof.ts';
import type { ListerWatcher } from './reflector/list-watch.ts';
import type { ServedCache } from './server/cache-api.ts';
import { discoverResource, type Upstream } from './upstream/index.ts';
import { realClock } from './util/clock.ts';
import type { Logger } from './util/logger.ts';

/** What {@link cacheFor} needs beyond the resource. */
export interface CacheForDeps {
  logger: Logger;
  metrics: Metrics | undefined;
  /** Watch caches by entry name: the new one is added. */
  caches: Map<string, WatchCache>;
  /** Serves a new cache (the server's registry). */
  onCache: (cache: ServedCache) => void;
  /** Stops serving a cache (its requests pass upstream). */
  unserve: ((cache: ServedCache) => void) | undefined;
  onDemand: OnDemandCaches | undefined;
  /** The reflectors' upstream (discovery after a relist of a configured cache). */
  upstream: Upstream;
}

/** The sink of `info` (entry `name`, read through `lw`); see the module comment. */
export function cacheFor(info: ResourceInfo, name: string, lw: ListerWatcher, d: CacheForDeps): CacheSink {
  const { metrics, logger } = d;
  const gr = { group: info.gvr.group, resource: info.gvr.resource };
  const cache = new WatchCache({
    resource: info,
    logger,
    // A watch resuming below the window after a (re)start asks the upstream first (docs/design.md §6).
    gapProver: (from, to, signal) => proveNoEventsBetween(lw, from, to, signal),
    ...(metrics
      ? {
          onEventDispatched: () => metrics.eventsDispatched.inc(gr),
          onWatcherTerminated: () => metrics.terminatedWatchers.inc(gr),
        }
      : {}),
  });
  d.caches.set(name, cache);
  d.onCache(cache);
  const auto = d.onDemand?.has(name) ? d.onDemand : undefined;
  const onRelist = auto
    ? () => auto.relisted(name)
    : configuredRecheck({
        info,
        discover: () => discoverResource(d.upstream, entryName(info.gvr)),
        unserve: () => d.unserve?.(cache),
        clock: realClock,
        log: logger,
      });
  return observedSink(cache, {
    ...(metrics ? { onEvent: () => metrics.eventsReceived.inc(gr) } : {}),
    ...(auto ? { onFirstSync: () => auto.synced(name) } : {}),
    onRelist,
  });
}
