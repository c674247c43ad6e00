import type { ResourceInfo, ResourceScope } from '../apimachinery/gvr.ts';
import { type ResourceSpec, scopeString } from '../apimachinery/resource-scope.ts';
import type { Upstream } from '../upstream/connection.ts';
import { discoverResource } from '../upstream/discovery.ts';
import { type Clock, realClock } from '../util/clock.ts';
import { DiscoveryError } from '../util/errors.ts';
import { type Logger, silentLogger } from '../util/logger.ts';
import { Backoff } from './backoff.ts';
import type { CacheSink } from './cache-sink.ts';
import { HttpListerWatcher, type ListerWatcher } from './list-watch.ts';
import { Reflector, type ReflectorOptions, type ReflectorStatus } from './reflector.ts';

/**
 * Where a configured resource's loop is: discovering (retried with backoff), running, stopped,
 * or `pass-through`: it cannot be cached (its resourceVersions do not parse), its reflector
 * stopped for good and every request for it is passed upstream (issue 11 item 9).
 */
export type ReflectorPhase = 'discovering' | 'running' | 'stopped' | 'pass-through';

/**
 * The reflector side of one configured resource: discovery and the reflector's status. The one
 * model of a resource's state that readyz, metrics, /debug/cache and logs use is
 * `cache/resource-state.ts`, built from this and the watch cache's stats.
 */
export interface ReflectorEntry {
  /** As configured (`pods`, `deployments.apps`, …). */
  name: string;
  /** The scope of a scoped cache (`--resources pods[fieldSelector=…]`); undefined: whole resource. */
  scope: ResourceScope | undefined;
  phase: ReflectorPhase;
  info: ResourceInfo | undefined;
  /** The last discovery error (e.g. a CRD not installed yet); null when none. */
  discoveryError: string | null;
  reflector: ReflectorStatus | undefined;
  /**
   * `configured`: from `--resources` (gates `/readyz`, never evicted); `auto`: started on demand
   * by a client's LIST or WATCH (`--resources=auto`, `on-demand/caches.ts`).
   */
  origin: CacheOrigin;
  /** When the entry was added, ms since the epoch. */
  startedMs: number;
}

/** Why a cache exists: configured, or started on demand. */
export type CacheOrigin = 'configured' | 'auto';

/** One resource added at run time ({@link ReflectorSet.add}). */
export interface AddedResource {
  /** The entry's key, e.g. `configmaps.v1` or `widgets.v1.example.com`. */
  name: string;
  origin: CacheOrigin;
  /**
   * Already discovered (an on-demand cache's discovery ran before it was added); its
   * `namespace`, if set, restricts the cache to that namespace (else the set's `namespace`).
   */
  info: ResourceInfo;
  /** Called with every error that ended a ListAndWatch attempt (e.g. a 404: the CRD is gone). */
  onError?: (err: unknown) => void;
}

/** One entry of the set with its loop. */
interface Slot {
  state: ReflectorEntry;
  /** Aborted by {@link ReflectorSet.remove} (and stop). */
  ac: AbortController;
  /** Discovered before it was added: no discovery loop. */
  known?: ResourceInfo;
  onError?: (err: unknown) => void;
  reflector?: Reflector;
  done?: Promise<void>;
}

/** Options for {@link ReflectorSet}. */
export interface ReflectorSetOptions {
  upstream: Upstream;
  /** Resources to cache, as the CLI names them (a bare name: unscoped), each with its scope (if any). */
  resources: (string | ResourceSpec)[];
  /**
   * The sink of a resource, called once its discovery succeeded, with the ListerWatcher its
   * reflector uses (for requests of the same shape, e.g. reflector/gap-proof.ts).
   */
  sinkFor: (info: ResourceInfo, name: string, lw: ListerWatcher) => CacheSink;
  clock?: Clock;
  random?: () => number;
  logger?: Logger;
  /** Passed to every reflector. */
  reflector?: Partial<Omit<ReflectorOptions, 'info' | 'lw' | 'sink'>>;
  /** Discovery override (tests). */
  discover?: (name: string, signal: AbortSignal) => Promise<ResourceInfo>;
  /**
   * Every namespaced resource is listed and watched in this namespace only (`--namespace`, for
   * namespace-scoped RBAC) unless its added `info.namespace` names its own; cluster-scoped
   * resources are unaffected. Default: all namespaces. Recorded as `info.namespace`.
   */
  namespace?: string;
  /**
   * Called once when a resource turns out not to be cacheable (phase `pass-through`): its sink
   * will never sync, so whoever serves from it must stop waiting for it.
   */
  onPassThrough?: (info: ResourceInfo, name: string) => void;
  /** ListerWatcher override (tests). */
  listerWatcherFor?: (info: ResourceInfo) => ListerWatcher;
}

/**
 * One reflector per configured resource, each in its own loop: a resource that fails
 * (discovery, upstream errors) never delays the others. Discovery failures are logged with the
 * resource's name and retried with the reflector backoff (800 ms … [30, 60) s), so a CRD
 * installed after start is picked up.
 */
export class ReflectorSet {
  readonly #opts: ReflectorSetOptions;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #ac = new AbortController();
  readonly #states = new Map<string, Slot>();
  #started = false;

  constructor(opts: ReflectorSetOptions) {
    this.#opts = opts;
    this.#clock = opts.clock ?? realClock;
    this.#log = opts.logger ?? silentLogger;
    for (const r of opts.resources) {
      const spec: ResourceSpec = typeof r === 'string' ? { name: r } : r;
      const scope: ResourceScope | undefined =
        spec.fieldSelector !== undefined || spec.labelSelector !== undefined
          ? {
              ...(spec.fieldSelector !== undefined ? { fieldSelector: spec.fieldSelector } : {}),
              ...(spec.labelSelector !== undefined ? { labelSelector: spec.labelSelector } : {}),
            }
          : undefined;
      this.#states.set(spec.name, {
        state: {
          name: spec.name,
          scope,
          phase: 'discovering',
          info: undefined,
          discoveryError: null,
          reflector: undefined,
          origin: 'configured',
          startedMs: this.#clock.now(),
        },
        ac: new AbortController(),
      });
    }
  }

  /** Starts every resource's loop; returns at once. */
  start(): void {
    this.#started = true;
    for (const [name, entry] of this.#states) entry.done = this.#runOne(name);
  }

  /**
   * Adds a resource at run time and starts its reflector at once (after {@link start}); false
   * when an entry of that name exists or the set is stopped.
   */
  add(r: AddedResource): boolean {
    if (this.#states.has(r.name) || this.#ac.signal.aborted) return false;
    const slot: Slot = {
      state: {
        name: r.name,
        scope: r.info.scope,
        phase: 'discovering',
        info: undefined,
        discoveryError: null,
        reflector: undefined,
        origin: r.origin,
        startedMs: this.#clock.now(),
      },
      ac: new AbortController(),
      known: r.info,
      ...(r.onError ? { onError: r.onError } : {}),
    };
    this.#states.set(r.name, slot);
    if (this.#started) slot.done = this.#runOne(r.name);
    return true;
  }

  /**
   * Stops the reflector of `name`, waits for its loop to end and forgets the entry (its sink is
   * no longer written to). False when there is no such entry.
   */
  async remove(name: string): Promise<boolean> {
    const slot = this.#states.get(name);
    if (!slot) return false;
    this.#states.delete(name);
    slot.ac.abort(new Error('removed'));
    slot.reflector?.stop();
    await slot.done;
    return true;
  }

  /** Stops every reflector and waits for their loops to end. */
  async stop(): Promise<void> {
    this.#ac.abort(new Error('stopped'));
    for (const e of this.#states.values()) {
      e.ac.abort(new Error('stopped'));
      e.reflector?.stop();
    }
    await Promise.all([...this.#states.values()].map((e) => e.done));
  }

  /** A snapshot of every resource's state. */
  states(): ReflectorEntry[] {
    return [...this.#states.values()].map(({ state, reflector }) => ({
      ...state,
      reflector: reflector?.status(),
    }));
  }

  async #runOne(name: string): Promise<void> {
    const entry = this.#states.get(name)!;
    const signal = AbortSignal.any([this.#ac.signal, entry.ac.signal]);
    const backoff = new Backoff({
      clock: this.#clock,
      ...(this.#opts.random ? { random: this.#opts.random } : {}),
    });
    const discover =
      this.#opts.discover ??
      ((n: string, signal: AbortSignal) => discoverResource(this.#opts.upstream, n, signal));
    let info: ResourceInfo | undefined = entry.known;
    while (!signal.aborted && !info) {
      try {
        info = await discover(name, signal);
      } catch (err) {
        if (signal.aborted) break;
        entry.state.discoveryError = (err as Error).message;
        const delay = backoff.next();
        this.#log.error(
          {
            resource: name,
            ...(entry.state.scope ? { scope: scopeString(entry.state.scope) } : {}),
            code: err instanceof DiscoveryError ? err.code : undefined,
            retryInMs: Math.round(delay),
          },
          `cannot cache ${name}: ${(err as Error).message}`,
        );
        try {
          await this.#clock.sleep(delay, signal);
        } catch {
          break;
        }
      }
    }
    if (!info || signal.aborted) {
      entry.state.phase = 'stopped';
      return;
    }
    // The scope travels with the resource: the lister-watcher lists/watches with it, the server
    // serves only requests inside it (delegate.ts), /debug/cache and logs show it.
    if (entry.state.scope) info.scope = entry.state.scope;
    // So does the namespace: an added resource's own (a namespace-restricted on-demand cache),
    // else `--namespace`, for namespaced resources only.
    if (info.namespaced && info.namespace === undefined && this.#opts.namespace !== undefined)
      info.namespace = this.#opts.namespace;
    if (!info.namespaced) delete info.namespace;
    entry.state.info = info;
    entry.state.discoveryError = null;
    entry.state.phase = 'running';
    const lw =
      this.#opts.listerWatcherFor?.(info) ?? new HttpListerWatcher(this.#opts.upstream, info, info.namespace);
    const reflector = new Reflector({
      ...this.#opts.reflector,
      clock: this.#clock,
      logger: this.#log,
      ...(this.#opts.random ? { random: this.#opts.random } : {}),
      info,
      lw,
      sink: this.#opts.sinkFor(info, name, lw),
      ...(entry.onError ? { onError: entry.onError } : {}),
    });
    entry.reflector = reflector;
    // Removed while its sink was being built.
    if (signal.aborted) reflector.stop();
    await reflector.run();
    if (reflector.status().passThrough !== null) {
      entry.state.phase = 'pass-through';
      this.#opts.onPassThrough?.(info, name);
      return;
    }
    entry.state.phase = 'stopped';
  }
}
