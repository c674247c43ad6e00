/**
 * What `--resources=auto` (`on-demand/caches.ts`) remembers it refused, so a client's requests
 * cause no review or discovery storm: refusals per resource, and per resource and namespace (a
 * denial cluster-wide is kept apart: a request in another namespace then reviews only its
 * namespace), and the group-versions discovery did not find (the names of one group-version then
 * cost one discovery, issue 15). Entries expire; nothing here logs or counts.
 */
import type { Clock } from '../util/clock.ts';

/** A remembered refusal. */
export interface Refusal {
  /** Until when (ms since the epoch). */
  until: number;
  /**
   * Only the cluster-wide reviews were denied (the first verb denied): a request in a namespace
   * may still review its namespace.
   */
  clusterDenied?: 'list' | 'watch';
}

/** The refusal key of a namespace of a resource (a resource's own key is its entry name). */
export function refusalKey(name: string, namespace: string): string {
  return `${name} ${namespace}`;
}

/** The group-version of an entry name (`resource.version[.group]`): `v1`, `apps/v1`. */
export function groupVersionOf(name: string): string {
  const [, version = '', ...group] = name.split('.');
  return group.length ? `${group.join('.')}/${version}` : version;
}

/** See the module comment. */
export class Refusals {
  readonly #clock: Clock;
  /** Refusals by entry name or {@link refusalKey}. */
  readonly #refused = new Map<string, Refusal>();
  /** Group-versions discovery did not find (`example.com/v1`), until when (ms since the epoch). */
  readonly #missingGroupVersions = new Map<string, number>();

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** Remembers a refusal of `key` for `ttlMs`. */
  remember(key: string, ttlMs: number, clusterDenied?: 'list' | 'watch'): void {
    this.#refused.set(key, { until: this.#clock.now() + ttlMs, ...(clusterDenied ? { clusterDenied } : {}) });
  }

  /** The refusal of `key` unless it expired (then forgotten). */
  live(key: string): Refusal | undefined {
    const r = this.#refused.get(key);
    if (r === undefined || r.until > this.#clock.now()) return r;
    this.#refused.delete(key);
    return undefined;
  }

  /**
   * Whether a request of `name` in `namespace` (undefined: all) is refused for now: the resource
   * is, or (a request in a namespace after a denial cluster-wide only) that namespace is, or
   * its group-version was not found.
   */
  isRefused(name: string, namespace: string | undefined): boolean {
    const r = this.live(name);
    if (r && !(r.clusterDenied !== undefined && namespace !== undefined)) return true;
    if (namespace !== undefined && this.live(refusalKey(name, namespace)) !== undefined) return true;
    const gv = groupVersionOf(name);
    const until = this.#missingGroupVersions.get(gv);
    if (until === undefined) return false;
    if (until > this.#clock.now()) return true;
    this.#missingGroupVersions.delete(gv);
    return false;
  }

  /** Discovery did not find the group-version of `name`: every name of it is refused for `ttlMs`. */
  missingGroupVersion(name: string, ttlMs: number): void {
    this.#missingGroupVersions.set(groupVersionOf(name), this.#clock.now() + ttlMs);
  }

  /** Forgets what expired (run by the idle check, so invented names do not pile up). */
  sweep(): void {
    const now = this.#clock.now();
    for (const [key, r] of this.#refused) if (r.until <= now) this.#refused.delete(key);
    for (const [gv, until] of this.#missingGroupVersions)
      if (until <= now) this.#missingGroupVersions.delete(gv);
  }
}
