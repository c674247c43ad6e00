/**
 * One cached resource, the owner of everything the proxy keeps for it, as the apiserver's
 * `Cacher` owns its reflector and watch cache (`k8s.io/apiserver` `pkg/storage/cacher`,
 * `NewCacherFromConfig`) and client-go's `sharedIndexInformer` its reflector and store: its
 * `ResourceInfo` (discovered, with its scope and namespace), its origin (configured or on
 * demand), the lister-watcher, the {@link Reflector}, the {@link WatchCache} with its gap prover,
 * its serving registration, and its state. The metrics hooks and the reaction to first sync,
 * relists and ListAndWatch errors (the {@link ResourcePolicy}) are injected, so this layer
 * imports neither `ops/` nor `on-demand/`.
 *
 * Life: {@link start} runs discovery (retried with the reflector backoff, 800 ms … [30, 60) s,
 * so a CRD installed after start is picked up) unless the resource was discovered before it was
 * added, then builds the watch cache, serves it (the server answers from it once synced) and runs
 * the reflector until {@link stop}. A resource whose resourceVersions do not parse ends in phase
 * `pass-through`: its reflector stopped for good and it is no longer served (every request for it
 * goes upstream).
 */
import type { ResourceInfo, ResourceScope } from '../apimachinery/gvr.ts';
import { scopeString } from '../apimachinery/resource-scope.ts';
import type { TerminationReason } from '../cache/cache-watcher.ts';
import { CompactionFloor } from '../cache/compaction-floor.ts';
import type { ParkedWatchers } from '../cache/parked-watchers.ts';
import { WatchCache } from '../cache/watch-cache.ts';
import { Backoff } from '../reflector/backoff.ts';
import { type CacheSink, observedSink } from '../reflector/cache-sink.ts';
import { type CompactionAnswer, exactReadAt } from '../reflector/compaction-probe.ts';
import { currentRevision, proveNoEventsBetween } from '../reflector/gap-proof.ts';
import { HttpListerWatcher, type ListerWatcher } from '../reflector/list-watch.ts';
import { Reflector, type ReflectorOptions } from '../reflector/reflector.ts';
import type { LoadedSnapshot, ResourceSnapshot } from '../snapshot/resource-snapshot.ts';
import type { Upstream } from '../upstream/connection.ts';
import { discoverResource, parseResourceName } from '../upstream/discovery.ts';
import { type Clock, realClock } from '../util/clock.ts';
import { DiscoveryError } from '../util/errors.ts';
import { type Logger, silentLogger } from '../util/logger.ts';
import {
  type CacheOrigin,
  type ResourceEntry,
  type ResourcePhase,
  type ResourceState,
  resourceState,
} from './resource-state.ts';

/** Where the server answers from: a resource's watch cache is served once it exists, unserved when it must not answer. */
export interface Serving {
  /** Starts answering the resource from `cache` (once it is synced). */
  serve(cache: WatchCache): void;
  /** Stops answering from `cache`: the resource's requests go upstream at once. */
  unserve(cache: WatchCache): void;
}

/**
 * How the owner of a resource reacts to its cache's life (all optional, none may throw): the
 * configured caches' policy is `resource-set.ts`'s, the on-demand one `on-demand/caches.ts`'s.
 */
export interface ResourcePolicy {
  /** The first complete snapshot was stored. */
  onFirstSync?(resource: CachedResource): void;
  /** A complete snapshot after the first (a relist: the resource may have changed upstream). */
  onRelist?(resource: CachedResource): void;
  /** An error ended a ListAndWatch attempt (e.g. the 404 of a custom resource whose CRD is gone). */
  onError?(resource: CachedResource, err: unknown): void;
  /** When the resource was last used (ms since the epoch), for its state; null when not tracked. */
  lastUsedMs?(resource: CachedResource): number | null;
  /** The resource is stopping: end whatever the policy runs for it (a re-check, its timer). */
  onStop?(resource: CachedResource): void;
}

/** Counters of one resource (the ops layer's metrics, labelled by group and resource). */
export interface ResourceMetricsHooks {
  /** An event arrived from upstream (`kube_cache_proxy_events_received_total`). */
  eventReceived(gr: { group: string; resource: string }): void;
  /** A change was handed to the fan-out (`apiserver_watch_cache_events_dispatched_total`). */
  eventDispatched(gr: { group: string; resource: string }): void;
  /** The cache ended a watcher for cause (`apiserver_terminated_watchers_total{reason}`). */
  watcherTerminated(gr: { group: string; resource: string }, reason: TerminationReason): void;
  /** A watcher was parked (`apiserver_watch_cache_watcher_stalls_total`). */
  watcherParked(gr: { group: string; resource: string }): void;
  /**
   * A parked watcher caught up (`apiserver_watch_cache_watcher_catchup_rounds_total`) after
   * sending `catchupEvents` history events (`…_watcher_catchup_events`).
   */
  watcherResumed(gr: { group: string; resource: string }, catchupEvents: number): void;
  /** A compaction probe was answered (`kube_cache_proxy_compaction_probes_total`). */
  compactionProbe?(gr: { group: string; resource: string }, answer: CompactionAnswer): void;
}

/** Options of {@link CachedResource}. */
export interface CachedResourceOptions {
  /** The entry's key: as configured (`pods`, `deployments.apps`) or `resource.version[.group]` on demand. */
  name: string;
  origin: CacheOrigin;
  /** The scope of a scoped cache (`--resources pods[fieldSelector=…]`); undefined: whole resource. */
  scope: ResourceScope | undefined;
  /**
   * Already discovered (an on-demand cache's discovery ran before it was added): no discovery
   * loop; its `namespace`, if set, restricts the cache to that namespace.
   */
  info?: ResourceInfo;
  upstream: Upstream;
  /** `--namespace`: the namespace of a namespaced resource whose `info` names none. */
  namespace?: string;
  /** The policy of this resource, built once with it. */
  policy: (resource: CachedResource) => ResourcePolicy;
  serving: Serving;
  metrics?: ResourceMetricsHooks;
  /** The bound on parked watchers shared by every cache (`--max-parked-watchers`); default: the cache's own. */
  parkedWatchers?: ParkedWatchers;
  /**
   * Its snapshot (`--snapshot-dir`; configured resources only): loaded before discovery (a warm
   * start serves it and resumes the watch from its RV), written after the first sync, every
   * interval and at {@link CachedResource.stop}.
   */
  snapshot?: ResourceSnapshot;
  /**
   * Asks the upstream whether a loaded snapshot may be resumed: the reason to refuse it (another
   * apiserver, an RV ahead of the upstream's), or undefined. Rejects when the upstream cannot
   * answer (retried while the snapshot is served).
   */
  verifySnapshot?: (
    snapshot: LoadedSnapshot,
    lw: ListerWatcher,
    signal: AbortSignal,
  ) => Promise<string | undefined>;
  /** Passed to the reflector. */
  reflector?: Partial<Omit<ReflectorOptions, 'info' | 'lw' | 'sink'>>;
  clock?: Clock;
  random?: () => number;
  logger?: Logger;
  /** Discovery override (tests). */
  discover?: (name: string, signal: AbortSignal) => Promise<ResourceInfo>;
  /** ListerWatcher override (tests). */
  listerWatcherFor?: (info: ResourceInfo) => ListerWatcher;
  /** A sink instead of a watch cache (tests of the reflector loop); nothing is served then. */
  sinkFor?: (info: ResourceInfo, name: string, lw: ListerWatcher) => CacheSink;
}

/** See the module comment. */
export class CachedResource {
  readonly name: string;
  readonly origin: CacheOrigin;
  readonly scope: ResourceScope | undefined;
  readonly #o: CachedResourceOptions;
  readonly #policy: ResourcePolicy;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #ac = new AbortController();
  readonly startedMs: number;
  #phase: ResourcePhase = 'discovering';
  #info: ResourceInfo | undefined;
  #discoveryError: string | null = null;
  #reflector: Reflector | undefined;
  #cache: WatchCache | undefined;
  #lw: ListerWatcher | undefined;
  #served = false;
  #done: Promise<void> | undefined;
  /** Resolved once the snapshot step is over ({@link restored}). */
  readonly #restored = Promise.withResolvers<void>();

  constructor(o: CachedResourceOptions) {
    this.#o = o;
    this.name = o.name;
    this.origin = o.origin;
    this.scope = o.scope;
    this.#clock = o.clock ?? realClock;
    this.#log = o.logger ?? silentLogger;
    this.startedMs = this.#clock.now();
    this.#policy = o.policy(this);
  }

  /** The resource as discovered (scope and namespace set); undefined before discovery. */
  get info(): ResourceInfo | undefined {
    return this.#info;
  }

  /** Its watch cache; undefined before discovery (or with a test sink). */
  get cache(): WatchCache | undefined {
    return this.#cache;
  }

  /** The lister-watcher its reflector uses (for requests of the same shape); undefined before discovery. */
  get listerWatcher(): ListerWatcher | undefined {
    return this.#lw;
  }

  /** Starts discovery and the reflector's loop; returns at once. Idempotent. */
  start(): void {
    this.#done ??= this.#run();
  }

  /**
   * Stops serving from the cache, stops the reflector, waits for its loop to end and frees the
   * cache (its watchers are ended).
   */
  async stop(): Promise<void> {
    this.#ac.abort(new Error('stopped'));
    this.#policy.onStop?.(this);
    this.unserve();
    this.#reflector?.stop();
    await this.#done;
    // The last snapshot, written after the reflector stopped (nothing moves the cache any more).
    await this.#o.snapshot?.final();
    this.#cache?.close();
  }

  /** The server stops answering from the cache (its requests pass upstream); the cache keeps syncing. */
  unserve(): void {
    if (!this.#served || !this.#cache) return;
    this.#served = false;
    this.#o.serving.unserve(this.#cache);
  }

  /** The reflector side ({@link ResourceEntry}). */
  entry(): ResourceEntry {
    return {
      name: this.name,
      scope: this.scope,
      phase: this.#phase,
      info: this.#info,
      discoveryError: this.#discoveryError,
      reflector: this.#reflector?.status(),
      origin: this.origin,
      startedMs: this.startedMs,
    };
  }

  /** The one state model (`resource-state.ts`). */
  state(): ResourceState {
    const named = parseResourceName(this.name);
    return resourceState(
      this.entry(),
      this.#cache?.stats(),
      { group: named.group, version: named.version ?? '', resource: named.resource },
      this.#policy.lastUsedMs?.(this) ?? null,
    );
  }

  /**
   * Resolves once this resource is served from its snapshot (restored into its cache, which the
   * server answers from), or as soon as it is known that it will not be (no snapshot settings, no
   * usable file, the resource stopped): what the server waits for at a warm start before it
   * answers any request (main.ts), so a client resuming at once is not passed upstream as
   * `not-cached`. Never rejects; never waits for the upstream.
   */
  restored(): Promise<void> {
    return this.#restored.promise;
  }

  async #run(): Promise<void> {
    try {
      await this.#runLoaded();
    } finally {
      this.#restored.resolve();
    }
  }

  async #runLoaded(): Promise<void> {
    const signal = this.#ac.signal;
    const snap = this.#o.snapshot;
    let loaded = snap ? await snap.load(this.#o.namespace) : undefined;
    // A cold start: nothing to wait for (discovery and the sync are the upstream's).
    if (!loaded) this.#restored.resolve();
    const info = await this.#discover(signal, loaded?.info);
    if (!info || signal.aborted) {
      this.#phase = 'stopped';
      return;
    }
    this.#info = info;
    this.#discoveryError = null;
    this.#phase = 'running';
    const lw =
      this.#o.listerWatcherFor?.(info) ?? new HttpListerWatcher(this.#o.upstream, info, info.namespace);
    this.#lw = lw;
    const sink = this.#sink(info, lw);
    if (loaded && this.#cache) {
      try {
        this.#cache.restore(loaded.state, loaded.header.takenAtMs);
      } catch (err) {
        await snap?.discard((err as Error).message);
        loaded = undefined;
      }
    }
    this.#restored.resolve();
    const l = loaded;
    const verify = this.#o.verifySnapshot;
    const reflector = new Reflector({
      ...this.#o.reflector,
      clock: this.#clock,
      logger: this.#log,
      ...(this.#o.random ? { random: this.#o.random } : {}),
      info,
      lw,
      sink,
      onError: (err) => this.#policy.onError?.(this, err),
      ...(l && verify
        ? {
            resume: {
              resourceVersion: l.header.resourceVersion,
              verify: async (s: AbortSignal) => {
                const refused = await verify(l, lw, s);
                if (refused !== undefined) await snap?.discard(refused);
                return refused === undefined;
              },
            },
          }
        : {}),
    });
    if (this.#cache) snap?.start(this.#cache, info);
    this.#reflector = reflector;
    // Stopped while its sink was being built.
    if (signal.aborted) reflector.stop();
    await reflector.run();
    if (reflector.status().passThrough !== null) {
      this.#phase = 'pass-through';
      // Its sink will never sync: whoever serves from it must stop waiting for it.
      this.unserve();
      return;
    }
    this.#phase = 'stopped';
  }

  /**
   * The resource as discovered, with its scope and namespace; retried with backoff until it is
   * served or the resource is stopped (undefined).
   */
  async #discover(signal: AbortSignal, saved?: ResourceInfo): Promise<ResourceInfo | undefined> {
    const backoff = new Backoff({
      clock: this.#clock,
      ...(this.#o.random ? { random: this.#o.random } : {}),
    });
    const discover =
      this.#o.discover ?? ((n: string, s: AbortSignal) => discoverResource(this.#o.upstream, n, s));
    // A warm start serves the resource as it was discovered when its snapshot was taken.
    let info = this.#o.info ?? saved;
    while (!signal.aborted && !info) {
      try {
        info = await discover(this.name, signal);
      } catch (err) {
        if (signal.aborted) break;
        this.#discoveryError = (err as Error).message;
        const delay = backoff.next();
        this.#log.error(
          {
            resource: this.name,
            ...(this.scope ? { scope: scopeString(this.scope) } : {}),
            code: err instanceof DiscoveryError ? err.code : undefined,
            retryInMs: Math.round(delay),
          },
          `cannot cache ${this.name}: ${(err as Error).message}`,
        );
        try {
          await this.#clock.sleep(delay, signal);
        } catch {
          break;
        }
      }
    }
    if (!info) return undefined;
    // The scope travels with the resource: the lister-watcher lists/watches with it, the server
    // serves only requests inside it (delegate.ts), /debug/cache and logs show it.
    if (this.scope) info.scope = this.scope;
    // So does the namespace: an added resource's own (a namespace-restricted on-demand cache),
    // else `--namespace`, for namespaced resources only.
    if (info.namespaced && info.namespace === undefined && this.#o.namespace !== undefined)
      info.namespace = this.#o.namespace;
    if (!info.namespaced) delete info.namespace;
    return info;
  }

  /**
   * The watch cache with its metrics hooks and gap prover, served, and the sink its reflector
   * writes into, observed for the events metric and the policy's first sync and relists.
   */
  #sink(info: ResourceInfo, lw: ListerWatcher): CacheSink {
    const m = this.#o.metrics;
    const gr = { group: info.gvr.group, resource: info.gvr.resource };
    let sink: CacheSink;
    if (this.#o.sinkFor) sink = this.#o.sinkFor(info, this.name, lw);
    else {
      // Exact and continue reads at an RV the upstream compacted go upstream (docs/design.md §3):
      // the floor polls with Exact LISTs of one item while such reads come.
      const compaction = new CompactionFloor({
        probe: (rv, signal) => exactReadAt(lw, rv, signal),
        clock: this.#clock,
        window: () => cache.servedWindow(),
        ...(m?.compactionProbe ? { onProbe: (a: CompactionAnswer) => m.compactionProbe?.(gr, a) } : {}),
        onRaise: (floor) =>
          this.#log.info(
            { resource: this.name, compactedRV: String(floor) },
            'the upstream compacted resourceVersions up to compactedRV: Exact and continue reads at or below it go upstream',
          ),
      });
      const cache: WatchCache = new WatchCache({
        resource: info,
        logger: this.#log,
        compaction,
        // A watch resuming below the window after a (re)start asks the upstream first (docs/design.md §6).
        gapProver: (from, to, signal) => proveNoEventsBetween(lw, from, to, signal),
        // `--consistent-reads=proven`: a LIST of one item at RV="" tells etcd's current revision
        // (the apiserver reads it from etcd before answering, KEP-2340).
        revisionProbe: () => currentRevision(lw),
        ...(this.#o.parkedWatchers ? { parkedWatchers: this.#o.parkedWatchers } : {}),
        ...(m
          ? {
              onEventDispatched: () => m.eventDispatched(gr),
              onWatcherTerminated: (reason: TerminationReason) => m.watcherTerminated(gr, reason),
              onWatcherParked: () => m.watcherParked(gr),
              onWatcherResumed: (n) => m.watcherResumed(gr, n),
            }
          : {}),
      });
      this.#cache = cache;
      // Served BEFORE its reflector lists (`#run` builds the sink first): read-your-writes
      // tracks a write answered from now on (`tracked-answers.ts`), and one answered before is
      // in the first snapshot, so a read right after a write never sees the cache without it.
      if (!this.#ac.signal.aborted) {
        this.#served = true;
        this.#o.serving.serve(cache);
      }
      sink = cache;
    }
    const policy = this.#policy;
    return observedSink(sink, {
      ...(m ? { onEvent: () => m.eventReceived(gr) } : {}),
      onFirstSync: () => {
        void this.#o.snapshot?.write();
        policy.onFirstSync?.(this);
      },
      onRelist: () => policy.onRelist?.(this),
    });
  }
}
