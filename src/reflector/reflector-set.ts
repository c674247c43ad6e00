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
}

/** Options for {@link ReflectorSet}. */
export interface ReflectorSetOptions {
  upstream: Upstream;
  /** Resources to cache, as the CLI names them (a bare name: unscoped), each with its scope (if any). */
  resources: (string | ResourceSpec)[];
  /** The sink of a resource, called once its discovery succeeded. */
  sinkFor: (info: ResourceInfo, name: string) => CacheSink;
  clock?: Clock;
  random?: () => number;
  logger?: Logger;
  /** Passed to every reflector. */
  reflector?: Partial<Omit<ReflectorOptions, 'info' | 'lw' | 'sink'>>;
  /** Discovery override (tests). */
  discover?: (name: string, signal: AbortSignal) => Promise<ResourceInfo>;
  /**
   * Every namespaced resource is listed and watched in this namespace only (`--namespace`, for
   * namespace-scoped RBAC); cluster-scoped resources are unaffected. Default: all namespaces.
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
  readonly #states = new Map<
    string,
    { state: ReflectorEntry; reflector?: Reflector; done?: Promise<void> }
  >();

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
        },
      });
    }
  }

  /** Starts every resource's loop; returns at once. */
  start(): void {
    for (const [name, entry] of this.#states) entry.done = this.#runOne(name);
  }

  /** Stops every reflector and waits for their loops to end. */
  async stop(): Promise<void> {
    this.#ac.abort(new Error('stopped'));
    for (const e of this.#states.values()) e.reflector?.stop();
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
    const backoff = new Backoff({
      clock: this.#clock,
      ...(this.#opts.random ? { random: this.#opts.random } : {}),
    });
    const discover =
      this.#opts.discover ??
      ((n: string, signal: AbortSignal) => discoverResource(this.#opts.upstream, n, signal));
    let info: ResourceInfo | undefined;
    while (!this.#ac.signal.aborted && !info) {
      try {
        info = await discover(name, this.#ac.signal);
      } catch (err) {
        if (this.#ac.signal.aborted) break;
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
          await this.#clock.sleep(delay, this.#ac.signal);
        } catch {
          break;
        }
      }
    }
    if (!info || this.#ac.signal.aborted) {
      entry.state.phase = 'stopped';
      return;
    }
    // The scope travels with the resource: the lister-watcher lists/watches with it, the server
    // serves only requests inside it (delegate.ts), /debug/cache and logs show it.
    if (entry.state.scope) info.scope = entry.state.scope;
    entry.state.info = info;
    entry.state.discoveryError = null;
    entry.state.phase = 'running';
    const lw =
      this.#opts.listerWatcherFor?.(info) ??
      new HttpListerWatcher(this.#opts.upstream, info, this.#opts.namespace);
    const reflector = new Reflector({
      ...this.#opts.reflector,
      clock: this.#clock,
      logger: this.#log,
      ...(this.#opts.random ? { random: this.#opts.random } : {}),
      info,
      lw,
      sink: this.#opts.sinkFor(info, name),
    });
    entry.reflector = reflector;
    await reflector.run();
    if (reflector.status().passThrough !== null) {
      entry.state.phase = 'pass-through';
      this.#opts.onPassThrough?.(info, name);
      return;
    }
    entry.state.phase = 'stopped';
  }
}
