/**
 * LIST and GET answered from the watch cache with the apiserver's resourceVersion semantics
 * (docs/design.md §3 serving table). `delegate.ts` decides which read a request asks for;
 * `read-your-writes/consistent-read.ts` waits (bounded) until the cache may serve it. Each
 * handler returns the {@link UpstreamReason} when the request must be passed upstream instead
 * (nothing has been written to the response then), undefined when it answered.
 */
import type { ServerResponse } from 'node:http';
import { type ItemsBody, itemsBodyChunks } from '../apimachinery/list-items.ts';
import { CannotEncode } from '../apimachinery/protobuf/encode-object.ts';
import { isScoped } from '../apimachinery/resource-scope.ts';
import { notFound, StatusError } from '../apimachinery/status.ts';
import type { ListPage, ServedCache } from './cache-api.ts';
import { acceptsGzip, GZIP_THRESHOLD_BYTES, writeGzip } from './compress.ts';
import { getRead, indentedJson, listRead } from './delegate.ts';
import { chunksBody, type FilledBody, itemsBody, writeFilled } from './filled-body.ts';
import { indentedBody } from './indented-body.ts';
import {
  answerEncoding,
  jsonFallback,
  PROTOBUF_HEADERS,
  protobufAnswers,
  protobufGet,
  protobufList,
} from './protobuf-answers.ts';
import { readable } from './read-your-writes/consistent-read.ts';
import { type CacheHandler, decodeWithSelectors, headersFor, type ServeContext } from './serve-context.ts';
import { askedTable, printedTable, tableGet, tableList } from './serve-table.ts';
import { shardRead } from './shard-support.ts';

/** Answers of more chunks than this are copied into batches (`filled-body.ts`) rather than corked. */
const CORKED_CHUNKS = 16;

/**
 * A 200 answer of `chunks` (or a {@link FilledBody}: a LIST copied from its items where the store
 * keeps them, a protobuf LIST from its kept pieces): gzip-compressed like the apiserver's (`compress.ts`) when `--response-compression=gzip`,
 * the client accepts gzip and the body exceeds 128 KiB; else identity with its length, a few
 * chunks as one corked writev, more (a LIST's items) copied into two reused batch buffers
 * (`filled-body.ts`). A corked writev of 20,000 item views cost more CPU than copying the bytes
 * (Node's write path per chunk) and more RSS (a loopback test of eight 54 MB LISTs: 444 against
 * 317 ms of CPU, 141 against 126 MiB of RSS after a GC; the buffered write requests and views are
 * promoted to V8's old space): issue 32's memory goal. A LIST of more than a few items has no
 * view per item at all (`listBody`): the views, ~15 MiB of old space per 100,000 items and LIST
 * until a major GC, were most of the RSS a LIST left behind.
 */
function writeChunks(
  res: ServerResponse,
  cache: ServedCache,
  chunks: readonly Buffer[] | FilledBody,
  ctx: ServeContext,
  type: Record<string, string> = {},
): Promise<void> | undefined {
  const filled = !Array.isArray(chunks) ? (chunks as FilledBody) : undefined;
  let len = 0;
  if (filled) len = filled.length;
  else for (const c of chunks as readonly Buffer[]) len += c.length;
  // A gzip or batched answer resolves once written: the caller awaits it in its slot.
  if (ctx.gzip && len > GZIP_THRESHOLD_BYTES && acceptsGzip(res.req.headers['accept-encoding']))
    return writeGzip(res, headersFor(cache, type), chunks);
  const list = chunks as readonly Buffer[];
  if (filled || list.length > CORKED_CHUNKS) {
    // Awaited, as a gzip answer: the request keeps its `--max-inflight` slot until the answer is
    // written (or the client left), so clients that do not read hold at most that many answers'
    // two batches (256 KiB each); the corked views of before pinned only the store's own bytes.
    return writeFilled(res, headersFor(cache, type), filled ?? chunksBody(list));
  }
  res.writeHead(200, headersFor(cache, { 'content-length': len, ...type }));
  res.cork();
  for (const c of list) res.write(c);
  res.uncork();
  res.end();
  return undefined;
}

/**
 * A LIST body to write: a few items as chunks (views of them, written corked by
 * {@link writeChunks}), more copied from where they are stored (`itemsBody`: no view per item);
 * indented ({@link jsonBody}) from views of its items, the rare case that takes them.
 */
function listBody(body: ItemsBody, res: ServerResponse): readonly Buffer[] | FilledBody {
  if (indentedJson(res.req.url, res.req.headers)) return indentedBody(itemsBodyChunks(body));
  return body.items.length <= CORKED_CHUNKS ? itemsBodyChunks(body) : itemsBody(body);
}

/**
 * LIST from the cache; the reason when it must go upstream instead. For a scoped cache
 * `delegate` already checked that the request's selectors contain the scope's requirements; the
 * request's full selectors are applied as for any cache.
 */
export const serveList: CacheHandler = async (cache, info, query, res, ctx, signal) => {
  const { opts, sel } = decodeWithSelectors(query, cache, ctx.codec);
  if (sel.field === undefined) return 'field-selector-unknown';
  const shard = shardRead(query, cache, info.namespace, ctx.shardSupport);
  if (typeof shard === 'string') return shard;
  const read = listRead(opts, ctx.codec);
  if (typeof read === 'string') return read;
  const notReadable = await readable(cache, info, read, ctx, signal);
  if (notReadable) return notReadable;
  // An RV etcd has compacted: the apiserver answers 410 (docs/design.md §3, compaction).
  const exactRV = read.mode === 'exact' ? read.rv : read.mode === 'continue' ? read.from.rv : undefined;
  if (exactRV !== undefined && (await cache.compactedAt?.(exactRV, signal)))
    return signal.aborted ? 'aborted' : 'compacted';
  const enc = answerEncoding(res.req.headers, protobufAnswers(ctx), cache.resource);
  if (typeof enc === 'string') return enc;
  const { metadata } = enc;
  let result: ListPage;
  try {
    const q: Parameters<ServedCache['list']>[0] = { labelSelector: sel.label, fieldSelector: sel.field };
    if (info.namespace !== undefined) q.namespace = info.namespace;
    if (shard.selector) q.shardSelector = shard.selector;
    if (read.mode === 'exact') q.exactRV = read.rv;
    if (read.limit > 0) q.limit = read.limit;
    if (read.mode === 'continue') q.continueFrom = read.from;
    if (metadata !== undefined) q.metadata = metadata;
    result = cache.list(q);
  } catch (err) {
    // Outside the window: etcd may still have that RV; the apiserver answers for itself.
    if (err instanceof StatusError && err.code === 410) {
      if (read.mode === 'exact') return 'exact-outside-window';
      if (read.mode === 'continue') return 'continue-outside-window';
    }
    throw err;
  }
  if (signal.aborted) return undefined;
  if (enc.encoding === 'protobuf') {
    const chunks = inexact(() => protobufList(cache.resource, result, metadata));
    if (chunks) {
      await writeChunks(res, cache, chunks, ctx, PROTOBUF_HEADERS);
      return undefined;
    }
    // Not exact in protobuf: JSON when the client takes it, else the apiserver answers.
    if (!jsonFallback(res.req.headers, cache.resource, metadata)) return 'protobuf-inexact';
  }
  const table = askedTable(res.req.headers, query, cache.resource, ctx.tablePrinter);
  if (table === 'table-printer') return table;
  const body = table
    ? printedTable(() => tableList(cache, result, table, ctx.clock.now()), res, cache.resource, ctx)
    : undefined;
  // No body: a printer failed and its error was answered.
  if (table && !body) return undefined;
  const items = body
    ? jsonBody(body, res)
    : listBody(ctx.codec.encodeList(cache.resource, result, metadata), res);
  await writeChunks(res, cache, items, ctx);
  return undefined;
};

/**
 * GET of one object from the cache; the reason when it must go upstream instead. A scoped cache
 * answers only the objects it holds: for any other name it cannot prove a 404 (`outside-scope`).
 */
export const serveGet: CacheHandler = async (cache, info, query, res, ctx, signal) => {
  const read = getRead(query.get('resourceVersion') ?? '');
  if (typeof read === 'string') return read;
  const enc = answerEncoding(res.req.headers, protobufAnswers(ctx), cache.resource);
  if (typeof enc === 'string') return enc;
  const notReadable = await readable(cache, info, read, ctx, signal);
  if (notReadable) return notReadable;
  const name = info.name!;
  const obj = cache.get(cache.resource.namespaced ? info.namespace : undefined, name);
  // A scoped cache holds only its scope: an object it lacks may exist outside it.
  if (!obj && isScoped(cache.resource.scope)) return 'outside-scope';
  if (!obj) throw notFound(cache.resource.gvr.group, cache.resource.gvr.resource, name);
  if (signal.aborted) return undefined;
  const m = enc.metadata;
  if (enc.encoding === 'protobuf') {
    const body = inexact(() => protobufGet(cache.resource, obj.wire, m, obj));
    if (body) {
      await writeChunks(res, cache, [body], ctx, PROTOBUF_HEADERS);
      return undefined;
    }
    if (!jsonFallback(res.req.headers, cache.resource, m)) return 'protobuf-inexact';
  }
  const table = askedTable(res.req.headers, query, cache.resource, ctx.tablePrinter);
  if (table === 'table-printer') return table;
  const body = table
    ? printedTable(() => tableGet(obj, table, ctx.clock.now()), res, cache.resource, ctx, name)
    : m
      ? obj.metadataWire(m)
      : [...obj.wire, NEWLINE];
  if (body) await writeChunks(res, cache, jsonBody(body, res), ctx);
  return undefined;
};

/**
 * A LIST's or GET's JSON answer (`compact`, as the compact serializer writes it), indented when
 * the apiserver would indent it (`indentedJson`: `pretty=true`, a curl/Wget/browser User-Agent,
 * the Accept clause's `pretty=1`).
 */
function jsonBody(compact: readonly Buffer[], res: ServerResponse): readonly Buffer[] | FilledBody {
  return indentedJson(res.req.url, res.req.headers) ? indentedBody(compact) : compact;
}

/** `encode()`'s result, or undefined when the encoder cannot be exact (`CannotEncode`). */
function inexact<T>(encode: () => T): T | undefined {
  try {
    return encode();
  } catch (err) {
    if (err instanceof CannotEncode) return undefined;
    throw err;
  }
}

/** The apiserver's JSON serializer ends a GET answer with a newline (Go `json.Encoder.Encode`). */
const NEWLINE = Buffer.from('\n');
