/**
 * What every cache handler shares (`serve-read.ts`, `serve-watch.ts`): the {@link ServeContext}
 * built once by `app.ts`, the decoding of a request's list options and selectors against a
 * cache, and the headers of an answer from the cache (JSON, plus the apiserver's `Warning`s for
 * the resource).
 */

import type { ServerResponse } from 'node:http';
import type { ResourceInfo } from '../apimachinery/gvr.ts';
import { parseListOptions } from '../apimachinery/list-options.ts';
import type { ResourceRequest } from '../apimachinery/request-info.ts';
import type { TablePrinter } from '../printers/table-types.ts';
import type { Clock } from '../util/clock.ts';
import type { Logger } from '../util/logger.ts';
import type { CacheCodec, FieldSelector, LabelSelector, ServedCache } from './cache-api.ts';
import type { UpstreamReason } from './delegate.ts';
import type { Limiter } from './limiter.ts';
import type { WriteTracker } from './read-your-writes/write-tracker.ts';
import type { ShardSupport } from './shard-support.ts';

/** Everything a cache handler needs besides the request. */
export interface ServeContext {
  codec: CacheCodec;
  writes: WriteTracker;
  /**
   * `cache`: RV="" reads from the cache when live and read-your-writes holds; `proven`: also once
   * the cache is proven at the upstream's current revision; `upstream`: always forwarded.
   */
  consistentReads: 'cache' | 'proven' | 'upstream';
  /** `--response-compression=gzip`: LIST and GET answers above 128 KiB gzip-compressed for clients that accept it. */
  gzip: boolean;
  /**
   * `--protobuf-answers=cache` (the default): clients whose Accept the apiserver would answer in
   * protobuf are answered protobuf from the cache (`protobuf-answers.ts`); false (`json`): the
   * JSON they also accept, else upstream.
   */
  protobuf: boolean;
  /**
   * The upstream apiserver's `gitVersion` as last checked (undefined: not known yet). When given,
   * protobuf answers are declined (`protobuf-version`) unless its minor version is the schema
   * table's; when absent (tests without an upstream check) the table is trusted.
   */
  upstreamVersion?: () => string | undefined;
  /** How long a read waits for the cache to catch up before forwarding (ms, default 3 s). */
  freshnessWaitMs: number;
  /** How long a request for an unsynced resource waits before forwarding (ms). */
  syncWaitMs: number;
  /**
   * The apiserver's `--min-request-timeout` (ms, default 1800 s): a watch without
   * `timeoutSeconds` lasts a uniformly random duration in [min, 2·min) (`handlers/get.go`).
   */
  minRequestTimeoutMs: number;
  clock: Clock;
  random: () => number;
  watchers: Limiter;
  /** Registers a function that ends the watch cleanly at shutdown; returns its unregister. */
  trackWatch: (end: () => void) => () => void;
  /** Whether each resource's upstream honours `shardSelector` (absent: always unknown, passed upstream). */
  shardSupport?: ShardSupport;
  /**
   * The Table printer of a cached resource (`table-printers.ts`: custom resources read their
   * CRD from the cache); absent: the built-in kinds' only.
   */
  tablePrinter?: (resource: ResourceInfo) => TablePrinter | undefined;
  /**
   * Where a handler logs what ends an answer it already started or answers an error of its own
   * (a Table printer that failed, a watch event that could not be encoded); absent: not logged.
   */
  log?: Logger;
  /** Called after every wait for freshness: seconds waited, and whether the cache caught up. */
  onReadWait?: (cache: ServedCache, seconds: number, result: 'fresh' | 'timeout') => void;
}

/**
 * A handler answering one read from `cache` (`serve-read.ts`, `serve-watch.ts`): resolves
 * undefined once it answered, or the {@link UpstreamReason} the request must be passed upstream
 * with (nothing has been written to `res` then). `signal` aborts its waits when the client left.
 */
export type CacheHandler = (
  cache: ServedCache,
  info: ResourceRequest,
  query: URLSearchParams,
  res: ServerResponse,
  ctx: ServeContext,
  signal: AbortSignal,
) => Promise<UpstreamReason | undefined>;

const JSON_HEADERS = { 'content-type': 'application/json', 'cache-control': 'no-cache, private' };

/** Message of the apiserver's max-in-flight 429 (`filters/maxinflight.go`). */
export const TOO_MANY_REQUESTS = 'Too many requests, please try again later.';

/** The parsed selectors of a request. */
export interface Selectors {
  label: LabelSelector;
  field: FieldSelector | undefined;
}

/**
 * The list options of `query` (the apiserver's parsing, `list-options.ts`) and its selectors
 * parsed by the cache's codec; `field` undefined: a field selector the cache cannot evaluate.
 */
export function decodeWithSelectors(query: URLSearchParams, cache: ServedCache, codec: CacheCodec) {
  const sel: Selectors = { label: undefined, field: undefined };
  // With the upstream's WatchList gate off, `sendInitialEvents` is a 422 and a watch at RV
  // ""/"0" is not defaulted to a watch-list (issue 11 item 8: follow what the reflector saw).
  const watchList = cache.resource.watchList !== false;
  const opts = parseListOptions(
    query,
    (o) => {
      sel.label = codec.parseLabelSelector(o.labelSelector);
      sel.field = codec.parseFieldSelector(o.fieldSelector, cache.resource);
    },
    watchList,
  );
  return { opts, sel };
}

/**
 * The response headers of a cache-served answer: JSON, plus the `Warning` headers the apiserver
 * sent for this resource (a deprecated version's warning; issue 11 item 7).
 */
export function headersFor(
  cache: ServedCache,
  extra: Record<string, string | number>,
): Record<string, string | number | string[]> {
  const h: Record<string, string | number | string[]> = { ...JSON_HEADERS, ...extra };
  const warnings = cache.resource.warnings;
  if (warnings && warnings.length > 0) h.warning = [...warnings];
  return h;
}
