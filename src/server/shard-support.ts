/**
 * `shardSelector` (KEP-5866, the ShardedListAndWatch feature gate) answered from the cache as
 * the upstream answers it. With the gate on, the apiserver parses the selector
 * (`apimachinery/shard-selector.ts`), keeps the objects of the shard and echoes the selector in
 * a built-in list's `metadata.shardInfo`; an invalid selector is its 500 `invalid shard
 * selector: …`. With the gate off it ignores the parameter. The proxy learns which, once per
 * cached resource, with a probe: a `limit=1` LIST with the selector `x` (invalid). The gate's
 * 500 `invalid shard selector: …` means honoured, a 200 ignored; anything else (a 403, a
 * network error) leaves it unknown, probed again after {@link RETRY_MS}. Until known, a
 * request with `shardSelector` goes upstream (`shard-support-unknown`).
 */

import { groupVersionPath } from '../apimachinery/gvr.ts';
import { parseShardSelector, type ShardSelector } from '../apimachinery/shard-selector.ts';
import { unknownError } from '../apimachinery/status.ts';
import { request } from '../upstream/undici-core.ts';
import type { ServedCache } from './cache-api.ts';
import type { UpstreamReason } from './delegate.ts';
import type { UpstreamTarget } from './upstream-target.ts';

/** Whether an upstream applies `shardSelector`. */
export type ShardSupportState = 'honoured' | 'ignored';

/** Probes one resource's upstream at `path` (a collection path): the state, or undefined (unknown). */
export type ShardProbe = (path: string) => Promise<ShardSupportState | undefined>;

/** How long a failed probe waits before the next request may probe again. */
export const RETRY_MS = 30_000;

/** The per-resource knowledge of whether the upstream honours `shardSelector`. */
export class ShardSupport {
  readonly #probe: ShardProbe;
  readonly #now: () => number;
  readonly #known = new WeakMap<ServedCache, ShardSupportState>();
  readonly #probing = new WeakMap<ServedCache, Promise<void>>();
  readonly #failedAt = new WeakMap<ServedCache, number>();

  constructor(probe: ShardProbe, now: () => number = Date.now) {
    this.#probe = probe;
    this.#now = now;
  }

  /**
   * What the upstream of `cache` does with `shardSelector`; undefined while unknown, when a probe
   * (at `path`, the request's collection path: the proxy may list there) is started unless one
   * is under way or failed less than {@link RETRY_MS} ago.
   */
  state(cache: ServedCache, path: string): ShardSupportState | undefined {
    const known = this.#known.get(cache);
    if (known) return known;
    if (this.#probing.has(cache)) return undefined;
    const failed = this.#failedAt.get(cache);
    if (failed !== undefined && this.#now() - failed < RETRY_MS) return undefined;
    const p = this.#probe(path)
      .catch(() => undefined)
      .then((state) => {
        if (state) this.learn(cache, state);
        else this.#failedAt.set(cache, this.#now());
        this.#probing.delete(cache);
      });
    this.#probing.set(cache, p);
    return undefined;
  }

  /** Records what the upstream of `cache` does (a probe's answer; tests). */
  learn(cache: ServedCache, state: ShardSupportState): void {
    this.#known.set(cache, state);
  }

  /** Resolves once the probe of `cache` in flight (if any) ended (tests). */
  async settled(cache: ServedCache): Promise<void> {
    await this.#probing.get(cache);
  }
}

/** The collection path of a request: `/api/v1/namespaces/NS/pods`, `/apis/G/V/R`. */
export function collectionPath(cache: ServedCache, namespace: string | undefined): string {
  const { gvr } = cache.resource;
  const ns = namespace !== undefined ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  return `${groupVersionPath(gvr)}${ns}/${gvr.resource}`;
}

/** The probe's selector: invalid (an identifier), so a gate-on apiserver answers its error at once. */
const PROBE_SELECTOR = 'x';
/** The message prefix of the apiserver's invalid-selector error (registry `store.go`). */
const INVALID_PREFIX = 'invalid shard selector: ';

/** A {@link ShardProbe} asking `upstream` with the proxy's own credentials. */
export function upstreamShardProbe(upstream: UpstreamTarget): ShardProbe {
  return async (path) => {
    const url = new URL(upstream.server);
    url.pathname = `${url.pathname.replace(/\/$/, '')}${path}`;
    url.search = `limit=1&shardSelector=${PROBE_SELECTOR}`;
    const auth = await upstream.authorization();
    const headers: Record<string, string> = { accept: 'application/json' };
    if (auth) headers.authorization = auth;
    const r = await request(url.toString(), {
      dispatcher: upstream.dispatcher,
      headers,
      signal: AbortSignal.timeout(10_000),
    });
    const body = await r.body.text();
    if (r.statusCode === 200) return 'ignored';
    if (r.statusCode >= 400) {
      const message = (JSON.parse(body) as { message?: unknown }).message;
      if (typeof message === 'string' && message.startsWith(INVALID_PREFIX)) return 'honoured';
    }
    return undefined;
  };
}

/**
 * The shard a LIST or WATCH from `cache` asks for: `{}` for none (no parameter, an empty one,
 * or an upstream that ignores it), the parsed selector, or the reason to pass it upstream.
 * @throws StatusError the apiserver's 500 for an invalid selector.
 */
export function shardRead(
  query: URLSearchParams,
  cache: ServedCache,
  namespace: string | undefined,
  support: ShardSupport | undefined,
): { selector?: ShardSelector } | UpstreamReason {
  // ListOptions takes the first value; an empty one is no sharding (`options.ShardSelector != ""`).
  const value = query.get('shardSelector');
  if (value === null || value === '') return {};
  const state = support?.state(cache, collectionPath(cache, namespace));
  if (state === undefined) return 'shard-support-unknown';
  if (state === 'ignored') return {};
  const p = parseShardSelector(value);
  if (p === undefined) return 'shard-selector-unparsed';
  if ('error' in p) throw unknownError(`${INVALID_PREFIX}${p.error}`);
  return { selector: p.selector };
}
