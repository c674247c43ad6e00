/**
 * Wire bytes the cache serves, built from the upstream's verbatim object bytes without
 * re-encoding and serialized once for every reader (apiserver `storage/cacher/caching_object.go`):
 * LIST bodies (apiserver `endpoints/handlers/responsewriters` streaming collection encoder:
 * built-in items without `kind`/`apiVersion`) and bookmark objects (cacher `cacher.go` bookmark
 * events: an empty object of the kind carrying only the RV, plus the `k8s.io/initial-events-end`
 * annotation for the watch-list end marker). The watch event framing and Go's JSON escaping are
 * wire format: `apimachinery/watch-event.ts`, `apimachinery/go-json.ts`.
 */
import type { MetadataVersion } from '../apimachinery/accept.ts';
import { goJSON } from '../apimachinery/go-json.ts';
import type { ResourceInfo } from '../apimachinery/gvr.ts';
import type { ItemsBody, ListItems } from '../apimachinery/list-items.ts';
import { eventLine } from '../apimachinery/watch-event.ts';
import { metadataLine } from './metadata-view.ts';

/**
 * What the apiserver writes for the zero value of a built-in kind, as observed on kube-apiserver
 * v1.37.2 (Go's encoding/json keeps fields without `omitempty`; conversion from the internal type
 * fills a few defaults): `annotations` it always carries, and the fields after `metadata`. Kinds
 * not listed get `kind`, `apiVersion` and `metadata` only; clients read only the RV and the
 * annotations of a bookmark, so a kind missing here differs cosmetically, never semantically.
 */
interface ZeroShape {
  annotations?: string;
  tail: string;
}

const ZERO: ReadonlyMap<string, ZeroShape> = new Map<string, ZeroShape>([
  ['v1/Pod', { tail: ',"spec":{"containers":null},"status":{}' }],
  ['v1/ConfigMap', { tail: '' }],
  ['v1/Secret', { tail: '' }],
  ['v1/ServiceAccount', { tail: '' }],
  ['v1/Endpoints', { tail: '' }],
  ['v1/Service', { tail: ',"spec":{},"status":{"loadBalancer":{}}' }],
  ['v1/Namespace', { tail: ',"spec":{},"status":{}' }],
  [
    'v1/Event',
    {
      tail: ',"involvedObject":{},"source":{},"firstTimestamp":null,"lastTimestamp":null,"eventTime":null,"reportingComponent":"","reportingInstance":""',
    },
  ],
  [
    'v1/Node',
    {
      tail: ',"spec":{},"status":{"daemonEndpoints":{"kubeletEndpoint":{"Port":0}},"nodeInfo":{"machineID":"","systemUUID":"","bootID":"","kernelVersion":"","osImage":"","containerRuntimeVersion":"","kubeletVersion":"","kubeProxyVersion":"","operatingSystem":"","architecture":""}}',
    },
  ],
  [
    'apps/v1/Deployment',
    {
      tail: ',"spec":{"replicas":0,"selector":null,"template":{"metadata":{},"spec":{"containers":null}},"strategy":{}},"status":{}',
    },
  ],
  [
    'apps/v1/ReplicaSet',
    {
      tail: ',"spec":{"replicas":0,"selector":null,"template":{"metadata":{},"spec":{"containers":null}}},"status":{"replicas":0}',
    },
  ],
  [
    'apps/v1/DaemonSet',
    {
      annotations: '"deprecated.daemonset.template.generation":"0"',
      tail: ',"spec":{"selector":null,"template":{"metadata":{},"spec":{"containers":null}},"updateStrategy":{}},"status":{"currentNumberScheduled":0,"numberMisscheduled":0,"desiredNumberScheduled":0,"numberReady":0}',
    },
  ],
  [
    'apps/v1/StatefulSet',
    {
      tail: ',"spec":{"replicas":0,"selector":null,"template":{"metadata":{},"spec":{"containers":null}},"serviceName":"","updateStrategy":{}},"status":{"replicas":0,"availableReplicas":0}',
    },
  ],
  ['batch/v1/Job', { tail: ',"spec":{"template":{"metadata":{},"spec":{"containers":null}}},"status":{}' }],
  [
    'events.k8s.io/v1/Event',
    {
      tail: ',"eventTime":null,"regarding":{},"deprecatedSource":{},"deprecatedFirstTimestamp":null,"deprecatedLastTimestamp":null',
    },
  ],
  ['discovery.k8s.io/v1/EndpointSlice', { tail: ',"addressType":"","endpoints":null,"ports":null' }],
  ['coordination.k8s.io/v1/Lease', { tail: ',"spec":{}' }],
  [
    'apiextensions.k8s.io/v1/CustomResourceDefinition',
    {
      tail: ',"spec":{"group":"","names":{"plural":"","kind":""},"scope":"","versions":null},"status":{"conditions":null,"acceptedNames":{"plural":"","kind":""},"storedVersions":null}',
    },
  ],
]);

const INITIAL_EVENTS_END = '"k8s.io/initial-events-end":"true"';

/**
 * The object of a BOOKMARK event at `rv` (cacher: `newFunc()` with only the RV set). With
 * `initialEventsEnd`, it carries the `k8s.io/initial-events-end: "true"` annotation that ends a
 * watch-list's initial burst (KEP-3157). Custom resources are unstructured: keys sorted.
 */
export function bookmarkObject(resource: ResourceInfo, rv: bigint, initialEventsEnd: boolean): Buffer {
  const kind = JSON.stringify(resource.kind);
  const apiVersion = JSON.stringify(resource.apiVersion);
  if (!resource.builtIn) {
    const meta = initialEventsEnd
      ? `"annotations":{${INITIAL_EVENTS_END}},"resourceVersion":"${rv}"`
      : `"resourceVersion":"${rv}"`;
    return Buffer.from(`{"apiVersion":${apiVersion},"kind":${kind},"metadata":{${meta}}}`);
  }
  const zero = ZERO.get(`${resource.apiVersion}/${resource.kind}`);
  const annotations = [zero?.annotations, initialEventsEnd ? INITIAL_EVENTS_END : undefined].filter(Boolean);
  const meta = annotations.length > 0 ? `,"annotations":{${annotations.join(',')}}` : '';
  return Buffer.from(
    `{"kind":${kind},"apiVersion":${apiVersion},"metadata":{"resourceVersion":"${rv}"${meta}}${zero?.tail ?? ''}}`,
  );
}

/**
 * Bookmark objects learnt from the upstream: the bytes around the RV of a plain bookmark and of
 * an initial-events-end one. Either may be missing until such a bookmark was seen.
 */
export interface BookmarkShape {
  plain?: readonly [string, string];
  end?: readonly [string, string];
}

/**
 * Learns the bookmark shape of a kind from one upstream bookmark `object` at `rv`: the exact
 * bytes around its RV, with and (when it carried the annotation) without
 * `k8s.io/initial-events-end`. Returns undefined for bytes it cannot take apart safely.
 */
export function learnBookmarkShape(
  resource: ResourceInfo,
  object: Buffer,
  rv: string,
): BookmarkShape | undefined {
  const s = object.toString('utf8');
  const token = `"resourceVersion":"${rv}"`;
  const at = s.indexOf(token);
  if (at < 0 || s.indexOf(token, at + 1) >= 0 || !s.includes(`"kind":${JSON.stringify(resource.kind)}`))
    return undefined;
  const split = (t: string): [string, string] => {
    const i = t.indexOf(token);
    return [`${t.slice(0, i)}"resourceVersion":"`, `"${t.slice(i + token.length)}`];
  };
  const annotation = INITIAL_EVENTS_END;
  const alone = `"annotations":{${annotation}}`;
  let plain: string | undefined;
  if (s.includes(`,${alone}`)) plain = s.replace(`,${alone}`, '');
  else if (s.includes(`${alone},`)) plain = s.replace(`${alone},`, '');
  else if (s.includes(`,${annotation}`)) plain = s.replace(`,${annotation}`, '');
  else if (s.includes(`${annotation},`)) plain = s.replace(`${annotation},`, '');
  if (plain === undefined) return { plain: split(s) };
  return { plain: split(plain), end: split(s) };
}

/**
 * The BOOKMARK event lines of one resource: in the shape learnt from the upstream's own bookmarks
 * when it sent one (byte-identical to the apiserver's), else {@link bookmarkObject}'s. The
 * periodic line is encoded once per RV and shared by every watcher.
 */
export class BookmarkLines {
  readonly #resource: ResourceInfo;
  #shape: BookmarkShape = {};
  #periodic: { rv: bigint; line: Buffer } | undefined;
  #periodicMetadata: { rv: bigint; version: MetadataVersion; line: Buffer } | undefined;

  constructor(resource: ResourceInfo) {
    this.#resource = resource;
  }

  /**
   * Learns the shape from an upstream bookmark `object` at `rv` (see {@link learnBookmarkShape}).
   * Keeps the first shape learnt for each variant (they never change for a kind).
   */
  learn(object: Buffer, rv: string): void {
    if (this.#shape.plain && this.#shape.end) return;
    const shape = learnBookmarkShape(this.#resource, object, rv);
    if (!shape) return;
    this.#shape = { plain: this.#shape.plain ?? shape.plain, end: this.#shape.end ?? shape.end };
    this.#periodic = undefined;
    this.#periodicMetadata = undefined;
  }

  /**
   * The periodic bookmark line at `rv`, encoded once per RV for all watchers (of `metadata`
   * watchers: see {@link line}).
   */
  periodic(rv: bigint, metadata?: MetadataVersion): Buffer {
    if (metadata !== undefined) {
      const p = this.#periodicMetadata;
      if (p?.rv !== rv || p.version !== metadata)
        this.#periodicMetadata = { rv, version: metadata, line: this.line(rv, false, metadata) };
      return this.#periodicMetadata!.line;
    }
    if (this.#periodic?.rv !== rv) this.#periodic = { rv, line: this.line(rv, false) };
    return this.#periodic.line;
  }

  /**
   * A BOOKMARK event line at `rv`; with `initialEventsEnd`, the watch-list end marker. With
   * `metadata`, for a metadata watch: the PartialObjectMetadata of the bookmark object (the
   * apiserver converts bookmarks too: `{"resourceVersion":N,"annotations":{…}}`, checked on v1.37.2).
   */
  line(rv: bigint, initialEventsEnd: boolean, metadata?: MetadataVersion): Buffer {
    const learnt = initialEventsEnd ? this.#shape.end : this.#shape.plain;
    const object = learnt
      ? Buffer.from(`${learnt[0]}${rv}${learnt[1]}`)
      : bookmarkObject(this.#resource, rv, initialEventsEnd);
    return metadata === undefined
      ? eventLine('BOOKMARK', object)
      : metadataLine('BOOKMARK', metadata, object);
  }
}

/**
 * An object's bytes as a LIST item. Built-in kinds lose `kind`/`apiVersion` (the apiserver
 * clears TypeMeta of list items; custom resources keep it). Fast path: the upstream writes them
 * first, so the item is `{` + the bytes after that prefix, no parsing (the store keeps objects in
 * that form: `StoreEntry`). Otherwise the object is re-encoded without them (slow, keeps
 * JSON.stringify's key order; not seen with real apiservers).
 */
export function listItemBytes(resource: ResourceInfo, raw: Buffer): Buffer {
  if (!resource.builtIn) return raw;
  const prefix = listItemPrefix(resource, raw);
  if (prefix) {
    // Kept as long as the object: its own memory, not a slice of a shared pool slab.
    const out = Buffer.allocUnsafeSlow(raw.length - prefix.length + 1);
    out[0] = 0x7b; // '{'
    raw.copy(out, 1, prefix.length);
    return out;
  }
  // Parsed again here only: the store keeps the bytes, not the object.
  const { kind: _k, apiVersion: _a, ...rest } = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
  const json = Buffer.from(JSON.stringify(rest));
  const out = Buffer.allocUnsafeSlow(json.length);
  json.copy(out);
  return out;
}

/**
 * The TypeMeta prefix `{"kind":K,"apiVersion":V,` (one Buffer per resource) when `raw` of a
 * built-in kind starts with it, i.e. when its LIST item is `{` + the bytes after it; else undefined.
 */
export function listItemPrefix(resource: ResourceInfo, raw: Buffer): Buffer | undefined {
  if (!resource.builtIn) return undefined;
  const prefix = typeMetaPrefix(resource);
  return raw.length > prefix.length && raw.subarray(0, prefix.length).equals(prefix) ? prefix : undefined;
}

const prefixCache = new WeakMap<ResourceInfo, Buffer>();

/** `{"kind":K,"apiVersion":V,` of `resource` (one Buffer per resource: callers may compare by identity). */
export function typeMetaPrefix(resource: ResourceInfo): Buffer {
  let p = prefixCache.get(resource);
  if (!p) {
    p = Buffer.from(
      `{"kind":${JSON.stringify(resource.kind)},"apiVersion":${JSON.stringify(resource.apiVersion)},`,
    );
    prefixCache.set(resource, p);
  }
  return p;
}

/** Result of a LIST served from the cache. */
export interface ListResult {
  /** The list's `metadata.resourceVersion` (decimal). */
  resourceVersion: string;
  /**
   * Items as {@link listItemBytes} shapes them (or a metadata read's `metadata` values), in key
   * order (`namespace/name`) like etcd and the btree cache, addressed where they are stored.
   */
  items: ListItems;
  /**
   * The stored entries the items were read from, in the same order: identity keys for caches of
   * what is derived from one object version (the Table rows of `server/serve-table.ts`).
   */
  entries?: readonly object[];
  /** Token for the next page, when a `limit` cut the list. */
  continue?: string;
  /** Items after this page, when known exactly (no selector). */
  remainingItemCount?: number;
  /**
   * A sharded LIST's selector (`shardSelector`, its wire form): a built-in kind's list echoes it
   * as `metadata.shardInfo.selector` (an unstructured list and a PartialObjectMetadataList do not).
   */
  shardInfo?: string;
}

const EMPTY = Buffer.alloc(0);

/**
 * The LIST response body: `{"kind":"PodList","apiVersion":"v1","metadata":
 * {"resourceVersion":"N"},"items":[…]}\n` for built-in kinds; custom resources (unstructured)
 * as `{"apiVersion":…,"items":[…],"kind":"WidgetList","metadata":{"continue":"","resourceVersion":"N"}}\n`.
 * The items are written from where they are (`ItemsBody`: no copy or view made here).
 */
export function encodeList(resource: ResourceInfo, r: ListResult): ItemsBody {
  const rv = JSON.stringify(r.resourceVersion);
  const cont = JSON.stringify(r.continue ?? '');
  const remaining = r.remainingItemCount !== undefined ? `,"remainingItemCount":${r.remainingItemCount}` : '';
  let head: Buffer;
  let tail: Buffer;
  if (resource.builtIn) {
    const shard = r.shardInfo !== undefined ? `,"shardInfo":{"selector":${goJSON(r.shardInfo)}}` : '';
    const meta = `"resourceVersion":${rv}${r.continue ? `,"continue":${cont}` : ''}${remaining}${shard}`;
    head = Buffer.from(
      `{"kind":${JSON.stringify(resource.listKind)},"apiVersion":${JSON.stringify(resource.apiVersion)},"metadata":{${meta}},"items":[`,
    );
    tail = LIST_END;
  } else {
    head = Buffer.from(`{"apiVersion":${JSON.stringify(resource.apiVersion)},"items":[`);
    // Unstructured lists: keys sorted, `continue` always present.
    const meta = `"continue":${cont}${remaining},"resourceVersion":${rv}`;
    tail = Buffer.from(`],"kind":${JSON.stringify(resource.listKind)},"metadata":{${meta}}}\n`);
  }
  return { head, items: r.items, open: EMPTY, close: EMPTY, tail };
}

const LIST_END = Buffer.from(']}\n');
