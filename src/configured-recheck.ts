/**
 * A configured cache (`--resources`) whose resource changed upstream (issue 15): a CRD deleted
 * and re-created with the same group, version and plural but another scope, kind or verbs. The
 * apiserver builds a new cacher with the CRD's new storage; a configured cache of the proxy keeps
 * the definition it was discovered with, so after each relist (the CRD's deletion ends the
 * reflector's watch) discovery is asked again, at once and `againMs` later (the apiserver's
 * discovery may trail its storage). On a change the cache stops serving for good: it is removed
 * from the server (its requests pass upstream, the apiserver answers them) and an error names
 * the resource, the change and the remedy (restart the proxy). Its `/readyz` check is unchanged.
 */
import { groupResourceString, type ResourceInfo } from './apimachinery/gvr.ts';
import { resourceChange } from './apimachinery/resource-change.ts';
import type { Clock } from './util/clock.ts';
import type { Logger } from './util/logger.ts';

/** What {@link configuredRecheck} needs. */
export interface ConfiguredRecheckOptions {
  /** The resource as discovered when its cache started. */
  info: ResourceInfo;
  /** Discovery of exactly that GroupVersionResource now; throws when it is not served. */
  discover: () => Promise<ResourceInfo>;
  /** Removes the cache from the server (its requests then pass upstream). */
  unserve: () => void;
  clock: Clock;
  log: Logger;
  /** Delay of the second discovery after a relist (ms); default 5 000. */
  againMs?: number;
}

/**
 * The function to call after each relist of a configured cache (see the module comment). A
 * discovery that fails (the CRD not re-created yet, an upstream error) changes nothing: its
 * LIST answers 404 and the reflector retries, as for any configured resource.
 */
export function configuredRecheck(o: ConfiguredRecheckOptions): () => void {
  let done = false;
  let running = false;
  const check = async (again: boolean): Promise<void> => {
    if (done || running) return;
    running = true;
    let change: string | undefined;
    try {
      change = resourceChange(o.info, await o.discover());
    } catch {
      return;
    } finally {
      running = false;
    }
    if (change === undefined) {
      if (again) o.clock.setTimeout(() => void check(false), o.againMs ?? 5_000);
      return;
    }
    done = true;
    o.unserve();
    o.log.error(
      { resource: groupResourceString(o.info.gvr), version: o.info.gvr.version, change },
      `cached resource changed upstream (${change}; its CRD re-created?): no longer served from the cache, its requests pass upstream; restart the proxy to cache it again`,
    );
  };
  return () => void check(true);
}
