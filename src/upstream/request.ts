/**
 * Plain HTTP GETs to the upstream apiserver over its undici dispatcher.
 * Exports {@link upstreamUrl}, {@link upstreamGet} (streaming, gzip decoded as it arrives),
 * {@link upstreamGetBuffer} (whole body) and {@link readLines}, which splits a watch body into
 * lines without buffering it; gzip handling follows the apiserver's `endpoints/handlers/responsewriters`.
 */
import { pipeline } from 'node:stream';
import { constants, createGunzip } from 'node:zlib';
import { ConnectionRefusedError, UpstreamError } from '../util/errors.ts';
import { isConnectionRefused } from './api-errors.ts';
import type { Upstream } from './connection.ts';
import { request } from './undici-core.ts';

/** Query parameters; `undefined` values are omitted. */
export type Query = Record<string, string | number | boolean | undefined>;

/** An upstream response whose body has not been read yet. */
export interface StreamingResponse {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  body: AsyncIterable<Buffer> & { destroy(err?: Error): void };
}

/** Builds `baseUrl + path + ?query`. */
export function upstreamUrl(up: Pick<Upstream, 'baseUrl'>, path: string, query: Query = {}): string {
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined) qs.set(k, String(v));
  const s = qs.toString();
  return `${up.baseUrl}${path}${s ? `?${s}` : ''}`;
}

/**
 * The response body as the apiserver meant it: as received for identity, gunzipped as a stream
 * for `Content-Encoding: gzip` (docs/design.md §2). The apiserver gzips a LIST answer above
 * 128 KiB as one member and, since 1.37 (`WatchListCompression`), a watch stream as one gzip
 * member per flush (k8s.io/apiserver/pkg/endpoints/handlers/responsewriters); node:zlib's Gunzip
 * reads concatenated members (RFC 1952 §2.2), the WHATWG DecompressionStream stops after the
 * first. `Z_SYNC_FLUSH` hands out every byte decodable so far, so a watch event is not held
 * back waiting for more input. Destroying the returned stream destroys the socket's body too.
 * Throws {@link UpstreamError} (with the answer's status) for an encoding it did not ask for.
 */
function decodedBody(res: Awaited<ReturnType<typeof request>>, what: string): StreamingResponse['body'] {
  const raw = res.headers['content-encoding'];
  const enc = (Array.isArray(raw) ? raw.join(',') : (raw ?? '')).trim().toLowerCase();
  if (enc === '' || enc === 'identity') return res.body;
  if (enc !== 'gzip') {
    res.body.on('error', () => {}).destroy();
    throw new UpstreamError(res.statusCode, `${what}: unexpected Content-Encoding "${enc}"`);
  }
  const gunzip = createGunzip({ flush: constants.Z_SYNC_FLUSH });
  // Errors reach the reader through `gunzip` (pipeline destroys both streams on any error).
  pipeline(res.body, gunzip, () => {});
  return gunzip;
}

/**
 * GET `path` upstream asking for JSON, gzip-encoded if the apiserver wants to (as client-go's
 * transport asks; the body is gunzipped as it arrives, see {@link decodedBody}). Resolves once
 * headers arrive; a non-2xx answer is read (bounded to 64 KiB) and thrown as
 * {@link UpstreamError}. A refused connection is thrown as {@link ConnectionRefusedError} (same
 * message, undici's error as `cause`); other network errors as undici raises them. `signal`
 * aborts the request and its body. `accept` replaces the `Accept` header (aggregated discovery
 * asks for `APIGroupDiscoveryList` first); `acceptEncoding` `identity` asks for a plain body
 * (the reflectors' watches, {@link Upstream.watchEncoding}).
 */
export async function upstreamGet(
  up: Upstream,
  path: string,
  query: Query = {},
  signal?: AbortSignal,
  accept = 'application/json',
  acceptEncoding: 'gzip' | 'identity' = 'gzip',
): Promise<StreamingResponse> {
  const headers: Record<string, string> = { accept, 'accept-encoding': acceptEncoding };
  const auth = await up.authorization();
  if (auth) headers.authorization = auth;
  let res: Awaited<ReturnType<typeof request>>;
  try {
    res = await request(upstreamUrl(up, path, query), {
      method: 'GET',
      headers,
      dispatcher: up.dispatcher,
      ...(signal ? { signal } : {}),
    });
  } catch (err) {
    if (isConnectionRefused(err)) throw new ConnectionRefusedError((err as Error).message, { cause: err });
    throw err;
  }
  const body = decodedBody(res, `GET ${path}`);
  if (res.statusCode < 200 || res.statusCode >= 300) {
    const text = await readBounded(body, 64 * 1024);
    throw UpstreamError.fromBody(res.statusCode, text, `GET ${path}`);
  }
  return { statusCode: res.statusCode, headers: res.headers, body };
}

/** GET and read the whole body (discovery, LIST pages). Errors and `accept` as {@link upstreamGet}. */
export async function upstreamGetBuffer(
  up: Upstream,
  path: string,
  query: Query = {},
  signal?: AbortSignal,
  accept?: string,
): Promise<Buffer> {
  const res = await upstreamGet(up, path, query, signal, accept);
  const chunks: Buffer[] = [];
  for await (const c of res.body) chunks.push(c);
  return Buffer.concat(chunks);
}

async function readBounded(body: AsyncIterable<Buffer>, max: number): Promise<string> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const c of body) {
    if (n < max) chunks.push(c);
    n += c.length;
  }
  return Buffer.concat(chunks).subarray(0, max).toString('utf8');
}

/**
 * Splits a byte stream into lines (without the `\n`), holding at most one partial line in
 * memory: a watch body is never buffered whole. Empty lines are skipped.
 */
export async function* readLines(body: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  let pending: Buffer[] = [];
  for await (const chunk of body) {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(0x0a, start);
      if (nl < 0) break;
      let line = chunk.subarray(start, nl);
      if (pending.length > 0) {
        pending.push(line);
        line = Buffer.concat(pending);
        pending = [];
      }
      if (line.length > 0) yield line;
      start = nl + 1;
    }
    if (start < chunk.length) pending.push(chunk.subarray(start));
  }
  if (pending.length > 0) {
    const line = Buffer.concat(pending);
    if (line.length > 0) yield line;
  }
}
