/**
 * What the server needs from the watch cache (`src/cache/watch-cache.ts`, `selectors.ts`),
 * declared structurally so that `server/` depends on the contract, not on the implementation,
 * and unit tests can serve routes from a small fake. The real `WatchCache` satisfies
 * {@link ServedCache}; `main.ts` passes the real selector parsers and list encoder as
 * {@link CacheCodec}.
 */
import type { Readable } from 'node:stream';
import type { MetadataVersion } from '../apimachinery/accept.ts';
import type { ResourceInfo } from '../apimachinery/gvr.ts';
import type { ItemsBody, ListItems } from '../apimachinery/list-items.ts';
import type { ShardSelector } from '../apimachinery/shard-selector.ts';

/** A parsed label selector; opaque to the server. */
export type LabelSelector = unknown;
/** A parsed field selector; opaque to the server. */
export type FieldSelector = unknown;

/** One open watch on the cache. `stream` yields wire lines `{"type":…,"object":…}\n`. */
export interface CacheWatch {
  readonly stream: Readable;
  close(): void;
  readonly closed: boolean;
  /** Why it closed (the cache's `CloseReason`, e.g. 'overflow'); undefined while open. */
  readonly closeReason?: string | undefined;
}

/** A decoded `continue` token: the snapshot RV and the (relative) key to start at. */
export interface ContinueFrom {
  rv: bigint;
  start: string;
}

/** One LIST answer: items, and for a page the token continuing it. */
export interface ListPage {
  resourceVersion: string;
  /** Its items, addressed where they are stored (no Buffer per item: `ListItems.locate`). */
  items: ListItems;
  /** Optional: the cached objects the items were read from (same order): identity keys for per-object caches. */
  entries?: readonly object[];
  continue?: string;
  remainingItemCount?: number;
  /** A sharded LIST's selector, echoed as `metadata.shardInfo` (`encodeList`). */
  shardInfo?: string;
}

/** One cached object as a GET answer. */
export interface CachedObject {
  /** The metadata the cache keeps (uid: is it still the same incarnation?). */
  readonly object: { readonly metadata: { readonly uid?: string } };
  /** The object's bytes WITH kind and apiVersion, byte for byte the upstream's, as chunks to write in order. */
  readonly wire: readonly Buffer[];
  /** The object as a LIST item (the same bytes for the same object version: kept protobuf messages point into them). */
  readonly listItem?: Buffer;
  /** The object as a PartialObjectMetadata GET answer in `meta.k8s.io/<version>` (ends with `\n`), as chunks. */
  metadataWire(version: MetadataVersion): readonly Buffer[];
}

/** The watch cache of one resource, as served by the server. */
export interface ServedCache {
  readonly resource: ResourceInfo;
  isSynced(): boolean;
  /** Resolves true once synced, false after `timeoutMs` (or when `signal` aborts). */
  waitSynced(timeoutMs: number, signal?: AbortSignal): Promise<boolean>;
  /** The upstream stream is proven live (event or bookmark within the liveness window). */
  isLive(): boolean;
  resourceVersion(): bigint;
  /** Resolves true once the cache RV ≥ `rv`, false after `timeoutMs`. */
  waitUntilFresh(rv: bigint, timeoutMs: number, signal?: AbortSignal): Promise<boolean>;
  /**
   * A snapshot (at `exactRV`, or at a continue token's RV), optionally one page of `limit` items.
   * @throws StatusError 410 when that RV is outside the history window.
   */
  list(q: {
    namespace?: string;
    labelSelector: LabelSelector;
    fieldSelector: FieldSelector;
    /** `shardSelector` (upstream honours it): the objects of that shard only. */
    shardSelector?: ShardSelector;
    exactRV?: bigint;
    limit?: number;
    continueFrom?: ContinueFrom;
    /** A PartialObjectMetadataList read: `items` are the objects' `metadata` values. */
    metadata?: MetadataVersion;
  }): ListPage;
  get(namespace: string | undefined, name: string): CachedObject | undefined;
  /**
   * Optional: before a watch resuming at `rv` below the window, try to make it resumable by
   * asking the upstream (the cache's `extendWindowBack`); resolves true when `rv` is in the window.
   */
  extendWindowBack?(rv: bigint, signal?: AbortSignal): Promise<boolean>;
  /**
   * Optional: the upstream's current revision (etcd's), learnt by one request sent after the
   * call (shared by concurrent callers); undefined when it could not be learnt.
   */
  upstreamRevision?(signal?: AbortSignal): Promise<bigint | undefined>;
  /**
   * Optional: whether the upstream has compacted `rv` (the cache's compaction floor): an Exact
   * or continue read at it goes upstream, which answers 410. May wait (bounded) for one upstream
   * probe when the floor is stale; never rejects.
   */
  compactedAt?(rv: bigint, signal?: AbortSignal): Promise<boolean>;
  /** Optional: true when the upstream shows no event of the resource in (from, to]. */
  proveNoEventsBetween?(from: bigint, to: bigint, signal?: AbortSignal): Promise<boolean>;
  watch(q: {
    namespace?: string;
    labelSelector: LabelSelector;
    fieldSelector: FieldSelector;
    /** `shardSelector` (upstream honours it): the objects of that shard only. */
    shardSelector?: ShardSelector;
    resourceVersion?: bigint;
    sendInitialEvents?: boolean;
    allowWatchBookmarks?: boolean;
    /** The watch's duration, ms: the cache sends a bookmark 2 s before it (apiserver cache_watcher.go). */
    timeoutMs?: number;
    /** A metadata watch: every event carries a PartialObjectMetadata in `meta.k8s.io/<version>`. */
    metadata?: MetadataVersion;
  }): CacheWatch;
}

/** The cache's selector parsers and LIST encoder. */
export interface CacheCodec {
  /** @throws StatusError 400 with the apiserver's message. */
  parseLabelSelector(s: string): LabelSelector;
  /** undefined = the cache cannot evaluate it (unknown field): pass upstream. @throws StatusError 400 */
  parseFieldSelector(s: string, resource: ResourceInfo): FieldSelector | undefined;
  /**
   * The LIST body (`{"kind":"PodList",…,"items":[…]}`) around its items; with `metadata`, the
   * PartialObjectMetadataList of a `metadata` read's page (its items: `metadata` values).
   */
  encodeList(resource: ResourceInfo, r: ListPage, metadata?: MetadataVersion): ItemsBody;
  /**
   * Decodes a `continue` token as the apiserver does (tokens are interchangeable with its own).
   * undefined = malformed in a way only the apiserver words exactly: pass upstream.
   * @throws StatusError 400 with the apiserver's message.
   */
  decodeContinue(token: string): ContinueFrom | undefined;
}
