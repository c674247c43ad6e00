/**
 * The proxy's Prometheus metrics: one registry, served on the ops listener's `/metrics`.
 * Exports {@link createMetrics} and the {@link Metrics} handles, the bucket and label types, and
 * the {@link CacheStatusSource} that scrape-time gauges read. Names and buckets follow the
 * apiserver's (`pkg/storage/cacher/metrics`, `pkg/endpoints/metrics`) and client-go's `tools/metrics`.
 */

import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { ResourceMetricsHooks } from '../resources/cached-resource.ts';
import { type Clock, realClock } from '../util/clock.ts';
import { type AuditMetrics, createAuditMetrics } from './audit-metrics.ts';
import {
  type CacheStatusSource,
  emptyStatusSource,
  registerCacheStateMetrics,
} from './cache-state-metrics.ts';
import { type KnownResources, ResourceLabelBounds } from './metric-labels.ts';
import { createRequestMetrics } from './request-metrics.ts';
import { createSnapshotMetrics, type SnapshotMetrics } from './snapshot-metrics.ts';

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
 *   (`apiserver_request_total`, `apiserver_request_duration_seconds`, `apiserver_registered_watchers`);
 * - client-go `tools/metrics` (`rest_client_requests_total`, whose `code` is `<error>` when no
 *   HTTP answer arrived) for the upstream side.
 *
 * Counters and histograms are pushed by the code that sees the event (reflector, watch cache,
 * server). Gauges that merely mirror state (synced, RV, object counts, window, watchers) are
 * NOT pushed on the hot path: they are computed at scrape time from a {@link CacheStatusSource}.
 */

/** Metric name prefix. */
export const METRIC_PREFIX = 'kube_cache_proxy_';

export {
  type CacheStatusSource,
  emptyStatusSource,
  resourceVersionGaugeValue,
} from './cache-state-metrics.ts';
export { REQUEST_DURATION_BUCKETS } from './request-metrics.ts';

/**
 * Buckets of `…_watch_cache_watcher_catchup_events` (events per catch-up): the apiserver's
 * `WatcherCatchupEvents` (`storage/cacher/metrics`, KEP-6268).
 */
export const CATCHUP_EVENTS_BUCKETS = [1, 10, 50, 100, 500, 1000, 5000, 10_000, 50_000, 100_000];

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

type GR = 'group' | 'resource';

/** The typed metric handles of kube-cache-proxy. See {@link createMetrics}. */
export interface Metrics extends AuditMetrics, SnapshotMetrics {
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
  /**
   * `kube_cache_proxy_watch_cache_watcher_catchup_events{group,resource}`: history events each
   * parked watcher's catch-up sent before it rejoined the live stream (KEP-6268's buckets).
   */
  readonly watcherCatchupEvents: Histogram<GR>;
  /** `kube_cache_proxy_compaction_probes_total{group,resource,result}`: the compaction floor's probes. */
  readonly compactionProbes: Counter<GR | 'result'>;

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
   * `kube_cache_proxy_outage_grace_decisions_total{cache}`: TokenReview (`cache="authentication"`)
   * and SubjectAccessReview (`"authorization"`) answers reused within `--authorization-outage-grace`
   * because the review failed.
   */
  readonly outageGraceDecisions: Counter<'cache'>;

  /**
   * `kube_cache_proxy_requests_refused_total{code}`: requests the main listener refused before
   * serving them: 401/403 (who asks, `admit`) and 429 (`--max-inflight`, `--max-watchers`). They
   * are not in `requests_total`: a refused client must not choose labels.
   */
  readonly refusedRequests: Counter<'code'>;
  /** `kube_cache_proxy_requests_filtered_total{filter}`: 403s of the path and method filter, by flag (`reject-paths` | `reject-methods` | `accept-paths`; never the path). */
  readonly filteredRequests: Counter<'filter'>;
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
  /**
   * `kube_cache_proxy_serving_certificate_expiry_timestamp_seconds`: `notAfter` (s since the epoch)
   * of the serving certificate in use; registered by the wiring with TLS only (no series without).
   */
  readonly servingCertificateExpiry: Gauge;
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

  registerCacheStateMetrics({ name, registers, clock, source: () => source });

  const rm = createRequestMetrics(name, registers, opts.maxLabelSets);
  const metrics: Metrics = {
    registry,
    ...rm,
    eventsReceived: new Counter({
      name: name('watch_cache_events_received_total'),
      help: 'Events received from upstream by the watch cache.',
      labelNames: gr,
      registers,
    }),
    eventsDispatched: new Counter({
      name: name('watch_cache_events_dispatched_total'),
      help: 'Events dispatched to watchers by the watch cache (once per event).',
      labelNames: gr,
      registers,
    }),
    terminatedWatchers: new Counter({
      name: name('terminated_watchers_total'),
      help: 'Watchers the watch cache ended for cause, by reason (unresponsive|resource_expired|resource_expired_initial|stalled_client).',
      labelNames: [...gr, 'reason'],
      registers,
    }),
    watcherStalls: new Counter({
      name: name('watch_cache_watcher_stalls_total'),
      help: 'Watchers parked (queue full, not read).',
      labelNames: gr,
      registers,
    }),
    watcherCatchupRounds: new Counter({
      name: name('watch_cache_watcher_catchup_rounds_total'),
      help: 'Parked watchers that caught up.',
      labelNames: gr,
      registers,
    }),
    watcherCatchupEvents: new Histogram({
      name: name('watch_cache_watcher_catchup_events'),
      help: 'History events sent per parked watcher catch-up (how far behind it was, in events of its filter).',
      labelNames: gr,
      buckets: CATCHUP_EVENTS_BUCKETS,
      registers,
    }),
    compactionProbes: new Counter({
      name: name('compaction_probes_total'),
      help: 'Exact LISTs of one item sent to learn the compacted resourceVersions, by result (compacted|available|unknown).',
      labelNames: [...gr, 'result'],
      registers,
    }),
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
    filteredRequests: new Counter({
      name: name('requests_filtered_total'),
      help: 'Requests refused (403) by --accept-paths, --reject-paths or --reject-methods, by the flag that refused them.',
      labelNames: ['filter'],
      registers,
    }),
    webhookCacheRequests: new Counter({
      name: name('webhook_cache_requests_total'),
      help: 'Lookups of the TokenReview (authentication) and SubjectAccessReview (authorization) decision caches, by result (hit|miss).',
      labelNames: ['cache', 'result'],
      registers,
    }),
    outageGraceDecisions: new Counter({
      name: name('outage_grace_decisions_total'),
      help: 'Allowed TokenReview (authentication) and SubjectAccessReview (authorization) answers reused past their TTL within --authorization-outage-grace because the review failed.',
      labelNames: ['cache'],
      registers,
    }),
    onDemandCaches: new Counter({
      name: name('on_demand_caches_total'),
      help: 'On-demand caches (--resources=auto) started, stopped and refused, by reason.',
      labelNames: ['event', 'reason'],
      registers,
    }),
    servingCertificateExpiry: new Gauge({
      name: name('serving_certificate_expiry_timestamp_seconds'),
      help: "Expiry (notAfter) of the main listener's serving certificate in use, in seconds since the epoch.",
      registers: [],
    }),
    ...createAuditMetrics(registry, METRIC_PREFIX),
    ...createSnapshotMetrics(registry, METRIC_PREFIX),
    resourceLabels: new ResourceLabelBounds(opts.knownResources),
    setStatusSource(s) {
      source = s;
    },
    scrape: () => registry.metrics(),
  };

  if (opts.processMetrics ?? true) collectDefaultMetrics({ register: registry });
  return metrics;
}

/** The counters a cached resource pushes (`resources/cached-resource.ts` ResourceMetricsHooks), into `m`. */
export function resourceMetricsHooks(m: Metrics): ResourceMetricsHooks {
  return {
    eventReceived: (l) => m.eventsReceived.inc(l),
    eventDispatched: (l) => m.eventsDispatched.inc(l),
    watcherTerminated: (l, reason) => m.terminatedWatchers.inc({ ...l, reason }),
    watcherParked: (l) => m.watcherStalls.inc(l),
    watcherResumed: (l, catchupEvents) => {
      m.watcherCatchupRounds.inc(l);
      m.watcherCatchupEvents.observe(l, catchupEvents);
    },
    compactionProbe: (l, result) => m.compactionProbes.inc({ ...l, result }),
  };
}
