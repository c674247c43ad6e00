/**
 * The four request families of the proxy's metrics (`kube_cache_proxy_requests_total`,
 * `…_request_duration_seconds`, `…_upstream_requests_total`, `…_upstream_request_duration_seconds`),
 * each behind a hard cap on its label sets (`metric-labels.ts` {@link SeriesCap}), with
 * the counter of what the caps folded and the counter of refused requests. Exports
 * {@link createRequestMetrics} (used by `metrics.ts` `createMetrics`) and
 * {@link REQUEST_DURATION_BUCKETS}.
 */
import { Counter, Histogram, type LabelValues, type Registry } from 'prom-client';
import {
  DEFAULT_MAX_COUNTER_LABEL_SETS,
  DEFAULT_MAX_HISTOGRAM_LABEL_SETS,
  SeriesCap,
} from './metric-labels.ts';

/**
 * Latency buckets (seconds) of `apiserver_request_duration_seconds`, reused for downstream and
 * upstream request latency so both sides of the proxy compare bucket for bucket.
 */
export const REQUEST_DURATION_BUCKETS = [
  0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60,
];

/** The request handles of `Metrics` (documented there). */
export interface RequestMetrics {
  upstreamRequests: Counter<'verb' | 'group' | 'resource' | 'code'>;
  upstreamRequestDuration: Histogram<'verb' | 'group' | 'resource'>;
  requests: Counter<
    'verb' | 'group' | 'version' | 'resource' | 'subresource' | 'code' | 'served_from' | 'reason'
  >;
  requestDuration: Histogram<'verb' | 'group' | 'version' | 'resource' | 'subresource' | 'served_from'>;
  refusedRequests: Counter<'code'>;
  seriesFolded: Counter<'family'>;
}

/**
 * Registers the request families in `registers`, named by `name` (adds the prefix). Counters keep
 * `max.counter` label sets (default {@link DEFAULT_MAX_COUNTER_LABEL_SETS}), histograms
 * `max.histogram` ({@link DEFAULT_MAX_HISTOGRAM_LABEL_SETS}); a capped family's `inc`/`observe`
 * take the labels form only (the form every caller uses).
 */
export function createRequestMetrics(
  name: (n: string) => string,
  registers: Registry[],
  max: { counter?: number; histogram?: number } = {},
): RequestMetrics {
  const seriesFolded = new Counter<'family'>({
    name: name('metric_series_folded_total'),
    help: 'Observations of a request metric family whose new label set was beyond the family cap, folded into the label set of <other>s.',
    labelNames: ['family'],
    registers,
  });
  const onFold = (family: string) => seriesFolded.inc({ family });
  const counter = <T extends string>(family: string, help: string, labelNames: T[]): Counter<T> => {
    const c = new Counter<T>({ name: name(family), help, labelNames, registers });
    const cap = new SeriesCap(family, max.counter ?? DEFAULT_MAX_COUNTER_LABEL_SETS, onFold);
    const inc = c.inc.bind(c) as (l: LabelValues<T>, v?: number) => void;
    c.inc = ((l: LabelValues<T>, v?: number) => inc(cap.fold(l), v)) as Counter<T>['inc'];
    return c;
  };
  const histogram = <T extends string>(family: string, help: string, labelNames: T[]): Histogram<T> => {
    const h = new Histogram<T>({
      name: name(family),
      help,
      labelNames,
      buckets: REQUEST_DURATION_BUCKETS,
      registers,
    });
    const cap = new SeriesCap(family, max.histogram ?? DEFAULT_MAX_HISTOGRAM_LABEL_SETS, onFold);
    const observe = h.observe.bind(h) as (l: LabelValues<T>, v: number) => void;
    h.observe = ((l: LabelValues<T>, v: number) => observe(cap.fold(l), v)) as Histogram<T>['observe'];
    return h;
  };
  return {
    upstreamRequests: counter(
      'upstream_requests_total',
      'Requests sent to the upstream apiserver, by verb, resource and HTTP code (<error> when none).',
      ['verb', 'group', 'resource', 'code'],
    ),
    upstreamRequestDuration: histogram(
      'upstream_request_duration_seconds',
      'Seconds until the upstream response headers arrived.',
      ['verb', 'group', 'resource'],
    ),
    requests: counter(
      'requests_total',
      'Requests answered on the main listener, by verb, resource, HTTP code, where they were served from and why upstream.',
      ['verb', 'group', 'version', 'resource', 'subresource', 'code', 'served_from', 'reason'],
    ),
    requestDuration: histogram(
      'request_duration_seconds',
      'Seconds to answer a request on the main listener (WATCH excluded).',
      ['verb', 'group', 'version', 'resource', 'subresource', 'served_from'],
    ),
    refusedRequests: new Counter({
      name: name('requests_refused_total'),
      help: 'Requests the main listener refused before serving them (401, 403, 429); not in requests_total.',
      labelNames: ['code'],
      registers,
    }),
    seriesFolded,
  };
}
