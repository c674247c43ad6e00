/**
 * Bounded label values for the request metrics (`kube_cache_proxy_requests_total`,
 * `kube_cache_proxy_upstream_requests_total` and their histograms). Every value a client can
 * choose would otherwise make series without end (a `…/proxy/<any path>` per path, a resource
 * name per typo or scanner request), each kept by the registry forever (900 requests
 * for random names took `/metrics` from 2.4k to 51k lines). The apiserver has the same rules in
 * `staging/src/k8s.io/apiserver/pkg/endpoints/metrics/metrics.go`:
 * - `verb`: one of a fixed set, anything else {@link OTHER} (`cleanVerb`, `validRequestMethods`);
 * - `subresource`: ONE path segment (`request.RequestInfo.Subresource`, `requestinfo.go`);
 * - `group`/`version`/`resource`/`subresource`: only registered routes are instrumented there,
 *   so only real resources make series. Here: only what {@link KnownResources} knows (the
 *   resources the proxy caches, and what the apiserver's discovery lists); anything else is
 *   {@link OTHER} ({@link ResourceLabelBounds});
 * - `code`: a three-digit HTTP status 100–599, else {@link OTHER} (`<error>` is kept: no answer);
 * - and whatever passes these, each family keeps at most a fixed number of label sets
 *   ({@link SeriesCap}); later ones are folded into one label set of {@link OTHER}s.
 */
import type { ServedResource } from '../upstream/discovery.ts';
import { type Clock, realClock } from '../util/clock.ts';

/**
 * The value that stands for everything beyond a label's bound. Angle brackets: no verb, status
 * code, group or resource name can be spelt so (a resource named `other` keeps its name).
 */
export const OTHER = '<other>';

/**
 * Label sets kept per request counter (`requests_total`, `upstream_requests_total`) before new
 * ones are folded ({@link SeriesCap}): room for every verb, code and reason of a few hundred
 * resources.
 */
export const DEFAULT_MAX_COUNTER_LABEL_SETS = 2000;

/**
 * Label sets kept per request histogram (`request_duration_seconds`,
 * `upstream_request_duration_seconds`) before new ones are folded: each label set is 26 series
 * (23 buckets, `+Inf`, `_sum`, `_count`), so at most 26,000 series.
 */
export const DEFAULT_MAX_HISTOGRAM_LABEL_SETS = 1000;

/**
 * The least time (ms) between two discovery refreshes that an unknown name may start
 * ({@link KnownResources}): a client sending random names costs the apiserver at most two
 * discovery GETs per interval.
 */
export const DEFAULT_DISCOVERY_REFRESH_INTERVAL_MS = 30_000;

/**
 * Verbs kept as they are (apiserver `validRequestMethods`, plus HEAD and OPTIONS which
 * non-resource paths report as their HTTP method).
 */
const VERBS = new Set([
  'APPLY',
  'CONNECT',
  'CREATE',
  'DELETE',
  'DELETECOLLECTION',
  'GET',
  'LIST',
  'PATCH',
  'POST',
  'PROXY',
  'PUT',
  'UPDATE',
  'WATCH',
  'WATCHLIST',
  'HEAD',
  'OPTIONS',
]);

/** A `verb` label value: the verb when it is one of the fixed set, else {@link OTHER}. */
export function boundVerb(verb: string): string {
  return VERBS.has(verb) ? verb : OTHER;
}

/** A `code` label value: `<error>` or a status 100–599, else {@link OTHER}. */
export function boundCode(code: string | number): string {
  const s = String(code);
  if (s === '<error>') return s;
  return /^[1-5][0-9]{2}$/.test(s) ? s : OTHER;
}

/**
 * The `subresource` label of a request whose path continues after the object's name: its first
 * segment only (`proxy/a/b` → `proxy`), like the apiserver's `RequestInfo.Subresource`.
 */
export function subresourceLabel(subresource: string | undefined): string {
  if (subresource === undefined) return '';
  const i = subresource.indexOf('/');
  return i < 0 ? subresource : subresource.slice(0, i);
}

/** The resource labels of one request ("" each for non-resource paths). */
export interface ResourceLabels {
  group: string;
  version: string;
  resource: string;
  subresource: string;
}

/** Reads the served resources (`upstream/discovery.ts` `discoverServedResources`). */
export type DiscoverResources = (signal?: AbortSignal) => Promise<ServedResource[]>;

/** Options of {@link KnownResources}. */
export interface KnownResourcesOptions {
  clock?: Clock;
  /** Least ms between two refreshes an unknown name may start; default {@link DEFAULT_DISCOVERY_REFRESH_INTERVAL_MS}. */
  minRefreshIntervalMs?: number;
  /** Told of a failed refresh (the set is kept as it was). */
  onError?: (err: unknown) => void;
}

const keyOf = (g: string, v: string, r: string, s = '') => `${g}/${v}/${r}/${s}`;

/**
 * The resources whose names may label a metric: those the proxy caches ({@link add}, called
 * when a cache is served; kept, they were real) and those the apiserver's discovery last listed
 * (every group, version, resource and subresource; replaced by each refresh, so a deleted CRD
 * stops labelling). Lookups are one Set probe. Discovery is read once when a source is set
 * ({@link discoverWith}), then lazily: a name it does not know starts a refresh, at most once
 * per `minRefreshIntervalMs`, and may wait for it ({@link settle}), so a CRD installed later is
 * labelled from its first request after the next allowed refresh. Nothing is kept per unknown
 * name (the apiserver records nothing for them either).
 */
export class KnownResources {
  #discovered = new Set<string>();
  readonly #cached = new Set<string>();
  #discover: DiscoverResources | undefined;
  #inflight: Promise<void> | undefined;
  #lastStart = Number.NEGATIVE_INFINITY;
  readonly #abort = new AbortController();
  readonly #clock: Clock;
  readonly #interval: number;
  #onError: (err: unknown) => void;

  constructor(opts: KnownResourcesOptions = {}) {
    this.#clock = opts.clock ?? realClock;
    this.#interval = opts.minRefreshIntervalMs ?? DEFAULT_DISCOVERY_REFRESH_INTERVAL_MS;
    this.#onError = opts.onError ?? (() => {});
  }

  /** A resource the proxy caches (and, optionally, its subresources): known from now on. */
  add(r: { group: string; version: string; resource: string }, subresources: readonly string[] = []): void {
    this.#cached.add(keyOf(r.group, r.version, r.resource));
    for (const s of subresources) this.#cached.add(keyOf(r.group, r.version, r.resource, s));
  }

  /** Whether (group, version, resource, subresource) is known; subresource "" asks for the resource. */
  knows(l: ResourceLabels): boolean {
    const k = keyOf(l.group, l.version, l.resource, l.subresource);
    return this.#discovered.has(k) || this.#cached.has(k);
  }

  /**
   * Sets where discovery is read from and starts the first refresh (its promise never rejects);
   * `onError` is told of a failed refresh (the set is kept as it was).
   */
  discoverWith(discover: DiscoverResources, onError?: (err: unknown) => void): Promise<void> {
    this.#discover = discover;
    if (onError) this.#onError = onError;
    this.#lastStart = Number.NEGATIVE_INFINITY;
    return this.#refresh() ?? Promise.resolve();
  }

  /**
   * For a name not known: the refresh in flight, or one started now when the last started at
   * least `minRefreshIntervalMs` ago; undefined when none may run (no source, or too soon): the
   * name is {@link OTHER} at once. The promise never rejects.
   */
  settle(): Promise<void> | undefined {
    return this.#inflight ?? this.#refresh();
  }

  /** Stops a refresh in flight and any later one. */
  close(): void {
    this.#discover = undefined;
    this.#abort.abort();
  }

  #refresh(): Promise<void> | undefined {
    const discover = this.#discover;
    const now = this.#clock.now();
    if (!discover || this.#inflight || now - this.#lastStart < this.#interval) return this.#inflight;
    this.#lastStart = now;
    const p = discover(this.#abort.signal).then(
      (list) => {
        const next = new Set<string>();
        for (const r of list) {
          next.add(keyOf(r.group, r.version, r.resource, r.subresource));
          if (r.subresource !== '') next.add(keyOf(r.group, r.version, r.resource));
        }
        this.#discovered = next;
      },
      (err: unknown) => {
        if (!this.#abort.signal.aborted) this.#onError(err);
      },
    );
    const inflight = p.finally(() => {
      if (this.#inflight === inflight) this.#inflight = undefined;
    });
    this.#inflight = inflight;
    return inflight;
  }
}

/**
 * The resource labels a request may have: its own when {@link KnownResources} knows them, the
 * resource's with subresource {@link OTHER} when only the resource is known, else every
 * non-empty value {@link OTHER}. Non-resource paths (all "") keep their labels. One per metrics
 * registry, shared by the downstream and upstream metrics.
 */
export class ResourceLabelBounds {
  /** What may label a metric; fed by the wiring (`main.ts`) and by tests. */
  readonly known: KnownResources;

  constructor(known: KnownResources = new KnownResources()) {
    this.known = known;
  }

  /** `l` as far as it is known now (no waiting): see the class. */
  boundNow(l: ResourceLabels): ResourceLabels {
    if (l.resource === '' && l.group === '' && l.version === '' && l.subresource === '') return l;
    const known = this.known;
    if (known.knows(l)) return l;
    const r = l.subresource === '' ? l : { ...l, subresource: '' };
    if (l.subresource !== '' && known.knows(r)) return { ...l, subresource: OTHER };
    return { group: OTHER, version: OTHER, resource: OTHER, subresource: l.subresource === '' ? '' : OTHER };
  }

  /**
   * Calls `use` with `l` bounded: at once when known (the hot path: no promise), else after the
   * discovery refresh an unknown name may wait for ({@link KnownResources.settle}), or at once
   * with {@link OTHER}s when none may run.
   */
  bound(l: ResourceLabels, use: (b: ResourceLabels) => void): void {
    const b = this.boundNow(l);
    const wait =
      b === l || (b.resource !== OTHER && b.subresource !== OTHER) ? undefined : this.known.settle();
    if (wait) wait.then(() => use(this.boundNow(l)));
    else use(b);
  }
}

/**
 * The hard cap on one metric family's series: the first `max` distinct label sets are kept,
 * every later one is folded into the one label set whose every value is {@link OTHER}, and
 * `onFold(family)` is told (`kube_cache_proxy_metric_series_folded_total{family}`). Keeps `max`
 * keys, no more.
 */
export class SeriesCap {
  readonly #seen = new Set<string>();
  readonly #onFold: (family: string) => void;
  /** The metric family (its name without prefix), passed to `onFold`. */
  readonly family: string;
  /** Label sets kept. */
  readonly max: number;

  constructor(family: string, max: number, onFold: (family: string) => void) {
    this.family = family;
    this.max = max;
    this.#onFold = onFold;
  }

  /** `labels` when kept, else the folded label set (same names, every value {@link OTHER}). */
  fold<L extends Partial<Record<string, string | number>>>(labels: L): L {
    const key = Object.keys(labels)
      .sort()
      .map((k) => `${k}=${labels[k]}`)
      .join('\u0000');
    if (this.#seen.has(key)) return labels;
    if (this.#seen.size < this.max) {
      this.#seen.add(key);
      return labels;
    }
    this.#onFold(this.family);
    const folded: Record<string, string> = {};
    for (const k of Object.keys(labels)) folded[k] = OTHER;
    return folded as L;
  }
}
