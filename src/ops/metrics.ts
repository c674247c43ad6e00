/**
 * The proxy's Prometheus metrics: one registry, served on the ops listener's `/metrics`.
 * Exports {@link createMetrics} and the {@link Metrics} handles, the bucket and label types, and
 * the {@link CacheStatusSource} that scrape-time gauges read. Names and buckets follow the
 * apiserver's (`pkg/storage/cacher/metrics`, `pkg/endpoints/metrics`) and client-go's `tools/metrics`.
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { ResourceState } from '../resources/resource-state.ts';
import { type Clock, realClock } from '../util/clock.ts';
import { type KnownResources, ResourceLabelBounds } from './metric-labels.ts';
import { createRequestMetrics } from './request-metrics.ts';

/**
 * Every Prometheus metric of kube-cache-proxy, in one registry served on the ops listener's
 * `/metrics` (docs/design.md §5). Names carry the `kube_cache_proxy_` prefix and copy the apiserver's
 * where the concept is the same, so dashboards and alerts written for the apiserver's watch cache
 * read naturally:
 * - `staging/src/k8s.io/apiserver/pkg/storage/cacher/metrics/metrics.go`
 *   (`apiserver_watch_cache_events_dispatched_total`, `apiserver_terminated_watchers_total`,
 *   `apiserver_watch_cache_resource_version`, `apiserver_watch_cache_capacity`,
 *   `apiserver_watch_cache_read_wait_seconds`), labelled `group`, `resource`;
 * - `staging/src/k8s.io/apiserver/pkg/endpoints/metrics/metrics.go`
 *   (`apiserver_request_total`, `apiserver_request_duration_seconds`,
 *   `apiserver_registered_watchers`);
 * - client-go `tools/metrics` (`rest_client_requests_total`, whose `code` is `<error>` when no
 *   HTTP answer arrived) for the upstream side.
 *
 * Counters and histograms are pushed by the code that sees the event (reflector, watch cache,
 * server). Gauges that merely mirror state (synced, RV, object counts, window, watchers) are
 * NOT pushed on the hot path: they are computed at scrape time from a {@link CacheStatusSource}.
 */

/** Metric name prefix. */
export const METRIC_PREFIX = 'kube_cache_proxy_';

export { REQUEST_DURATION_BUCKETS } from './request-metrics.ts';

/** Buckets (seconds) of `apiserver_watch_cache_read_wait_seconds` (the wait is capped at 3 s). */
export const READ_WAIT_BUCKETS = [0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3];

/**
 * Where a downstream request was answered from (label `served_from`); `none` when the client
 * left while the request waited for the cache (reason `aborted`, code 499): nothing was sent.
 */
export type ServedFrom = 'cache' | 'upstream' | 'none';

/**
 * Outcome of a request that waited for the cache to become fresh enough (label `result` of
 * `kube_cache_proxy_watch_cache_read_wait_seconds`): `fresh` when the cache caught up and
 * answered, `timeout` when the bounded wait (3 s) ran out and the request was forwarded.
 */
export type ReadWaitResult = 'fresh' | 'timeout';

/**
 * Read-only view of every configured resource, in configuration order, as the one state model
 * (`resources/resource-state.ts`). Must be cheap (no I/O).
 */
export interface CacheStatusSource {
  resources(): ResourceState[];
}

/** An empty source: no resource configured yet. */
export const emptyStatusSource: CacheStatusSource = { resources: () => [] };

type GR = 'group' | 'resource';

/** The typed metric handles of kube-cache-proxy. See {@link createMetrics}. */
export interface Metrics {
  /** The registry holding every metric below plus the default Node.js process metrics. */
  readonly registry: Registry;

  // --- upstream (the proxy as an apiserver client) ---
  /**
   * `kube_cache_proxy_upstream_requests_total{verb,group,resource,code}`: requests the proxy
   * sent upstream (reflector lists/watches and pass-through). `verb` is the Kubernetes verb in
   * upper case as in `apiserver_request_total` (`LIST`, `WATCH`, `GET`, `CREATE`, `UPDATE`,
   * `PATCH`, `DELETE`, `DELETECOLLECTION`, `PROXY`, or the HTTP method for non-resource paths);
   * `resource` is "" for non-resource paths; `code` is the HTTP status or `<error>` when no
   * response arrived (client-go `rest_client_requests_total`).
   */
  readonly upstreamRequests: Counter<'verb' | GR | 'code'>;
  /**
   * `kube_cache_proxy_upstream_request_duration_seconds{verb,group,resource}`: seconds until the
   * upstream response headers arrived (for watches: until the stream was established).
   */
  readonly upstreamRequestDuration: Histogram<'verb' | GR>;

  // --- reflector ---
  // `kube_cache_proxy_reflector_relists_total{group,resource,reason}`,
  // `kube_cache_proxy_reflector_watch_restarts_total{group,resource}` and
  // `kube_cache_proxy_reflector_watch_list_fallbacks_total{group,resource}` are counters the
  // reflector already keeps (ReflectorStatus): they are read from the status source at scrape
  // time rather than pushed twice.
  /** `kube_cache_proxy_watch_cache_events_received_total{group,resource}`: events from upstream (not bookmarks). */
  readonly eventsReceived: Counter<GR>;

  // --- watch cache fan-out ---
  /**
   * `kube_cache_proxy_watch_cache_events_dispatched_total{group,resource}`: events handed to
   * the fan-out, counted once per event whatever the number of watchers (as the apiserver).
   */
  readonly eventsDispatched: Counter<GR>;
  /** `kube_cache_proxy_terminated_watchers_total{group,resource,reason}`: `reason` a cache `TerminationReason` (KEP-6268). */
  readonly terminatedWatchers: Counter<GR | 'reason'>;
  /** `kube_cache_proxy_watch_cache_watcher_stalls_total{group,resource}`: watchers parked (queue full). */
  readonly watcherStalls: Counter<GR>;
  /** `kube_cache_proxy_watch_cache_watcher_catchup_rounds_total{group,resource}`: parked watchers that caught up. */
  readonly watcherCatchupRounds: Counter<GR>;

  // --- downstream (the proxy as an apiserver) ---
  /**
   * `kube_cache_proxy_requests_total{verb,group,version,resource,subresource,code,served_from,reason}`:
   * every request answered on the main listener. Labels as `apiserver_request_total`, plus
   * `served_from` (`cache` | `upstream` | `none`, a {@link ServedFrom}) and `reason`: why a request was
   * served upstream, one of the closed list `UPSTREAM_REASONS` (`src/server/delegate.ts`,
   * docs/delegation.md); "" for answers from the cache.
   */
  readonly requests: Counter<'verb' | GR | 'version' | 'subresource' | 'code' | 'served_from' | 'reason'>;
  /**
   * `kube_cache_proxy_request_duration_seconds{verb,group,version,resource,subresource,served_from}`:
   * latency until the complete answer was written. Not observed for WATCH (long-running; the
   * open ones are `kube_cache_proxy_registered_watchers`).
   */
  readonly requestDuration: Histogram<'verb' | GR | 'version' | 'subresource' | 'served_from'>;
  /**
   * `kube_cache_proxy_watch_cache_read_wait_seconds{group,resource,result}`: requests that had to
   * wait for the cache to reach a resourceVersion (RV=N NotOlderThan, read-your-writes,
   * sendInitialEvents with RV=N), and how long; `result` is a {@link ReadWaitResult}. Requests
   * that did not wait are not observed.
   */
  readonly readWait: Histogram<GR | 'result'>;

  // --- who asks (docs/design.md §4; named after the apiserver's) ---
  /** `kube_cache_proxy_authentication_attempts_total{result}`: `success` | `failure` | `error` (`--delegated-auth`). */
  readonly authenticationAttempts: Counter<'result'>;
  /** `kube_cache_proxy_authorization_decisions_total{decision}`: cached reads authorized, `allowed` | `denied` | `error`. */
  readonly authorizationDecisions: Counter<'decision'>;
  /**
   * `kube_cache_proxy_webhook_cache_requests_total{cache,result}`: lookups of the TokenReview
   * (`cache="authentication"`) and SubjectAccessReview (`"authorization"`) caches, `hit` | `miss`.
   */
  readonly webhookCacheRequests: Counter<'cache' | 'result'>;

  /**
   * `kube_cache_proxy_requests_refused_total{code}`: requests the main listener refused before
   * serving them: 401/403 (who asks, `admit`) and 429 (`--max-inflight`, `--max-watchers`). They
   * are not in `requests_total`: a refused client must not choose labels.
   */
  readonly refusedRequests: Counter<'code'>;
  /**
   * `kube_cache_proxy_metric_series_folded_total{family}`: observations of the four request
   * families (`family` is the metric name without prefix) whose new label set was beyond the
   * family's cap and folded into the label set of `<other>`s (`metric-labels.ts` SeriesCap).
   */
  readonly seriesFolded: Counter<'family'>;

  /**
   * The bound on the resource labels of the request metrics above (`metric-labels.ts`): callers
   * pass their group/version/resource/subresource through it, and verbs and codes through
   * `boundVerb`/`boundCode`, before labelling. Its `known` is what may label a metric (the
   * wiring feeds it the cached resources and a discovery source). The four request families are
   * then capped per family ({@link MetricsOptions}), whatever their callers pass.
   */
  readonly resourceLabels: ResourceLabelBounds;

  /**
   * Sets where the state-mirroring gauges read from (usually once, after the caches exist).
   * Until set, those gauges export no series.
   */
  setStatusSource(source: CacheStatusSource): void;
  /**
   * `kube_cache_proxy_on_demand_caches_total{event,reason}`: on-demand caches (`--resources=auto`)
   * `started` (reason `request`), `stopped` (`idle`, `evicted`, `resource-gone`) and `refused`
   * (`excluded`, `not-list-watchable`, `forbidden`, `at-capacity`, `error`). Bounded by those lists.
   */
  readonly onDemandCaches: Counter<'event' | 'reason'>;
  /** The Prometheus text exposition of everything (what `/metrics` serves). */
  scrape(): Promise<string>;
}

/** Options for {@link createMetrics}. */
export interface MetricsOptions {
  /** Where state-mirroring gauges read from; can also be set later with `setStatusSource`. */
  source?: CacheStatusSource;
  /** Time source for ages and timestamps (tests pass a FakeClock). Default real time. */
  clock?: Clock;
  /**
   * Register prom-client's default Node.js process metrics (`process_*`, `nodejs_*`, without
   * prefix, as every Prometheus client library names them). Default true.
   */
  processMetrics?: boolean;
  /**
   * Label sets kept per request counter / histogram family before new ones are folded
   * (defaults `DEFAULT_MAX_COUNTER_LABEL_SETS` 2000, `DEFAULT_MAX_HISTOGRAM_LABEL_SETS` 1000).
   */
  maxLabelSets?: { counter?: number; histogram?: number };
  /** What may label a metric (default: an empty {@link KnownResources}, fed later). */
  knownResources?: KnownResources;
}

/**
 * The apiserver truncates the watch cache RV to its 15 least significant decimal digits so the
 * float64 gauge stays exact (cacher/metrics `RecordResourceVersion`). Same here; returns
 * undefined for an RV that does not parse as a decimal integer (nothing is exported then).
 */
export function resourceVersionGaugeValue(rv: string): number | undefined {
  if (!/^[0-9]{1,20}$/.test(rv)) return undefined;
  return Number(BigInt(rv) % 1_000_000_000_000_000n);
}

/**
 * Creates a fresh registry with every kube-cache-proxy metric (a new one per call, so tests and
 * several proxies in one process never share state). Never throws for valid options.
 */
export function createMetrics(opts: MetricsOptions = {}): Metrics {
  const registry = new Registry();
  const clock = opts.clock ?? realClock;
  let source: CacheStatusSource = opts.source ?? emptyStatusSource;
  const registers = [registry];
  const name = (n: string) => METRIC_PREFIX + n;
  const gr = ['group', 'resource'] as const;
  const grc = (n: string, help: string) => new Counter({ name: name(n), help, labelNames: gr, registers });

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
        for (const s of source.resources()) {
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
      for (const s of source.resources())
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
      for (const s of source.resources())
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
        for (const s of source.resources()) {
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
      ...(s.synced ? [[{ reason: 'initial' }, 1] as [Record<'reason', string>, number]] : []),
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

  const rm = createRequestMetrics(name, registers, opts.maxLabelSets);
  const metrics: Metrics = {
    registry,
    ...rm,
    eventsReceived: grc(
      'watch_cache_events_received_total',
      'Events received from upstream by the watch cache.',
    ),
    eventsDispatched: grc(
      'watch_cache_events_dispatched_total',
      'Events dispatched to watchers by the watch cache (once per event).',
    ),
    terminatedWatchers: new Counter({
      name: name('terminated_watchers_total'),
      help: 'Watchers the watch cache ended for cause, by reason (unresponsive|resource_expired|resource_expired_initial|stalled_client).',
      labelNames: [...gr, 'reason'],
      registers,
    }),
    watcherStalls: grc('watch_cache_watcher_stalls_total', 'Watchers parked (queue full, not read).'),
    watcherCatchupRounds: grc('watch_cache_watcher_catchup_rounds_total', 'Parked watchers that caught up.'),
    readWait: new Histogram({
      name: name('watch_cache_read_wait_seconds'),
      help: 'Seconds requests waited for the watch cache to become fresh enough, by result (fresh|timeout).',
      labelNames: ['group', 'resource', 'result'],
      buckets: READ_WAIT_BUCKETS,
      registers,
    }),
    authenticationAttempts: new Counter({
      name: name('authentication_attempts_total'),
      help: 'Requests authenticated with --delegated-auth, by result (success|failure|error).',
      labelNames: ['result'],
      registers,
    }),
    authorizationDecisions: new Counter({
      name: name('authorization_decisions_total'),
      help: 'Cached reads authorized by SubjectAccessReview, by decision (allowed|denied|error).',
      labelNames: ['decision'],
      registers,
    }),
    webhookCacheRequests: new Counter({
      name: name('webhook_cache_requests_total'),
      help: 'Lookups of the TokenReview (authentication) and SubjectAccessReview (authorization) decision caches, by result (hit|miss).',
      labelNames: ['cache', 'result'],
      registers,
    }),
    onDemandCaches: new Counter({
      name: name('on_demand_caches_total'),
      help: 'On-demand caches (--resources=auto) started, stopped and refused, by reason.',
      labelNames: ['event', 'reason'],
      registers,
    }),
    resourceLabels: new ResourceLabelBounds(opts.knownResources),
    setStatusSource(s) {
      source = s;
    },
    scrape: () => registry.metrics(),
  };

  if (opts.processMetrics ?? true) collectDefaultMetrics({ register: registry });
  return metrics;
}
