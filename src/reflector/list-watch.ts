/**
 * Listing and watching one resource upstream over HTTP, client-go's `cache.ListerWatcher`.
 * Exports the {@link ListerWatcher} and {@link WatchStream} contracts, their LIST / WATCH option
 * types, and {@link HttpListerWatcher}, the undici-backed implementation the reflector uses.
 */
import { groupResourceString, groupVersionPath, type ResourceInfo } from '../apimachinery/gvr.ts';
import { isScoped, type ResourceScope, scopeString } from '../apimachinery/resource-scope.ts';
import type { Upstream } from '../upstream/connection.ts';
import { readLines, type StreamingResponse, upstreamGet } from '../upstream/request.ts';
import { UpstreamError } from '../util/errors.ts';
import { type DecodedList, decodeList, decodeWatchLine, type WatchEvent } from './watch-decoder.ts';

/** `metav1.ListOptions` for one LIST page. Empty strings / undefined are not sent. */
export interface ListOptions {
  resourceVersion: string;
  /**
   * Only for the list-kind probe (see {@link HttpListerWatcher}); the reflector lists everything
   * (of its scope: the scope's selectors are added by the lister-watcher).
   */
  fieldSelector?: string;
  resourceVersionMatch?: 'NotOlderThan' | 'Exact';
  /** Page size; 0 or undefined = unpaginated. */
  limit?: number;
  continue?: string;
}

/** `metav1.ListOptions` for a WATCH. */
export interface WatchOptions {
  resourceVersion: string;
  /** Server-side timeout (s); the server closes the stream cleanly after it. */
  timeoutSeconds: number;
  allowWatchBookmarks: boolean;
  /** Watch-list (KEP-3157): synthetic ADDED, then the `k8s.io/initial-events-end` bookmark. */
  sendInitialEvents?: boolean;
  resourceVersionMatch?: 'NotOlderThan';
}

/**
 * An open watch stream. `next()` resolves with the next event, or undefined when the server
 * ended the stream; it rejects on a broken connection or an undecodable line. The same stream
 * can be handed from one consumer to the next (watch-list → live watch): it is not an async
 * iterable on purpose, since leaving a `for await` loop would close it.
 */
export interface WatchStream {
  next(): Promise<WatchEvent | undefined>;
  /** Ends the stream; idempotent. A pending `next()` then settles (undefined or rejection). */
  close(): void;
}

/**
 * What the reflector lists and watches (client-go `cache.ListerWatcher`). Errors: `UpstreamError`
 * for non-2xx answers; network errors as raised by the HTTP client (ECONNREFUSED, …).
 */
export interface ListerWatcher {
  list(opts: ListOptions, signal?: AbortSignal): Promise<DecodedList>;
  /** Resolves once the server accepted the watch (HTTP 200 headers). */
  watch(opts: WatchOptions, signal?: AbortSignal): Promise<WatchStream>;
}

/** The `Warning` header values of an upstream answer (undici gives a repeated header as an array). */
function warningsOf(headers: StreamingResponse['headers']): string[] {
  const w = headers.warning;
  if (w === undefined) return [];
  return Array.isArray(w) ? w : [w];
}

/**
 * The HTTP {@link ListerWatcher} for one resource (all namespaces by default), through the upstream's
 * undici Agent. LIST bodies are decoded with {@link decodeList} (item bytes kept verbatim,
 * kind/apiVersion put back); watch bodies are split line by line as they arrive.
 *
 * It records on the shared {@link ResourceInfo} what only the upstream's answers tell (issue 11):
 * `warnings`, the `Warning` headers of every accepted LIST or WATCH (a deprecated version's
 * warning; the cache sends them with its answers), and `listKind`, the `kind` of a LIST answer.
 * A custom resource's list kind is not in discovery and need not be `${kind}List`; so before the
 * first watch-list of a non-built-in resource, whose stream carries no list kind, one LIST that
 * matches nothing (`resourceVersion=0&fieldSelector=metadata.name=`, answered from the
 * apiserver's watch cache) learns it.
 *
 * A scoped cache (`info.scope`, issue 13) lists and watches with the scope's `fieldSelector` and
 * `labelSelector` on every request (LIST pages, watch-list, watch). The apiserver answers a field
 * its kind does not support with 400 `field label not supported: …`: that is raised as an
 * {@link UpstreamError} whose message names the resource and its scope, the reflector's
 * `lastError` and log line then say which configured scope the apiserver rejected.
 */
export class HttpListerWatcher implements ListerWatcher {
  readonly #up: Upstream;
  readonly #info: ResourceInfo;
  readonly #path: string;
  /** A LIST answer told the list kind (see the class comment). */
  #listKindLearnt = false;
  readonly #scope: ResourceScope | undefined;

  /**
   * `namespace` restricts a namespaced resource to one namespace (an identity that may only
   * read one namespace: `--namespace`, a namespace-restricted on-demand cache; tests); default
   * `info.namespace`, else all namespaces.
   */
  constructor(up: Upstream, info: ResourceInfo, namespace: string | undefined = info.namespace) {
    this.#up = up;
    this.#info = info;
    this.#scope = info.scope;
    const ns = namespace && info.namespaced ? `/namespaces/${encodeURIComponent(namespace)}` : '';
    this.#path = `${groupVersionPath(info.gvr)}${ns}/${info.gvr.resource}`;
  }

  /** The request's selectors: the scope's, plus the list-kind probe's field term. */
  #selectors(extraField?: string): { fieldSelector?: string; labelSelector?: string } {
    const field = [this.#scope?.fieldSelector, extraField].filter((s) => s !== undefined && s !== '');
    return {
      ...(field.length > 0 ? { fieldSelector: field.join(',') } : {}),
      ...(this.#scope?.labelSelector ? { labelSelector: this.#scope.labelSelector } : {}),
    };
  }

  /** A 400 of a scoped request names the scope the apiserver rejected (issue 13). */
  #scopeError(err: unknown): unknown {
    if (!(err instanceof UpstreamError) || err.statusCode !== 400 || !isScoped(this.#scope)) return err;
    const name = groupResourceString(this.#info.gvr);
    return new UpstreamError(
      400,
      `the apiserver rejected the scope of ${name}${scopeString(this.#scope)} (--resources): ${err.message}`,
      err.status,
    );
  }

  async list(opts: ListOptions, signal?: AbortSignal): Promise<DecodedList> {
    let res: Awaited<ReturnType<typeof upstreamGet>>;
    try {
      res = await upstreamGet(
        this.#up,
        this.#path,
        {
          resourceVersion: opts.resourceVersion || undefined,
          resourceVersionMatch: opts.resourceVersionMatch,
          limit: opts.limit ? opts.limit : undefined,
          continue: opts.continue || undefined,
          ...this.#selectors(opts.fieldSelector),
        },
        signal,
      );
    } catch (err) {
      throw this.#scopeError(err);
    }
    const chunks: Buffer[] = [];
    for await (const c of res.body) chunks.push(c);
    const list = decodeList(Buffer.concat(chunks), this.#info.kind, this.#info.apiVersion);
    this.#info.warnings = warningsOf(res.headers);
    if (list.kind) {
      this.#info.listKind = list.kind;
      this.#listKindLearnt = true;
    }
    return list;
  }

  async watch(opts: WatchOptions, signal?: AbortSignal): Promise<WatchStream> {
    if (opts.sendInitialEvents && !this.#info.builtIn && !this.#listKindLearnt) {
      await this.list({ resourceVersion: '0', fieldSelector: 'metadata.name=' }, signal);
    }
    const ac = new AbortController();
    const onAbort = () => ac.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    let res: Awaited<ReturnType<typeof upstreamGet>>;
    try {
      res = await upstreamGet(
        this.#up,
        this.#path,
        {
          watch: 1,
          resourceVersion: opts.resourceVersion || undefined,
          resourceVersionMatch: opts.resourceVersionMatch,
          sendInitialEvents: opts.sendInitialEvents ? true : undefined,
          allowWatchBookmarks: opts.allowWatchBookmarks ? true : undefined,
          timeoutSeconds: opts.timeoutSeconds,
          ...this.#selectors(),
        },
        ac.signal,
        undefined,
        this.#up.watchEncoding ?? 'identity',
      );
    } catch (err) {
      signal?.removeEventListener('abort', onAbort);
      throw this.#scopeError(err);
    }
    this.#info.warnings = warningsOf(res.headers);
    const lines = readLines(res.body);
    let closed = false;
    return {
      async next() {
        if (closed) return undefined;
        const r = await lines.next();
        if (r.done) {
          closed = true;
          signal?.removeEventListener('abort', onAbort);
          return undefined;
        }
        return decodeWatchLine(r.value);
      },
      close() {
        if (closed) return;
        closed = true;
        signal?.removeEventListener('abort', onAbort);
        ac.abort(new Error('watch closed by client'));
        res.body.destroy();
      },
    };
  }
}
