import { request } from 'undici';
import { ConnectionRefusedError, UpstreamError } from '../util/errors.ts';
import { isConnectionRefused } from './api-errors.ts';
import type { Upstream } from './connection.ts';

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
 * GET `path` upstream asking for JSON with identity encoding (recent apiservers gzip watch-list
 * streams when allowed; docs/design.md §2). Resolves once headers arrive; a non-2xx answer is read
 * (bounded to 64 KiB) and thrown as {@link UpstreamError}. A refused connection is thrown as
 * {@link ConnectionRefusedError} (same message, undici's error as `cause`); other network errors
 * as undici raises them. `signal` aborts the request and its body.
 */
export async function upstreamGet(
  up: Upstream,
  path: string,
  query: Query = {},
  signal?: AbortSignal,
): Promise<StreamingResponse> {
  const headers: Record<string, string> = { accept: 'application/json', 'accept-encoding': 'identity' };
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
  if (res.statusCode < 200 || res.statusCode >= 300) {
    const text = await readBounded(res.body, 64 * 1024);
    throw UpstreamError.fromBody(res.statusCode, text, `GET ${path}`);
  }
  return res as unknown as StreamingResponse;
}

/** GET and read the whole body (discovery, LIST pages). Errors as {@link upstreamGet}. */
export async function upstreamGetBuffer(
  up: Upstream,
  path: string,
  query: Query = {},
  signal?: AbortSignal,
): Promise<Buffer> {
  const res = await upstreamGet(up, path, query, signal);
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
