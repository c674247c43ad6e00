/**
 * Pass-through to the apiserver with undici directly (no @fastify/reply-from: we need a
 * per-request choice of connection pool, raw bodies of every content type, and a tee of write
 * answers for read-your-writes; the dispatcher API gives all three without another dependency).
 *
 * - Bytes flow both ways unchanged (no decompression, no re-encoding), headers filtered per
 *   RFC 9110 (`hop-by-hop.ts`); `Warning`, `Retry-After`, `Content-Encoding` are kept. Answers
 *   of cached resources are read on the way (`tee`: the first bytes, held back until read) for
 *   read-your-writes and the RVs clients were shown.
 * - What credential travels, and over which pool, is decided by `upstreamCredentials`
 *   (`upstream-credentials.ts`): the client's own, the proxy impersonating an x509 client,
 *   none, the proxy's own (simple mode, no credential), or a 403 instead.
 * - No retries: `Dispatcher.request` never retries (only undici's RetryAgent does).
 * - Long-running requests use a separate pool and have no body timeout.
 * - Client disconnect aborts the upstream request.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { serviceUnavailable } from '../apimachinery/status.ts';
import type { ClientIdentity } from '../auth/access-control.ts';
import type { Logger } from '../util/logger.ts';
import type { AnswerHeaders } from './answer-meta.ts';
import { forwardRequestHeaders, forwardResponseHeaders } from './hop-by-hop.ts';
import { writeStatus } from './send-status.ts';
import { upstreamCredentials } from './upstream-credentials.ts';
import type { UpstreamTarget } from './upstream-target.ts';

/** Largest write answer buffered for read-your-writes (bytes); bigger ones stream after their first 8 MiB. */
export const MAX_TEE_BYTES = 8 * 1024 * 1024;

/** Bytes of a read's answer held back until its RV is recorded (metadata comes first). */
export const READ_PREFIX_BYTES = 64 * 1024;

/** Reads a successful answer's first bytes BEFORE the client sees any of them. */
export interface AnswerTee {
  /** How many bytes to hold back at most. */
  maxBytes: number;
  /** `complete`: `body` is the whole answer (else its first `maxBytes` or more). */
  onAnswer(body: Buffer, complete: boolean, headers: AnswerHeaders): void;
}

export interface PassThroughOptions {
  upstream: UpstreamTarget;
  longRunning: boolean;
  /**
   * Set for writes and reads of a cached resource: called with a successful (2xx) answer's
   * first bytes before the client sees them, so what it records holds when the client reads on.
   */
  tee?: AnswerTee;
  /** Registers a function that ends this request cleanly at shutdown; returns its unregister. */
  track?: (end: () => void) => () => void;
  log: Logger;
  /** Who asked; default: the `Authorization` header if any, else no credential. */
  identity?: ClientIdentity;
  /** `--delegated-auth` (default false). */
  delegatedAuth?: boolean;
  /** `--impersonate-certificate-clients` (default false). */
  impersonateCertificateClients?: boolean;
}

/** Forwards `req` upstream and streams the answer into `res` (which must be hijacked/raw). */
export async function passThrough(
  req: IncomingMessage,
  res: ServerResponse,
  o: PassThroughOptions,
): Promise<void> {
  const ac = new AbortController();
  const onClose = () => {
    if (!res.writableFinished) ac.abort();
  };
  res.on('close', onClose);
  // The client is already gone: nothing to forward (the apiserver would answer nobody).
  if (res.closed || res.destroyed) {
    res.off('close', onClose);
    return;
  }
  const untrack = o.track?.(() => {
    res.shouldKeepAlive = false;
    ac.abort();
    if (res.headersSent) res.end();
    else res.destroy();
  });
  const method = req.method ?? 'GET';
  const forwarded = forwardRequestHeaders(req.headers);
  const hasBody =
    method !== 'GET' &&
    method !== 'HEAD' &&
    (req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0);
  const base = o.upstream.server;
  const prefix = base.pathname.endsWith('/') ? base.pathname.slice(0, -1) : base.pathname;
  const auth = forwarded.authorization;
  const identity: ClientIdentity =
    o.identity ??
    (auth !== undefined
      ? { kind: 'bearer', authorization: Array.isArray(auth) ? auth.join(', ') : auth }
      : { kind: 'none' });
  try {
    const plan = await upstreamCredentials(
      {
        identity,
        headers: forwarded,
        delegatedAuth: o.delegatedAuth ?? false,
        impersonateCertificateClients: o.impersonateCertificateClients ?? false,
        longRunning: o.longRunning,
      },
      o.upstream,
    );
    if (!('dispatcher' in plan)) {
      writeStatus(res, plan);
      return;
    }
    const { headers, dispatcher } = plan;
    const up = await dispatcher.request({
      origin: base.origin,
      path: `${prefix}${req.url ?? '/'}`,
      method: method as 'GET',
      headers,
      body: hasBody ? req : null,
      signal: ac.signal,
      ...(o.longRunning ? { bodyTimeout: 0 } : {}),
    });
    const outHeaders = forwardResponseHeaders(up.headers);
    if (!o.longRunning) {
      // A short answer is read first (up to the tee's cap, else 64 KiB) and, when that is all
      // of it, sent with its headers in one write: no stream pipeline per request (its
      // teardown builds an AbortError with a stack trace) and no chunked framing (issue 12).
      const tee = o.tee && up.statusCode >= 200 && up.statusCode < 300 ? o.tee : undefined;
      const body = await readCapped(up.body, tee?.maxBytes ?? READ_PREFIX_BYTES);
      tee?.onAnswer(body.data, body.complete, {
        contentType: headerValue(up.headers['content-type']),
        contentEncoding: headerValue(up.headers['content-encoding']),
      });
      if (
        body.complete &&
        outHeaders['content-length'] === undefined &&
        method !== 'HEAD' &&
        hasContent(up.statusCode)
      )
        outHeaders['content-length'] = body.data.length;
      res.writeHead(up.statusCode, outHeaders);
      if (body.complete) res.end(body.data);
      else {
        res.write(body.data);
        // The rest from the same iterator (a second reader of `up.body` would wait forever).
        await pipeline(body.rest, res);
      }
      return;
    }
    res.writeHead(up.statusCode, outHeaders);
    res.flushHeaders();
    await pipeline(up.body, res);
  } catch (err) {
    if (ac.signal.aborted) return;
    o.log.warn({ err: (err as Error).message, method, url: req.url }, 'upstream request failed');
    if (!res.headersSent) {
      writeStatus(res, serviceUnavailable(`the apiserver could not be reached: ${(err as Error).message}`));
    } else res.destroy();
  } finally {
    res.off('close', onClose);
    untrack?.();
  }
}

/** Whether an answer with this status carries content (RFC 9110 §6.4.1: not 1xx, 204, 304). */
function hasContent(status: number): boolean {
  return status >= 200 && status !== 204 && status !== 304;
}

function headerValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v.join(', ') : v;
}

/**
 * Reads `body` until it ends or more than `cap` bytes arrived: the bytes read, whether that was
 * all, and the rest of the body (the same iterator, to be piped on when not complete).
 */
async function readCapped(
  body: AsyncIterable<Buffer>,
  cap: number,
): Promise<{ data: Buffer; complete: boolean; rest: AsyncIterable<Buffer> }> {
  const chunks: Buffer[] = [];
  let n = 0;
  const it = body[Symbol.asyncIterator]();
  const rest = { [Symbol.asyncIterator]: () => it };
  for (;;) {
    const { value, done } = await it.next();
    if (done) return { data: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks), complete: true, rest };
    chunks.push(value);
    n += value.length;
    if (n > cap) return { data: Buffer.concat(chunks), complete: false, rest };
  }
}
