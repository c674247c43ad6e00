/**
 * The set of cached resources, one {@link CachedResource} per entry, as client-go's
 * `dynamicSharedInformerFactory` owns its informers and apiextensions' `crdHandler` creates and
 * tears down one storage per CRD: the configured ones (`--resources`, started by {@link start})
 * and those added at run time (on demand, `on-demand/caches.ts`). Each runs its own loop: a
 * resource that fails (discovery, upstream errors) never delays the others. It tells the
 * server's registry to serve or unserve each watch cache through one {@link Serving}, and gives
 * every configured cache the configured policy: after a relist, the {@link RelistRecheck}
 * whose action on a change is to stop serving it (its requests pass upstream) and to say so.
 */
import { groupResourceString, type ResourceInfo } from '../apimachinery/gvr.ts';
import type { ResourceScope, ResourceSpec } from '../apimachinery/resource-scope.ts';
import { scopeString } from '../apimachinery/resource-scope.ts';
import type { ParkedWatchers } from '../cache/parked-watchers.ts';
import type { CacheSink } from '../reflector/cache-sink.ts';
import type { ListerWatcher } from '../reflector/list-watch.ts';
import { ResourceSnapshot, type SnapshotSettings } from '../snapshot/resource-snapshot.ts';
import { resumeCheck } from '../snapshot/resume-check.ts';
import { deleteSnapshotFile, snapshotFileName } from '../snapshot/snapshot-file.ts';
import type { Upstream } from '../upstream/connection.ts';
import { discoverResource, parseResourceName } from '../upstream/discovery.ts';
import { type Clock, realClock } from '../util/clock.ts';
import { type Logger, silentLogger } from '../util/logger.ts';
import {
  CachedResource,
  type CachedResourceOptions,
  type ResourceMetricsHooks,
  type ResourcePolicy,
  type Serving,
} from './cached-resource.ts';
import { entryName } from './entry-name.ts';
import { RelistRecheck } from './relist-recheck.ts';
import type { CacheOrigin, ResourceEntry, ResourceState } from './resource-state.ts';

/** One resource added at run time ({@link ResourceSet.add}). */
export interface AddedResource {
  /** The entry's key, e.g. `configmaps.v1` or `widgets.v1.example.com`. */
  name: string;
  origin: CacheOrigin;
  /**
   * Already discovered (an on-demand cache's discovery ran before it was added); its
   * `namespace`, if set, restricts the cache to that namespace (else the set's `namespace`).
   */
  info: ResourceInfo;
  /** How its owner reacts to its first sync, relists and errors; default: not at all. */
  policy?: ResourcePolicy;
}

/** Options for {@link ResourceSet}. */
export interface ResourceSetOptions {
  upstream: Upstream;
  /** Resources to cache, as the CLI names them (a bare name: unscoped), each with its scope (if any). */
  resources: (string | ResourceSpec)[];
  clock?: Clock;
  random?: () => number;
  logger?: Logger;
  metrics?: ResourceMetricsHooks;
  /** The bound on parked watchers shared by every cache (`--max-parked-watchers`); default: each cache its own. */
  parkedWatchers?: ParkedWatchers;
  /** Passed to every reflector. */
  reflector?: CachedResourceOptions['reflector'];
  /**
   * Snapshots of the configured resources (`--snapshot-dir`); `secrets` only with `secrets`
   * (`--snapshot-secrets`). Default: none (memory only).
   */
  snapshots?: SnapshotSettings & { secrets: boolean };
  /**
   * Every namespaced resource is listed and watched in this namespace only (`--namespace`, for
   * namespace-scoped RBAC) unless its added `info.namespace` names its own; cluster-scoped
   * resources are unaffected. Default: all namespaces. Recorded as `info.namespace`.
   */
  namespace?: string;
  /** Delay of the configured re-check's second discovery after a relist (ms); default 5 000. */
  recheckAgainMs?: number;
  /** Discovery override (tests). */
  discover?: (name: string, signal: AbortSignal) => Promise<ResourceInfo>;
  /** ListerWatcher override (tests). */
  listerWatcherFor?: (info: ResourceInfo) => ListerWatcher;
  /** A sink instead of a watch cache (tests of the reflector loop); nothing is served then. */
  sinkFor?: (info: ResourceInfo, name: string, lw: ListerWatcher) => CacheSink;
}

/** A set without a server: nothing is served (tests of the reflector loop, tools). */
const NOT_SERVED: Serving = { serve() {}, unserve() {} };

/** See the module comment. */
export class ResourceSet {
  readonly #o: ResourceSetOptions;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #resources = new Map<string, CachedResource>();
  readonly #configured: { name: string; scope: ResourceScope | undefined }[];
  #serving: Serving | undefined;
  #closed = false;

  constructor(o: ResourceSetOptions) {
    this.#o = o;
    this.#clock = o.clock ?? realClock;
    this.#log = o.logger ?? silentLogger;
    this.#configured = o.resources.map((r) => {
      const spec: ResourceSpec = typeof r === 'string' ? { name: r } : r;
      const scope: ResourceScope | undefined =
        spec.fieldSelector !== undefined || spec.labelSelector !== undefined
          ? {
              ...(spec.fieldSelector !== undefined ? { fieldSelector: spec.fieldSelector } : {}),
              ...(spec.labelSelector !== undefined ? { labelSelector: spec.labelSelector } : {}),
            }
          : undefined;
      return { name: spec.name, scope };
    });
  }

  /**
   * Starts every configured resource's loop, serving through `serving` (default: nothing is
   * served); returns at once. The set is built before the server exists (`main.ts`): from here
   * on resources may be added.
   */
  start(serving: Serving = NOT_SERVED): void {
    if (this.#serving || this.#closed) return;
    this.#serving = serving;
    for (const c of this.#configured) {
      const r = this.#resource(
        { name: c.name, origin: 'configured', scope: c.scope, ...this.#snapshot(c.name, c.scope) },
        (res) => configuredPolicy(res, this.#o, this.#log, this.#clock),
      );
      this.#resources.set(c.name, r);
    }
    for (const r of this.#resources.values()) r.start();
  }

  /**
   * Resolves once every configured resource is served from its snapshot or known not to be
   * (`CachedResource.restored`); at once before {@link start}. Never rejects.
   */
  async restored(): Promise<void> {
    await Promise.all([...this.#resources.values()].map((r) => r.restored()));
  }

  /**
   * Adds a resource at run time and starts it at once; false when an entry of that name exists,
   * or the set is not started yet (nothing could serve it: the caller's next request asks again)
   * or closed.
   */
  add(a: AddedResource): boolean {
    if (this.#resources.has(a.name) || this.#closed || !this.#serving) return false;
    const r = this.#resource(
      { name: a.name, origin: a.origin, scope: a.info.scope, info: a.info },
      () => a.policy ?? {},
    );
    this.#resources.set(a.name, r);
    r.start();
    return true;
  }

  /**
   * Stops the resource `name` (unserved, its reflector stopped and awaited, its cache freed) and
   * forgets it. False when there is no such entry.
   */
  async remove(name: string): Promise<boolean> {
    const r = this.#resources.get(name);
    if (!r) return false;
    this.#resources.delete(name);
    await r.stop();
    return true;
  }

  /** The resource of entry `name`. */
  get(name: string): CachedResource | undefined {
    return this.#resources.get(name);
  }

  /** Every resource's reflector side: configured ones first, then those added, in order. */
  entries(): ResourceEntry[] {
    return [...this.#resources.values()].map((r) => r.entry());
  }

  /** Every resource's state (the one model, `resource-state.ts`). */
  states(): ResourceState[] {
    return [...this.#resources.values()].map((r) => r.state());
  }

  /** Bytes of stored objects over every cache. */
  totalBytes(): number {
    let n = 0;
    for (const r of this.#resources.values()) n += r.cache?.stats().bytes ?? 0;
    return n;
  }

  /** Stops every resource and waits for their loops to end. */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#resources.values()].map((r) => r.stop()));
  }

  /** The snapshot options of a configured resource: none without `snapshots`, nor for secrets without their flag. */
  #snapshot(
    name: string,
    scope: ResourceScope | undefined,
  ): Pick<CachedResourceOptions, 'snapshot' | 'verifySnapshot'> {
    const s = this.#o.snapshots;
    if (!s) return {};
    let secret = false;
    try {
      const n = parseResourceName(name);
      secret = n.group === '' && n.resource === 'secrets';
    } catch {
      return {}; // discovery says why
    }
    if (secret && !s.secrets) {
      // Never kept without --snapshot-secrets, nor one left from a run that had it.
      void deleteSnapshotFile(s.dir, snapshotFileName(name, scopeString(scope)));
      return {};
    }
    return {
      snapshot: new ResourceSnapshot(s, name, scopeString(scope)),
      verifySnapshot: resumeCheck(s.identity),
    };
  }

  #resource(
    r: Pick<CachedResourceOptions, 'name' | 'origin' | 'scope' | 'info' | 'snapshot' | 'verifySnapshot'>,
    policy: CachedResourceOptions['policy'],
  ): CachedResource {
    const o = this.#o;
    return new CachedResource({
      ...r,
      upstream: o.upstream,
      policy,
      serving: {
        serve: (cache) => this.#serving?.serve(cache),
        unserve: (cache) => this.#serving?.unserve(cache),
      },
      clock: this.#clock,
      logger: this.#log,
      ...(o.namespace !== undefined ? { namespace: o.namespace } : {}),
      ...(o.metrics ? { metrics: o.metrics } : {}),
      ...(o.parkedWatchers ? { parkedWatchers: o.parkedWatchers } : {}),
      ...(o.reflector ? { reflector: o.reflector } : {}),
      ...(o.random ? { random: o.random } : {}),
      ...(o.discover ? { discover: o.discover } : {}),
      ...(o.listerWatcherFor ? { listerWatcherFor: o.listerWatcherFor } : {}),
      ...(o.sinkFor ? { sinkFor: o.sinkFor } : {}),
    });
  }
}

/** What {@link configuredRecheck} needs. */
export interface ConfiguredRecheckOptions {
  /** The resource as discovered when its cache started. */
  info: ResourceInfo;
  /** Discovery of exactly that GroupVersionResource now; throws when it is not served. */
  discover: () => Promise<ResourceInfo>;
  /** Stops serving the cache (its requests then pass upstream). */
  unserve: () => void;
  clock: Clock;
  log: Logger;
  /** Delay of the second discovery after a relist (ms); default 5 000. */
  againMs?: number;
}

/**
 * The function to call after each relist of a configured cache: {@link RelistRecheck} whose
 * action on a change (a CRD re-created with another scope, kind or verbs) is to stop serving the
 * cache for good and log an error naming the resource, the change and the remedy (restart the
 * proxy); its `/readyz` check is unchanged. A discovery that fails (the CRD not re-created yet,
 * an upstream error) changes nothing: its LIST answers 404 and the reflector retries.
 */
export function configuredRecheck(o: ConfiguredRecheckOptions): RelistRecheck {
  const recheck = new RelistRecheck({
    info: o.info,
    discover: o.discover,
    goneIsChange: false,
    clock: o.clock,
    ...(o.againMs !== undefined ? { againMs: o.againMs } : {}),
    onChange(change) {
      o.unserve();
      o.log.error(
        { resource: groupResourceString(o.info.gvr), version: o.info.gvr.version, change },
        `cached resource changed upstream (${change}; its CRD re-created?): no longer served from the cache, its requests pass upstream; restart the proxy to cache it again`,
      );
    },
  });
  return recheck;
}

/**
 * The policy of a configured cache: {@link configuredRecheck} after each relist, stopped (its
 * timer cleared, a discovery under way aborted) when the resource stops.
 */
function configuredPolicy(
  resource: CachedResource,
  o: ResourceSetOptions,
  log: Logger,
  clock: Clock,
): ResourcePolicy {
  let recheck: RelistRecheck | undefined;
  const ac = new AbortController();
  return {
    onRelist() {
      const info = resource.info;
      if (!info || ac.signal.aborted) return;
      recheck ??= configuredRecheck({
        info,
        discover: () => discoverResource(o.upstream, entryName(info.gvr), ac.signal),
        unserve: () => resource.unserve(),
        clock,
        log,
        ...(o.recheckAgainMs !== undefined ? { againMs: o.recheckAgainMs } : {}),
      });
      recheck.relisted();
    },
    onStop() {
      ac.abort(new Error('stopped'));
      recheck?.stop();
    },
  };
}
