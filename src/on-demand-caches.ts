/**
 * Caches started on demand (`--resources=auto`, issue 15). The first LIST or WATCH of a resource
 * that is not cached (reason `not-cached`) starts a reflector for its GroupVersionResource when
 * discovery offers list and watch and the proxy's own identity may list and watch it at some
 * scope (SelfSubjectAccessReviews, one per verb): cluster-wide, else, for a namespaced resource
 * asked in namespace N, in N; then the cache is restricted to N (`ResourceInfo.namespace`: its
 * reflector lists and watches `/…/namespaces/N/<resource>`, it answers only N). With
 * `--namespace` the reviews are in that namespace only. Still one cache per GroupVersionResource:
 * the first namespace wins, requests for other namespaces or all namespaces pass upstream
 * (`namespace-outside-cache`) and start nothing. The request itself passes upstream meanwhile;
 * once the cache is synced, the passed-through watches it can answer whose clients re-watch
 * (client-go reflectors) are ended cleanly at an event boundary so they re-watch into the cache;
 * other passed-through watches (`kubectl get -w`) stay passed through until they end by
 * themselves, and keep the cache in use meanwhile.
 *
 * An on-demand cache no request used and no watcher held for `--auto-idle-timeout` is stopped
 * (its reflector, its upstream watch and its memory go); starting one more than
 * `--auto-max-resources`, or while the cached bytes are over `--auto-max-bytes`, evicts the least
 * recently used idle one first, else the new one is not started. Configured caches are never
 * evicted, never widened, never doubled. A custom resource whose CRD is deleted (its LIST/WATCH
 * answer 404) drops its cache; a re-created CRD is cached again by the next request.
 * Negative answers (excluded, not list+watchable, forbidden) are remembered for a while so a
 * client's requests cause no review storm: per resource, and a namespace's refusal per resource
 * and namespace (a denial cluster-wide is remembered too: a request in another namespace then
 * reviews only its namespace).
 */
import type { ResourceInfo } from './apimachinery/gvr.ts';
import type { ResourceRequest } from './apimachinery/request-info.ts';
import type { UpstreamReason } from './server/delegate.ts';
import type { OnDemandHook } from './server/on-demand-hook.ts';
import type { Clock, TimerHandle } from './util/clock.ts';
import { DiscoveryError, UpstreamError } from './util/errors.ts';
import type { Logger } from './util/logger.ts';

/** Why an on-demand cache was not started (`kube_cache_proxy_on_demand_caches_total{event="refused"}`). */
export type RefusedReason = 'excluded' | 'not-list-watchable' | 'forbidden' | 'at-capacity' | 'error';
/** Why an on-demand cache was stopped (`{event="stopped"}`). */
export type StoppedReason = 'idle' | 'evicted' | 'resource-gone';

/** What one on-demand cache reports for eviction decisions. */
export interface CacheUsage {
  /** Open watchers served from it. */
  watchers: number;
  /** Bytes of its stored objects. */
  bytes: number;
}

/** Options of {@link OnDemandCaches}; the I/O is injected (main.ts wires the real one). */
export interface OnDemandOptions {
  /** `--auto-exclude`: `resource` (core) or `resource.group`. */
  exclude: readonly string[];
  /** `--auto-idle-timeout`, ms. */
  idleTimeoutMs: number;
  /** `--auto-max-resources`. */
  maxResources: number;
  /** `--auto-max-bytes`: bytes of cached objects of every cache. */
  maxBytes: number;
  /** Configured resources (`group/resource`): never cached on demand (never widened or doubled). */
  configured: readonly { group: string; resource: string }[];
  /** `--namespace`: reviews (and the caches) are in this namespace only. */
  namespace?: string;
  /** Discovery of one GroupVersionResource by name (`configmaps.v1`, `widgets.v1.example.com`). */
  discover(name: string): Promise<ResourceInfo>;
  /** Whether the proxy's identity may `verb` the resource (SelfSubjectAccessReview); namespace "" = all. */
  allowed(verb: 'list' | 'watch', info: ResourceInfo, namespace: string): Promise<boolean>;
  /**
   * Adds the cache and starts its reflector; `onError` sees each ListAndWatch error.
   * `info.namespace` is set for a cache restricted to one namespace.
   */
  start(name: string, info: ResourceInfo, onError: (err: unknown) => void): boolean;
  /** Stops the reflector, ends its watchers, removes the cache from the server and frees it. */
  stop(name: string): Promise<void>;
  /** Usage of a started cache (undefined before its watch cache exists). */
  usage(name: string): CacheUsage | undefined;
  /** Bytes of stored objects over every cache (configured and on demand). */
  totalBytes(): number;
  clock: Clock;
  log: Logger;
  /** `kube_cache_proxy_on_demand_caches_total`. */
  count?: (event: 'started' | 'stopped' | 'refused', reason: string) => void;
  /** How long a refusal is remembered (ms); default 60 000. A missing resource: 5 000. */
  negativeTtlMs?: number;
}

interface Entry {
  name: string;
  info: ResourceInfo;
  /** The one namespace the cache holds (namespaced resources only); undefined: all. */
  namespace: string | undefined;
  startedMs: number;
  lastUsedMs: number;
  synced: boolean;
  stopping: boolean;
}

/** A remembered refusal. */
interface Refusal {
  /** Until when (ms since the epoch). */
  until: number;
  /**
   * Only the cluster-wide reviews were denied (the first verb denied): a request in a namespace
   * may still review its namespace.
   */
  clusterDenied?: 'list' | 'watch';
}

/** A passed-through watch of a resource being cached (see {@link OnDemandCaches.trackWatch}). */
interface TrackedWatch {
  /** Its handover `end`, until it is handed over; none for a watch whose client watches once. */
  handover?: () => void;
  /** Its namespace; undefined: all namespaces. */
  namespace: string | undefined;
}

/** The refusal key of a namespace of a resource (a resource's own key is its entry name). */
function refusalKey(name: string, namespace: string): string {
  return `${name} ${namespace}`;
}

/** The on-demand cache manager. See the module comment. */
export class OnDemandCaches implements OnDemandHook {
  readonly #o: OnDemandOptions;
  /** Started caches by entry name. */
  readonly #entries = new Map<string, Entry>();
  /** Being checked (discovery, reviews) by entry name. */
  readonly #pending = new Set<string>();
  /** Refusals by {@link refusalKey}. */
  readonly #refused = new Map<string, Refusal>();
  /** Open passed-through watches by entry name: uses of the cache, some with a handover. */
  readonly #watches = new Map<string, Set<TrackedWatch>>();
  #timer: TimerHandle | undefined;
  #closed = false;

  constructor(o: OnDemandOptions) {
    this.#o = o;
    this.#arm();
  }

  /** The entry name of a GroupVersionResource: `resource.version[.group]` (discovery's syntax). */
  static nameOf(gvr: { group: string; version: string; resource: string }): string {
    return `${gvr.resource}.${gvr.version}${gvr.group ? `.${gvr.group}` : ''}`;
  }

  request(info: ResourceRequest, reason: UpstreamReason | undefined, verb: 'list' | 'watch' | 'other'): void {
    const name = OnDemandCaches.nameOf(info);
    const e = this.#entries.get(name);
    if (e) {
      // Another namespace than the one the cache holds (or all of them) does not use it.
      if (reason !== 'namespace-outside-cache') e.lastUsedMs = this.#o.clock.now();
      return;
    }
    if (reason !== 'not-cached' || verb === 'other' || this.#closed) return;
    if (this.#pending.has(name)) return;
    if (this.#isRefused(name, info.namespace)) return;
    if (this.#isConfigured(info)) return;
    if (this.#isExcluded(info)) {
      this.#refuse(name, 'excluded', 'excluded by --auto-exclude');
      return;
    }
    // --namespace: a cluster-wide or other namespace's request of a namespaced resource is not
    // for this proxy's caches; it is checked after discovery (cluster-scoped ones may be cached).
    this.#pending.add(name);
    void this.#consider(name, info).finally(() => this.#pending.delete(name));
  }

  trackWatch(info: ResourceRequest, handover: (() => void) | undefined): () => void {
    const name = OnDemandCaches.nameOf(info);
    const e = this.#entries.get(name);
    if (!this.#pending.has(name) && !e) return () => {};
    const set = this.#watches.get(name) ?? new Set<TrackedWatch>();
    this.#watches.set(name, set);
    // Already synced (a watch that passed as `not-synced` just before): nothing to hand over to
    // later; it stays passed through.
    const w: TrackedWatch = {
      namespace: info.namespace,
      ...(handover && !e?.synced ? { handover } : {}),
    };
    set.add(w);
    return () => {
      set.delete(w);
      if (set.size === 0 && this.#watches.get(name) === set) this.#watches.delete(name);
    };
  }

  /**
   * The cache `name` stored its first complete snapshot: the passed-through watches it can answer
   * that were registered with a handover are handed over (ended at an event boundary; their
   * clients re-watch and are served from the cache); the others it can answer stay (and keep it
   * in use); those of other namespaces or all namespaces of a namespace-restricted cache go on
   * upstream, untracked. Unknown names are ignored.
   */
  synced(name: string): void {
    const e = this.#entries.get(name);
    if (!e || e.synced) return;
    e.synced = true;
    const tracked = this.#watches.get(name) ?? new Set<TrackedWatch>();
    let n = 0;
    for (const w of [...tracked]) {
      if (e.namespace !== undefined && w.namespace !== e.namespace) {
        tracked.delete(w);
        continue;
      }
      const handover = w.handover;
      if (!handover) continue;
      // Ending: no longer a use (its unregister, when it has ended, finds it gone).
      tracked.delete(w);
      n++;
      handover();
    }
    if (tracked.size === 0 && this.#watches.get(name) === tracked) this.#watches.delete(name);
    this.#o.log.info(
      {
        resource: name,
        handedOverWatches: n,
        passedThroughWatches: this.#watches.get(name)?.size ?? 0,
        ...(e.namespace !== undefined ? { namespace: e.namespace } : {}),
      },
      'on-demand cache synced: served from the cache, re-watching passed-through watches ended',
    );
  }

  /** When an on-demand cache was last used (ms since the epoch); undefined for other names. */
  lastUsed(name: string): number | undefined {
    return this.#entries.get(name)?.lastUsedMs;
  }

  /** Whether `name` is an on-demand cache. */
  has(name: string): boolean {
    return this.#entries.has(name);
  }

  /** Stops the idle timer (the caches themselves are stopped with the reflector set). */
  close(): void {
    this.#closed = true;
    if (this.#timer) this.#o.clock.clearTimeout(this.#timer);
  }

  /** Stops every on-demand cache idle for the idle timeout. Runs on a timer; public for tests. */
  async evictIdle(): Promise<void> {
    const now = this.#o.clock.now();
    for (const [key, r] of this.#refused) if (r.until <= now) this.#refused.delete(key);
    for (const e of [...this.#entries.values()]) {
      if (this.#touchIfInUse(e, now)) continue;
      if (now - e.lastUsedMs >= this.#o.idleTimeoutMs) await this.#stop(e, 'idle');
    }
  }

  async #consider(name: string, req: ResourceRequest): Promise<void> {
    let info: ResourceInfo;
    try {
      info = await this.#o.discover(name);
    } catch (err) {
      if (err instanceof DiscoveryError && err.code === 'KCP_ERR_DISCOVERY_NOT_LIST_WATCHABLE')
        return this.#refuse(name, 'not-list-watchable', err.message);
      // Not served (yet): a CRD created a moment later is cached by a request soon after.
      if (err instanceof DiscoveryError && err.code === 'KCP_ERR_DISCOVERY_NOT_FOUND')
        return this.#refuse(name, 'error', err.message, { ttlMs: 5_000 });
      return this.#refuse(name, 'error', (err as Error).message);
    }
    const fixed = this.#o.namespace;
    if (fixed !== undefined && info.namespaced && req.namespace !== fixed) return;
    let namespace: string | undefined;
    try {
      const scope = await this.#scope(name, info, req.namespace);
      if (scope === undefined) return;
      namespace = scope === '' ? undefined : scope;
    } catch (err) {
      return this.#refuse(name, 'error', `SelfSubjectAccessReview failed: ${(err as Error).message}`);
    }
    if (this.#closed || this.#entries.has(name)) return;
    if (!(await this.#makeRoom()))
      return this.#refuse(name, 'at-capacity', this.#capacityText(), { ttlMs: 10_000 });
    if (namespace !== undefined) info.namespace = namespace;
    const now = this.#o.clock.now();
    const e: Entry = {
      name,
      info,
      namespace,
      startedMs: now,
      lastUsedMs: now,
      synced: false,
      stopping: false,
    };
    this.#entries.set(name, e);
    if (!this.#o.start(name, info, (err) => this.#onReflectorError(e, err))) {
      this.#entries.delete(name);
      return;
    }
    this.#o.count?.('started', 'request');
    this.#o.log.info(
      { resource: name, ...(namespace !== undefined ? { namespace } : {}) },
      namespace !== undefined
        ? `caching on demand: the first LIST/WATCH of it started a cache restricted to namespace ${namespace}`
        : 'caching on demand: the first LIST/WATCH of it started a cache',
    );
  }

  /**
   * Where the proxy's identity may list and watch `info` (see the module comment): "" for
   * cluster-wide, a namespace, or undefined after refusing (counted and logged here).
   * @throws whatever a SelfSubjectAccessReview throws.
   */
  async #scope(name: string, info: ResourceInfo, asked: string | undefined): Promise<string | undefined> {
    const fixed = this.#o.namespace;
    if (info.namespaced && fixed !== undefined) {
      const denied = await this.#denied(info, fixed);
      if (denied === undefined) return fixed;
      this.#refuse(name, 'forbidden', `the proxy's identity may not ${denied} it in namespace ${fixed}`);
      return undefined;
    }
    // A cluster-wide denial remembered from a request of another namespace: not asked again.
    const clusterDenied = this.#live(name)?.clusterDenied ?? (await this.#denied(info, ''));
    if (clusterDenied === undefined) return '';
    const ns = info.namespaced ? asked : undefined;
    if (ns === undefined) {
      this.#refuse(name, 'forbidden', `the proxy's identity may not ${clusterDenied} it cluster-wide`, {
        ...(info.namespaced ? { clusterDenied } : {}),
      });
      return undefined;
    }
    if (!this.#live(name)) this.#remember(name, { clusterDenied });
    const nsDenied = await this.#denied(info, ns);
    if (nsDenied === undefined) return ns;
    const what =
      nsDenied === clusterDenied
        ? `${nsDenied} it cluster-wide nor in namespace ${ns}`
        : `${clusterDenied} it cluster-wide nor ${nsDenied} it in namespace ${ns}`;
    this.#refuse(refusalKey(name, ns), 'forbidden', `the proxy's identity may not ${what}`);
    return undefined;
  }

  /** The first verb of list, watch the proxy's identity may not use on `info` in `namespace` ("" = all); undefined: both allowed. */
  async #denied(info: ResourceInfo, namespace: string): Promise<'list' | 'watch' | undefined> {
    const [list, watch] = await Promise.all([
      this.#o.allowed('list', info, namespace),
      this.#o.allowed('watch', info, namespace),
    ]);
    return !list ? 'list' : !watch ? 'watch' : undefined;
  }

  /**
   * Whether a request of `name` in `namespace` (undefined: all) is refused for now: the resource
   * is, or (a request in a namespace after a denial cluster-wide only) that namespace is.
   */
  #isRefused(name: string, namespace: string | undefined): boolean {
    const r = this.#live(name);
    if (r && !(r.clusterDenied !== undefined && namespace !== undefined)) return true;
    return namespace !== undefined && this.#live(refusalKey(name, namespace)) !== undefined;
  }

  /** The refusal of `key` unless it expired (then forgotten). */
  #live(key: string): Refusal | undefined {
    const r = this.#refused.get(key);
    if (r === undefined || r.until > this.#o.clock.now()) return r;
    this.#refused.delete(key);
    return undefined;
  }

  /** Evicts least recently used idle caches until one more fits; false when it cannot. */
  async #makeRoom(): Promise<boolean> {
    const now = this.#o.clock.now();
    const full = () => this.#entries.size >= this.#o.maxResources || this.#o.totalBytes() > this.#o.maxBytes;
    while (full()) {
      const idle = [...this.#entries.values()]
        .filter((e) => !e.stopping && !this.#touchIfInUse(e, now))
        .sort((a, b) => a.lastUsedMs - b.lastUsedMs);
      const victim = idle[0];
      if (!victim) return false;
      await this.#stop(victim, 'evicted');
    }
    return true;
  }

  #capacityText(): string {
    return `${this.#entries.size} on-demand caches (--auto-max-resources ${this.#o.maxResources}), ${this.#o.totalBytes()} cached bytes (--auto-max-bytes ${this.#o.maxBytes}), none idle to evict`;
  }

  /** A cache with an open watcher (from the cache or passed through) is in use now. */
  #touchIfInUse(e: Entry, now: number): boolean {
    const watchers = (this.#o.usage(e.name)?.watchers ?? 0) + (this.#watches.get(e.name)?.size ?? 0);
    if (watchers === 0) return false;
    e.lastUsedMs = now;
    return true;
  }

  /** A 404 from LIST/WATCH: the resource (a CRD) is gone; drop the cache. */
  #onReflectorError(e: Entry, err: unknown): void {
    if (!(err instanceof UpstreamError) || err.statusCode !== 404 || e.stopping) return;
    void this.#stop(e, 'resource-gone');
  }

  async #stop(e: Entry, reason: StoppedReason): Promise<void> {
    if (e.stopping) return;
    e.stopping = true;
    this.#o.log.info(
      { resource: e.name, reason, idleMs: this.#o.clock.now() - e.lastUsedMs },
      'on-demand cache stopped',
    );
    try {
      await this.#o.stop(e.name);
    } finally {
      this.#entries.delete(e.name);
      this.#o.count?.('stopped', reason);
    }
  }

  /** Counts, logs and remembers a refusal; `key` is an entry name or a {@link refusalKey}. */
  #refuse(
    key: string,
    reason: RefusedReason,
    why: string,
    o: { ttlMs?: number; clusterDenied?: 'list' | 'watch' } = {},
  ): void {
    this.#remember(key, o);
    this.#o.count?.('refused', reason);
    const [resource, namespace] = key.split(' ');
    this.#o.log.info(
      { resource, reason, ...(namespace !== undefined ? { namespace } : {}) },
      `not caching on demand: ${why}; its requests pass upstream`,
    );
  }

  #remember(key: string, o: { ttlMs?: number; clusterDenied?: 'list' | 'watch' }): void {
    const until = this.#o.clock.now() + (o.ttlMs ?? this.#o.negativeTtlMs ?? 60_000);
    this.#refused.set(key, { until, ...(o.clusterDenied ? { clusterDenied: o.clusterDenied } : {}) });
  }

  #isConfigured(info: ResourceRequest): boolean {
    return this.#o.configured.some((c) => c.group === info.group && c.resource === info.resource);
  }

  #isExcluded(info: ResourceRequest): boolean {
    const gr = info.group ? `${info.resource}.${info.group}` : info.resource;
    return this.#o.exclude.includes(gr);
  }

  /** The idle check runs every quarter of the idle timeout (at least 1 s, at most 1 min). */
  #arm(): void {
    if (this.#closed) return;
    const every = Math.min(60_000, Math.max(1_000, this.#o.idleTimeoutMs / 4));
    this.#timer = this.#o.clock.setTimeout(() => {
      void this.evictIdle()
        .catch((err: unknown) => this.#o.log.error({ err }, 'on-demand idle check failed'))
        .finally(() => this.#arm());
    }, every);
  }
}
