/**
 * The per-resource gauges and mirrored counters of the proxy's metrics that are computed at
 * scrape time from the resources' state (synced, live, RV, objects, bytes, window, watchers,
 * scope and origin info, relists, watch restarts): nothing on the hot path pushes them. Names
 * copy the apiserver's cacher metrics (`pkg/storage/cacher/metrics/metrics.go`); see metrics.ts.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { ResourceState } from '../resources/resource-state.ts';
import type { Clock } from '../util/clock.ts';

type GR = 'group' | 'resource';

/**
 * Read-only view of every configured resource, in configuration order, as the one state model
 * (`resources/resource-state.ts`). Must be cheap (no I/O).
 */
export interface CacheStatusSource {
  resources(): ResourceState[];
}

/** An empty source: no resource configured yet. */
export const emptyStatusSource: CacheStatusSource = { resources: () => [] };

/**
 * The apiserver truncates the watch cache RV to its 15 least significant decimal digits so the
 * float64 gauge stays exact (cacher/metrics `RecordResourceVersion`). Same here; returns
 * undefined for an RV that does not parse as a decimal integer (nothing is exported then).
 */
export function resourceVersionGaugeValue(rv: string): number | undefined {
  if (!/^[0-9]{1,20}$/.test(rv)) return undefined;
  return Number(BigInt(rv) % 1_000_000_000_000_000n);
}

/** What {@link registerCacheStateMetrics} needs from the registry's owner. */
export interface CacheStateMetricsOptions {
  /** Prefixes a metric name (`kube_cache_proxy_`). */
  name(n: string): string;
  registers: Registry[];
  clock: Clock;
  /** The current status source (the owner may replace it after the metrics exist). */
  source(): CacheStatusSource;
}

/**
 * Registers the scrape-time gauges and counters on `registers`. Each scrape resets them and
 * reads every resource's {@link ResourceState} once, so a removed cache's series disappear.
 */
export function registerCacheStateMetrics(o: CacheStateMetricsOptions): void {
  const { name, registers, clock, source } = o;
  const gr = ['group', 'resource'] as const;

  /** A gauge recomputed from the status source on each scrape. */
  const stateGauge = (
    n: string,
    help: string,
    value: (s: ResourceState, nowMs: number) => number | undefined,
  ) =>
    new Gauge<GR>({
      name: name(n),
      help,
      labelNames: gr,
      registers,
      collect() {
        this.reset();
        const now = clock.now();
        for (const s of source().resources()) {
          const v = value(s, now);
          if (v !== undefined) this.set({ group: s.gvr.group, resource: s.gvr.resource }, v);
        }
      },
    });

  const seconds = (ms: number | null) => (ms === null ? undefined : ms / 1000);

  stateGauge(
    'reflector_synced',
    'Whether the resource has completed its first snapshot (1) or not (0).',
    (s) => (s.synced ? 1 : 0),
  );
  stateGauge(
    'reflector_upstream_live',
    'Whether the upstream watch stream is proven live (an event or bookmark within the liveness window).',
    (s) => (s.live ? 1 : 0),
  );
  stateGauge(
    'reflector_last_sync_timestamp_seconds',
    'Unix time of the last complete snapshot (list or watch-list) stored in the cache.',
    (s) => seconds(s.lastSyncTimeMs),
  );
  stateGauge(
    'reflector_last_progress_timestamp_seconds',
    'Unix time of the last event or bookmark received from upstream; time() minus this is the staleness bound.',
    (s) => seconds(s.lastProgressTimeMs),
  );
  stateGauge(
    'watch_cache_resource_version',
    'Current resource version of the watch cache, truncated to the 15 least significant digits.',
    (s) => resourceVersionGaugeValue(s.resourceVersion),
  );
  stateGauge('watch_cache_objects', 'Objects in the watch cache store.', (s) => s.objects);
  stateGauge(
    'watch_cache_bytes',
    'Bytes held by the objects in the watch cache store (raw bytes, kept metadata and copies).',
    (s) => s.bytes,
  );
  stateGauge(
    'watch_cache_capacity',
    'Capacity of the watch cache event history (events).',
    (s) => s.historyCapacity,
  );
  stateGauge(
    'watch_cache_history_events',
    'Events buffered in the watch cache history.',
    (s) => s.historyEvents,
  );
  stateGauge(
    'watch_cache_history_bytes',
    'Bytes held by the events buffered in the history.',
    (s) => s.historyBytes,
  );
  stateGauge(
    'watch_cache_oldest_resource_version_age_seconds',
    'Age of the oldest event in the history window: how far back a WATCH can resume.',
    (s, now) => (s.oldestEventTimeMs === null ? undefined : Math.max(0, now - s.oldestEventTimeMs) / 1000),
  );
  stateGauge('registered_watchers', 'Open watchers served from the watch cache.', (s) => s.watchers);
  stateGauge('watch_cache_stalled_watchers', 'Watchers parked right now.', (s) => s.parkedWatchers);
  // The scope is a label of its own gauge (an info metric), not of every per-resource series:
  // one value per configured resource, bounded by the configuration.
  new Gauge<GR | 'scope'>({
    name: name('watch_cache_scope_info'),
    help: 'Always 1: the scope a cached resource is listed and watched with (--resources [fieldSelector=…;labelSelector=…]), "" for a whole resource.',
    labelNames: [...gr, 'scope'],
    registers,
    collect() {
      this.reset();
      for (const s of source().resources())
        this.set({ group: s.gvr.group, resource: s.gvr.resource, scope: s.scope }, 1);
    },
  });

  // Why each cache exists (configured | auto) and the one namespace it holds, if restricted: an
  // info metric, one series per cache; an evicted on-demand cache's series disappear with it.
  new Gauge<GR | 'origin' | 'namespace'>({
    name: name('watch_cache_info'),
    help: 'Always 1: a cache that exists, by origin (configured: --resources; auto: started on demand by a request) and the namespace it is restricted to ("" for all namespaces).',
    labelNames: [...gr, 'origin', 'namespace'],
    registers,
    collect() {
      this.reset();
      for (const s of source().resources())
        this.set(
          { group: s.gvr.group, resource: s.gvr.resource, origin: s.origin, namespace: s.namespace },
          1,
        );
    },
  });
  stateGauge(
    'watch_cache_started_timestamp_seconds',
    'Unix time the cache was added (process start for configured caches, the first request for on-demand ones).',
    (s) => seconds(s.startedMs),
  );
  stateGauge(
    'watch_cache_last_used_timestamp_seconds',
    'On-demand caches: Unix time of the last use (a request the cache served or could serve) or open watcher of it (idle eviction counts from it).',
    (s) => seconds(s.lastUsedMs),
  );

  /** A counter mirrored from the reflector's own monotonic counts on each scrape. */
  const mirroredCounter = <L extends string>(
    n: string,
    help: string,
    labelNames: readonly L[],
    values: (s: ResourceState) => Array<[Partial<Record<L, string>>, number]>,
  ) =>
    new Counter<GR | L>({
      name: name(n),
      help,
      labelNames: [...gr, ...labelNames],
      registers,
      collect() {
        this.reset();
        for (const s of source().resources()) {
          for (const [labels, v] of values(s)) {
            this.inc({ group: s.gvr.group, resource: s.gvr.resource, ...labels } as never, v);
          }
        }
      },
    });
  mirroredCounter(
    'reflector_relists_total',
    'Complete snapshots (list or watch-list) taken from upstream, by reason (initial, expired, watch_error, ...).',
    ['reason'],
    (s) => [
      // A warm start took no initial LIST (its first one, if any, has its reason in `relists`).
      ...(s.synced && !s.warmStart ? [[{ reason: 'initial' }, 1] as [Record<'reason', string>, number]] : []),
      ...Object.entries(s.relists).map(([r, v]) => [{ reason: r }, v] as [Record<'reason', string>, number]),
    ],
  );
  mirroredCounter(
    'reflector_watch_restarts_total',
    'Upstream watches re-established without a relist (watch timeouts, liveness restarts, 429, retried 5xx).',
    [],
    (s) => [[{}, s.watchRestarts]],
  );
  mirroredCounter(
    'reflector_watch_list_fallbacks_total',
    'Watch-list (sendInitialEvents) attempts that fell back to LIST + WATCH.',
    [],
    (s) => [[{}, s.watchListFallbacks]],
  );
}
