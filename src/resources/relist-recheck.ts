/**
 * The ONE re-check of a cached resource after a relist: was its resource changed upstream? A
 * CRD deleted and re-created at once with the same group, version and plural but another scope,
 * kind or verbs leaves the reflector no 404 to see, only a relist (the CRD's deletion ends its
 * watch); the apiserver tears its own cacher down with the CRD's storage and builds a new one
 * (`apiextensions-apiserver` `pkg/apiserver/customresource_handler.go`, `crdHandler`). So after
 * each relist discovery is asked again, at once and `againMs` later (the apiserver's discovery
 * of a re-created CRD may trail its storage), and a change is handed to the caller's action:
 * a configured cache stops being served (`resource-set.ts`), an on-demand cache is stopped
 * (`on-demand/caches.ts`). After a change the re-check is done for good.
 */
import type { ResourceInfo } from '../apimachinery/gvr.ts';
import { resourceChange } from '../apimachinery/resource-change.ts';
import type { Clock, TimerHandle } from '../util/clock.ts';
import { DiscoveryError } from '../util/errors.ts';

/** After a relist whose discovery showed no change, discovery is asked once more this much later (ms). */
export const RECHECK_AGAIN_MS = 5_000;

/** Options of {@link RelistRecheck}. */
export interface RelistRecheckOptions {
  /** The resource as discovered when its cache started. */
  info: ResourceInfo;
  /** Discovery of exactly that GroupVersionResource now; throws when it is not served. */
  discover: () => Promise<ResourceInfo>;
  /**
   * Whether a resource no longer served (or no longer list+watchable) counts as a change. An
   * on-demand cache: yes (the next request caches it anew). A configured cache: no (its LIST
   * answers 404 and the reflector retries, as for a configured CRD not installed yet).
   */
  goneIsChange: boolean;
  /** The action on a change: `change` names it (`scope Namespaced → Cluster`, or the discovery error). */
  onChange: (change: string) => void;
  /** A discovery that failed otherwise (nothing is known; nothing changes). */
  onDiscoveryError?: (err: unknown) => void;
  clock: Clock;
  /** Delay of the second discovery after a relist (ms); default {@link RECHECK_AGAIN_MS}. */
  againMs?: number;
}

/**
 * See the module comment. One discovery at a time; {@link stop} cancels the second one.
 */
export class RelistRecheck {
  readonly #o: RelistRecheckOptions;
  #done = false;
  #running = false;
  #timer: TimerHandle | undefined;

  constructor(o: RelistRecheckOptions) {
    this.#o = o;
  }

  /** After a relist: discovery now and, when unchanged, once more `againMs` later. */
  relisted(): void {
    void this.#check(true);
  }

  /** Discovery once (after an error ended a ListAndWatch attempt). */
  checkOnce(): void {
    void this.#check(false);
  }

  /** No more checks (the cache is stopping). */
  stop(): void {
    this.#done = true;
    if (this.#timer) this.#o.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  async #check(again: boolean): Promise<void> {
    if (this.#done || this.#running) return;
    this.#running = true;
    let change: string | undefined;
    try {
      change = await this.#rediscoveredChange();
    } catch (err) {
      this.#o.onDiscoveryError?.(err);
      return;
    } finally {
      this.#running = false;
    }
    if (this.#done) return;
    if (change !== undefined) {
      this.stop();
      this.#o.onChange(change);
      return;
    }
    if (!again) return;
    if (this.#timer) this.#o.clock.clearTimeout(this.#timer);
    this.#timer = this.#o.clock.setTimeout(() => {
      this.#timer = undefined;
      void this.#check(false);
    }, this.#o.againMs ?? RECHECK_AGAIN_MS);
  }

  /**
   * What changed ({@link resourceChange}: scope, kind, verbs), or with `goneIsChange` the
   * discovery error's message when the resource is not served any more or not list+watchable;
   * undefined when nothing that matters did.
   * @throws what any other failed discovery throws.
   */
  async #rediscoveredChange(): Promise<string | undefined> {
    try {
      return resourceChange(this.#o.info, await this.#o.discover());
    } catch (err) {
      const gone =
        err instanceof DiscoveryError &&
        (err.code === 'KCP_ERR_DISCOVERY_NOT_FOUND' || err.code === 'KCP_ERR_DISCOVERY_NOT_LIST_WATCHABLE');
      if (gone && this.#o.goneIsChange) return err.message;
      throw err;
    }
  }
}
