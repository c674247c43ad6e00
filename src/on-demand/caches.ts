/**
 * Caches started on demand (`--resources=auto`, issue 15). The first LIST or WATCH of a resource
 * that is not cached (reason `not-cached`: a cache could answer it, unlike `kubectl get`'s Table
 * requests) starts a reflector for its GroupVersionResource when
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
 * An on-demand cache no request used ({@link USE_REASONS}) and no watcher held for
 * `--auto-idle-timeout` is stopped (its reflector, its upstream watch and its memory go); starting
 * one more than `--auto-max-resources`, or while the cached bytes are over `--auto-max-bytes`,
 * evicts the least recently used idle one first (synced and unused for a minute at least), else
 * the new one is not started (`at-capacity`). Configured caches are never evicted, never widened,
 * never doubled. A custom resource whose CRD is deleted (its LIST/WATCH answer 404) drops its
 * cache, and so does one whose discovery after a relist shows another scope, kind or verbs (a
 * CRD re-created at once, {@link OnDemandCaches.relisted}); the next request caches it again.
 * Negative answers (excluded, not list+watchable, forbidden) are remembered for a while so a
 * client's requests cause no review storm: per resource, and a namespace's refusal per resource
 * and namespace (a denial cluster-wide is remembered too: a request in another namespace then
 * reviews only its namespace).
 */
import type { ResourceInfo } from '../apimachinery/gvr.ts';
import type { ResourceRequest } from '../apimachinery/request-info.ts';
import { entryName, logName } from '../resources/entry-name.ts';
import { RelistRecheck } from '../resources/relist-recheck.ts';
import type { UpstreamReason } from '../server/delegate.ts';
import type { TimerHandle } from '../util/clock.ts';
import { DiscoveryError, UpstreamError } from '../util/errors.ts';
import { ExcludeList } from './exclude.ts';
import { handOver } from './handover.ts';
import type { OnDemandHook } from './on-demand-hook.ts';
import { type OnDemandOptions, type RefusedReason, type StoppedReason, USE_REASONS } from './options.ts';
import { Refusals, refusalKey } from './refusals.ts';
import { reviewScope } from './scope.ts';

export type { CacheUsage, OnDemandOptions, RefusedReason, StoppedReason } from './options.ts';
export { USE_REASONS } from './options.ts';

/** A cache is an eviction victim only once synced and unused this long (ms), or the idle timeout if shorter. */
export const MIN_UNUSED_BEFORE_EVICTION_MS = 60_000;

interface Entry {
  name: string;
  info: ResourceInfo;
  /** The one namespace the cache holds (namespaced resources only); undefined: all. */
  namespace: string | undefined;
  lastUsedMs: number;
  synced: boolean;
  stopping: boolean;
  /** Discovery again after a relist or a ListAndWatch error (`resources/relist-recheck.ts`). */
  recheck: RelistRecheck;
}
/** A passed-through watch of a resource being cached (see {@link OnDemandCaches.trackWatch}). */
interface TrackedWatch {
  /** Its handover `end`, until it is handed over; none for a watch whose client watches once. */
  handover?: () => void;
  /** Its namespace; undefined: all namespaces. */
  namespace: string | undefined;
  /** The resourceVersion its client has seen so far (see {@link OnDemandHook.trackWatch}). */
  position?: () => bigint | undefined;
}

/** How long a resource or group-version discovery did not find is remembered (ms). */
const NOT_FOUND_TTL_MS = 5_000;

/**
 * The refusal key's namespace part for "namespaced, and `--namespace` is another one": requests
 * outside `--namespace` of such a resource start nothing (no namespace is named `*`).
 */
const OUTSIDE_NAMESPACE = '*';

/** The on-demand cache manager. See the module comment. */
export class OnDemandCaches implements OnDemandHook {
  readonly #o: OnDemandOptions;
  /** Started caches by entry name. */
  readonly #entries = new Map<string, Entry>();
  /** Being checked (discovery, reviews) by entry name. */
  readonly #pending = new Set<string>();
  readonly #refused: Refusals;
  readonly #exclude: ExcludeList;
  /** Open passed-through watches by entry name: uses of the cache, some with a handover. */
  readonly #watches = new Map<string, Set<TrackedWatch>>();
  #timer: TimerHandle | undefined;
  #closed = false;

  constructor(o: OnDemandOptions) {
    this.#o = o;
    this.#refused = new Refusals(o.clock);
    this.#exclude = new ExcludeList(o.exclude, o.log);
    this.#arm();
  }

  /** The entry name of a GroupVersionResource: `resource.version[.group]` (discovery's syntax). */
  static nameOf(gvr: { group: string; version: string; resource: string }): string {
    return entryName(gvr);
  }

  request(info: ResourceRequest, reason: UpstreamReason | undefined, verb: 'list' | 'watch' | 'other'): void {
    const name = OnDemandCaches.nameOf(info);
    const e = this.#entries.get(name);
    if (e) {
      // Only what the cache serves or could serve uses it (see USE_REASONS).
      if (reason === undefined || USE_REASONS.has(reason)) e.lastUsedMs = this.#o.clock.now();
      return;
    }
    if (reason !== 'not-cached' || verb === 'other' || this.#closed) return;
    if (this.#pending.has(name)) return;
    if (this.#refused.isRefused(name, info.namespace)) return;
    if (this.#isConfigured(info)) return;
    if (this.#exclude.excludes(info)) {
      this.#refuse(name, 'excluded', 'excluded by --auto-exclude');
      return;
    }
    // --namespace: a cluster-wide or other namespace's request of a namespaced resource is not
    // for this proxy's caches; it is checked after discovery (cluster-scoped ones may be cached),
    // and a resource found namespaced is remembered for a while (one discovery, not one each).
    if (info.namespace !== this.#o.namespace && this.#refused.live(refusalKey(name, OUTSIDE_NAMESPACE)))
      return;
    this.#pending.add(name);
    void this.#consider(name, info).finally(() => this.#pending.delete(name));
  }

  trackWatch(
    info: ResourceRequest,
    handover: (() => void) | undefined,
    position?: () => bigint | undefined,
  ): () => void {
    const name = OnDemandCaches.nameOf(info);
    const e = this.#entries.get(name);
    // Registered even before a cache is considered: the request that may start one is told only
    // once the apiserver answered it (the `upstreamStatus` hook), after its watch was registered here.
    const set = this.#watches.get(name) ?? new Set<TrackedWatch>();
    this.#watches.set(name, set);
    // Already synced (a watch that passed as `not-synced` just before): nothing to hand over to
    // later; it stays passed through.
    const w: TrackedWatch = {
      namespace: info.namespace,
      ...(handover && !e?.synced ? { handover } : {}),
      ...(position ? { position } : {}),
    };
    set.add(w);
    return () => {
      set.delete(w);
      if (set.size === 0 && this.#watches.get(name) === set) this.#watches.delete(name);
    };
  }

  /**
   * The cache `name` stored its first complete snapshot: the passed-through watches it can answer
   * that were registered with a handover are handed over (ended at an event boundary, once the
   * cache has proved its window back to where their clients stand: `handover.ts`; their clients
   * re-watch and are served from the cache); the others it can answer stay (and keep it
   * in use); those of other namespaces or all namespaces of a namespace-restricted cache go on
   * upstream, untracked. Unknown names are ignored.
   */
  synced(name: string): void {
    const e = this.#entries.get(name);
    if (!e || e.synced) return;
    e.synced = true;
    const tracked = this.#watches.get(name) ?? new Set<TrackedWatch>();
    const ending: TrackedWatch[] = [];
    for (const w of [...tracked]) {
      if (e.namespace !== undefined && w.namespace !== e.namespace) {
        tracked.delete(w);
        continue;
      }
      if (!w.handover) continue;
      // Ending: no longer a use (its unregister, when it has ended, finds it gone).
      tracked.delete(w);
      ending.push(w);
    }
    const n = ending.length;
    const prove = this.#o.extendWindowBack;
    handOver(ending, prove && ((rv) => prove(name, rv)));
    if (tracked.size === 0 && this.#watches.get(name) === tracked) this.#watches.delete(name);
    this.#o.log.info(
      {
        ...logName(name),
        handedOverWatches: n,
        passedThroughWatches: this.#watches.get(name)?.size ?? 0,
        ...(e.namespace !== undefined ? { namespace: e.namespace } : {}),
      },
      'on-demand cache synced: served from the cache, re-watching passed-through watches ended',
    );
  }

  /**
   * The cache `name` stored a new complete snapshot after its first (a relist: its watch expired
   * or ended with an error, e.g. because its CRD was deleted and re-created). Discovery of its
   * GroupVersionResource is asked again, at once and {@link RECHECK_AGAIN_MS} later (the
   * apiserver's discovery of a re-created CRD may trail its storage): when the resource is gone
   * or its scope, kind or verbs changed, the cache is stopped (`resource-gone`) and the next
   * request caches it anew, as the apiserver builds a new cacher with the CRD's new storage.
   * Unknown names and first snapshots are ignored.
   */
  relisted(name: string): void {
    const e = this.#entries.get(name);
    if (!e?.synced || e.stopping) return;
    e.recheck.relisted();
  }

  /** When an on-demand cache was last used (ms since the epoch); undefined for other names. */
  lastUsed(name: string): number | undefined {
    return this.#entries.get(name)?.lastUsedMs;
  }

  /** Whether `name` is an on-demand cache the manager holds. */
  has(name: string): boolean {
    return this.#entries.has(name);
  }

  /** Stops the idle timer and the re-checks (the caches themselves are stopped with the ResourceSet). */
  close(): void {
    this.#closed = true;
    if (this.#timer) this.#o.clock.clearTimeout(this.#timer);
    for (const e of this.#entries.values()) e.recheck.stop();
  }

  /** Stops every on-demand cache idle for the idle timeout. Runs on a timer; public for tests. */
  async evictIdle(): Promise<void> {
    const now = this.#o.clock.now();
    this.#refused.sweep();
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
      // Not served (yet): a CRD created a moment later is cached by a request soon after. Any
      // client may invent names: logged at debug, and a missing group-version is remembered so
      // the names of one group-version cost one discovery.
      if (err instanceof DiscoveryError && err.code === 'KCP_ERR_DISCOVERY_NOT_FOUND') {
        if (err.groupVersionMissing) this.#refused.missingGroupVersion(name, NOT_FOUND_TTL_MS);
        return this.#refuse(name, 'error', err.message, { ttlMs: NOT_FOUND_TTL_MS, level: 'debug' });
      }
      return this.#refuse(name, 'error', (err as Error).message);
    }
    this.#exclude.warnMismatch(info.gvr);
    const fixed = this.#o.namespace;
    if (fixed !== undefined && info.namespaced && req.namespace !== fixed) {
      this.#refused.remember(refusalKey(name, OUTSIDE_NAMESPACE), this.#o.negativeTtlMs ?? 60_000);
      return;
    }
    let namespace: string | undefined;
    try {
      const scope = await reviewScope(
        {
          allowed: (verb, info, ns) => this.#o.allowed(verb, info, ns),
          ...(this.#o.namespace !== undefined ? { namespace: this.#o.namespace } : {}),
          refused: this.#refused,
          ttlMs: this.#ttl(),
          refuse: (key, why, clusterDenied) =>
            this.#refuse(key, 'forbidden', why, clusterDenied ? { clusterDenied } : {}),
        },
        name,
        info,
        req.namespace,
      );
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
      lastUsedMs: now,
      synced: false,
      stopping: false,
      recheck: new RelistRecheck({
        info,
        discover: () => this.#o.discover(name),
        goneIsChange: true,
        clock: this.#o.clock,
        onChange: (change) => {
          this.#o.log.info(
            { ...logName(name), change },
            'on-demand cache stopped: its resource changed upstream (a CRD re-created?); the next request caches it anew',
          );
          void this.#stop(e, 'resource-gone');
        },
        onDiscoveryError: (err) =>
          this.#o.log.debug(
            { ...logName(name), err: (err as Error).message },
            'on-demand cache re-discovery failed',
          ),
      }),
    };
    this.#entries.set(name, e);
    if (!this.#o.start(name, info, (err) => this.#onReflectorError(e, err))) {
      this.#entries.delete(name);
      return;
    }
    this.#o.count?.('started', 'request');
    this.#o.log.info(
      { ...logName(name), ...(namespace !== undefined ? { namespace } : {}) },
      namespace !== undefined
        ? `caching on demand: the first LIST/WATCH of it started a cache restricted to namespace ${namespace}`
        : 'caching on demand: the first LIST/WATCH of it started a cache',
    );
  }

  /**
   * Evicts least recently used idle caches until one more fits; false when it cannot. A victim
   * is synced and unused for {@link MIN_UNUSED_BEFORE_EVICTION_MS} (or the idle timeout if
   * shorter): with more resources in use than the cap, the new one is refused instead of every
   * LIST starting a cache and evicting another before it ever served (issue 15).
   */
  async #makeRoom(): Promise<boolean> {
    const now = this.#o.clock.now();
    const minUnused = Math.min(MIN_UNUSED_BEFORE_EVICTION_MS, this.#o.idleTimeoutMs);
    const full = () => this.#entries.size >= this.#o.maxResources || this.#o.totalBytes() > this.#o.maxBytes;
    while (full()) {
      const idle = [...this.#entries.values()]
        .filter(
          (e) => !e.stopping && e.synced && now - e.lastUsedMs >= minUnused && !this.#touchIfInUse(e, now),
        )
        .sort((a, b) => a.lastUsedMs - b.lastUsedMs);
      const victim = idle[0];
      if (!victim) return false;
      await this.#stop(victim, 'evicted');
    }
    return true;
  }

  #capacityText(): string {
    return `${this.#entries.size} on-demand caches (--auto-max-resources ${this.#o.maxResources}), ${this.#o.totalBytes()} cached bytes (--auto-max-bytes ${this.#o.maxBytes}), none synced and unused for ${Math.min(MIN_UNUSED_BEFORE_EVICTION_MS, this.#o.idleTimeoutMs) / 1000}s to evict`;
  }

  /** A cache with an open watcher (from the cache or passed through) is in use now. */
  #touchIfInUse(e: Entry, now: number): boolean {
    const watchers = (this.#o.usage(e.name)?.watchers ?? 0) + (this.#watches.get(e.name)?.size ?? 0);
    if (watchers === 0) return false;
    e.lastUsedMs = now;
    return true;
  }

  /**
   * A 404 from LIST/WATCH: the resource (a CRD) is gone; drop the cache. Any other error of a
   * synced cache's ListAndWatch: discovery is asked whether the resource changed (see
   * {@link relisted}).
   */
  #onReflectorError(e: Entry, err: unknown): void {
    if (e.stopping) return;
    if (err instanceof UpstreamError && err.statusCode === 404) {
      void this.#stop(e, 'resource-gone');
      return;
    }
    if (e.synced) e.recheck.checkOnce();
  }

  async #stop(e: Entry, reason: StoppedReason): Promise<void> {
    if (e.stopping) return;
    e.stopping = true;
    e.recheck.stop();
    this.#o.log.info(
      { ...logName(e.name), reason, idleMs: this.#o.clock.now() - e.lastUsedMs },
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
    o: { ttlMs?: number; clusterDenied?: 'list' | 'watch'; level?: 'info' | 'debug' } = {},
  ): void {
    this.#refused.remember(key, o.ttlMs ?? this.#ttl(), o.clusterDenied);
    this.#o.count?.('refused', reason);
    const [name = '', namespace] = key.split(' ');
    this.#o.log[o.level ?? 'info'](
      { ...logName(name), reason, ...(namespace !== undefined ? { namespace } : {}) },
      `not caching on demand: ${why}; its requests pass upstream`,
    );
  }

  /** How long a refusal is remembered by default (ms). */
  #ttl(): number {
    return this.#o.negativeTtlMs ?? 60_000;
  }

  #isConfigured(info: ResourceRequest): boolean {
    return this.#o.configured.some((c) => c.group === info.group && c.resource === info.resource);
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
