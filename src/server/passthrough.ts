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
 * - No retries: `Dispatcher.dispatch`/`request` never retry (only undici's RetryAgent does).
 * - Short requests go through undici's `dispatch` handler API straight into `res` (no body
 *   stream, async iterator or AbortController per request: measured on the pass-through path,
 *   issue 12); long-running requests use a separate pool, a body stream piped into `res`, and
 *   have no body timeout.
 * - Client disconnect aborts the upstream request.
 */
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import type { Dispatcher } from 'undici';
import { serviceUnavailable } from '../apimachinery/status.ts';
import { watchFraming } from '../apimachinery/watch-framing.ts';
import type { ClientIdentity } from '../auth/access-control.ts';
import type { ImpersonationRights } from '../auth/impersonation-rights.ts';
import type { Logger } from '../util/logger.ts';
import { forwardRequestHeaders, forwardResponseHeaders } from './hop-by-hop.ts';
import { type AnswerTee, dispatchTeed, READ_PREFIX_BYTES } from './read-your-writes/answer-tee.ts';
import { writeStatus } from './send-status.ts';
import { upstreamCredentials } from './upstream-credentials.ts';
import type { UpstreamTarget } from './upstream-target.ts';
import { WatchRelay } from './watch-relay.ts';

export interface PassThroughOptions {
  upstream: UpstreamTarget;
  longRunning: boolean;
  /**
   * Set for writes and reads of a cached resource: called with a successful (2xx) answer's
   * first bytes before the client sees them, so what it records holds when the client reads on
   * (short requests only; run by the interceptor of `read-your-writes/answer-tee.ts`, which
   * `app.ts` composes onto the short pools, or wrapped here for a pool without it).
   */
  tee?: AnswerTee;
  /** Registers a function that ends this request cleanly at shutdown; returns its unregister. */
  track?: (end: () => void) => () => void;
  /**
   * Long-running requests only: registers this watch's handover `end` (returns its unregister,
   * called when the request ends, whoever ended it). Unlike shutdown's, it ends the stream at an
   * event boundary (`watch-relay.ts`), and never a stream whose framing is unknown. Such a watch
   * is forwarded without `Accept-Encoding` (the answer comes uncompressed). `position` tells
   * the resourceVersion of the last event relayed so far (`WatchRelay.lastResourceVersion`).
   */
  handover?: (end: () => void, position: () => bigint | undefined) => () => void;
  /**
   * Called once with the apiserver's final status code (not 1xx) as soon as it arrives, before
   * the client sees the answer; not called when no answer came (unreachable, client gone).
   */
  onStatus?: (statusCode: number) => void;
  /**
   * Short requests only: rewrites a whole, uncompressed answer before the client sees it
   * (`asterisk-target.ts`). An answer too long to hold (over {@link READ_PREFIX_BYTES}) or
   * compressed is passed on as is.
   */
  rewriteAnswer?: (answer: HeldAnswer) => HeldAnswer;
  log: Logger;
  /** Who asked; default: the `Authorization` header if any, else no credential. */
  identity?: ClientIdentity;
  /** `--delegated-auth` (default false). */
  delegatedAuth?: boolean;
  /** `--impersonate-certificate-clients` (default false). */
  impersonateCertificateClients?: boolean;
  /** The proxy's own impersonation rights (the per-client impersonation mode). */
  impersonationRights?: ImpersonationRights | undefined;
}

/**
 * A short answer held whole before it is written: its status, body and `Content-Length` (the
 * upstream's, if it sent one; for a HEAD answer the length of the body it did not send).
 */
export interface HeldAnswer {
  status: number;
  head: boolean;
  body: Buffer;
  contentLength: number | undefined;
}

/** Forwards `req` upstream and streams the answer into `res` (which must be hijacked/raw). */
export async function passThrough(
  req: IncomingMessage,
  res: ServerResponse,
  o: PassThroughOptions,
): Promise<void> {
  // The client is already gone: nothing to forward (the apiserver would answer nobody).
  if (res.closed || res.destroyed) return;
  const method = req.method ?? 'GET';
  const forwarded = forwardRequestHeaders(req.headers);
  // A watch the handover may end is asked for uncompressed: the apiserver gzips watch answers for
  // clients that accept it (client-go does), and event boundaries are found in the plain bytes
  // (`watch-relay.ts`). Any client accepts identity (RFC 9110 §12.5.3); the cache serves watches
  // uncompressed too.
  if (o.longRunning && o.handover) delete forwarded['accept-encoding'];
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
  let plan: Awaited<ReturnType<typeof upstreamCredentials>>;
  try {
    plan = await upstreamCredentials(
      {
        identity,
        headers: forwarded,
        delegatedAuth: o.delegatedAuth ?? false,
        impersonateCertificateClients: o.impersonateCertificateClients ?? false,
        impersonationRights: o.impersonationRights,
        longRunning: o.longRunning,
      },
      o.upstream,
    );
  } catch (err) {
    // The proxy's own credential could not be had (an exec plugin failed).
    o.log.warn({ err: (err as Error).message, method, url: req.url }, 'upstream request failed');
    if (!res.headersSent) writeStatus(res, unreachable(err));
    return;
  }
  if (!('dispatcher' in plan)) {
    writeStatus(res, plan);
    return;
  }
  let body: Dispatcher.DispatchOptions['body'] = hasBody ? req : null;
  const length = Number(req.headers['content-length'] ?? Number.NaN);
  if (hasBody && !o.longRunning && length <= MAX_BUFFERED_BODY_BYTES) {
    // A small body (a PATCH, an object) is read first and sent with the request head in one
    // write, instead of streamed as a separate write per chunk (issue 12).
    const read = await readBody(req);
    if (read === undefined) return; // the client left mid-body: nothing to forward
    body = read;
  }
  const request: Dispatcher.DispatchOptions = {
    origin: base.origin,
    path: `${prefix}${req.url ?? '/'}`,
    method: method as 'GET',
    headers: plan.headers,
    body,
  };
  if (o.longRunning) return forwardLongRunning(req, res, o, plan.dispatcher, request);
  return forwardShort(res, o, plan.dispatcher, request, req.url);
}

/** Request bodies up to this size (bytes, by `Content-Length`) are read whole before forwarding. */
export const MAX_BUFFERED_BODY_BYTES = 256 * 1024;

/**
 * Reads a whole request body (one announced by its `Content-Length`); undefined when the
 * client closed or aborted first. More or fewer bytes than announced are Node's parser's business
 * (it errors the request), which ends here as undefined too.
 */
function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let n = 0;
    const finish = (v: Buffer | undefined) => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onFail);
      req.off('close', onClose);
      resolve(v);
    };
    const onData = (c: Buffer) => {
      chunks.push(c);
      n += c.length;
    };
    const onEnd = () => finish(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, n));
    const onFail = () => finish(undefined);
    const onClose = () => {
      if (!req.complete) finish(undefined);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onFail);
    req.on('close', onClose);
  });
}

function unreachable(err: unknown) {
  return serviceUnavailable(`the apiserver could not be reached: ${(err as Error).message}`);
}

/** Why the proxy aborted an upstream request: its client left, or shutdown ended it. */
class Aborted extends Error {}

/**
 * A short request: the answer is read first (up to the tee's cap, else 64 KiB) and, when that
 * is all of it, sent with its headers and a Content-Length in one write (no chunked framing);
 * a longer answer streams on, chunk by chunk, with backpressure (the upstream read is paused
 * while `res` is full). Resolves once the answer is written or the request ended otherwise.
 */
function forwardShort(
  res: ServerResponse,
  o: PassThroughOptions,
  dispatcher: Dispatcher,
  request: Dispatcher.DispatchOptions,
  url: string | undefined,
): Promise<void> {
  return new Promise<void>((resolve) => {
    let controller: Dispatcher.DispatchController | undefined;
    let aborted: Aborted | undefined;
    let settled = false;
    let status = 0;
    let outHeaders: OutgoingHttpHeaders = {};
    let cap = READ_PREFIX_BYTES;
    let chunks: Buffer[] = [];
    let bytes = 0;
    let streaming = false;
    const abort = (why: string) => {
      aborted ??= new Aborted(why);
      controller?.abort(aborted);
    };
    const onClose = () => {
      if (!res.writableFinished) abort('client closed the connection');
      // Nothing more to write: the request's slot is free (undici ends the upstream request).
      done();
    };
    const untrack = o.track?.(() => {
      res.shouldKeepAlive = false;
      abort('shutdown');
      if (res.headersSent) res.end();
      else res.destroy();
    });
    const done = () => {
      if (settled) return;
      settled = true;
      res.off('close', onClose);
      untrack?.();
      resolve();
    };
    const fail = (err: Error) => {
      if (aborted) return done();
      o.log.warn({ err: err.message, method: request.method, url }, 'upstream request failed');
      if (!res.headersSent) writeStatus(res, unreachable(err));
      else res.destroy();
      done();
    };
    const write = (chunk: Buffer) => {
      if (!res.write(chunk)) {
        controller?.pause();
        res.once('drain', () => controller?.resume());
      }
    };
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart(c) {
        controller = c;
        if (aborted) c.abort(aborted);
      },
      onResponseStart(_c, statusCode, headers) {
        // Interim 1xx answers are not the response.
        if (statusCode < 200) return;
        status = statusCode;
        o.onStatus?.(statusCode);
        outHeaders = forwardResponseHeaders(headers as Record<string, string | string[] | undefined>);
        // A teed answer (held back by the interceptor until read) is sent whole up to the
        // tee's cap, as one write with its length; one the tee does not want streams as any other.
        if (o.tee && statusCode < 300 && (o.tee.wanted?.() ?? true)) cap = Math.max(cap, o.tee.maxBytes);
      },
      onResponseData(_c, chunk) {
        if (settled) return;
        if (streaming) return write(chunk);
        chunks.push(chunk);
        bytes += chunk.length;
        if (bytes <= cap) return;
        const first = Buffer.concat(chunks, bytes);
        chunks = [];
        res.writeHead(status, outHeaders);
        streaming = true;
        write(first);
      },
      onResponseEnd() {
        if (settled) return;
        if (streaming) {
          res.end();
          return done();
        }
        let body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, bytes);
        if (o.rewriteAnswer && outHeaders['content-encoding'] === undefined) {
          const declared = outHeaders['content-length'];
          const held: HeldAnswer = {
            status,
            head: request.method === 'HEAD',
            body,
            contentLength: declared === undefined ? undefined : Number(declared),
          };
          const out = o.rewriteAnswer(held);
          if (out !== held) {
            body = out.body;
            if (out.contentLength !== undefined) outHeaders['content-length'] = out.contentLength;
          }
        }
        if (outHeaders['content-length'] === undefined && request.method !== 'HEAD' && hasContent(status))
          outHeaders['content-length'] = body.length;
        res.writeHead(status, outHeaders);
        res.end(body);
        done();
      },
      onResponseError(_c, err) {
        if (!settled) fail(err);
      },
    };
    res.on('close', onClose);
    if (o.tee) dispatchTeed(dispatcher, request, o.tee, handler);
    else dispatcher.dispatch(request, handler);
  });
}

/**
 * A long-running request (watch, `logs -f`, …): headers flushed at once, the body piped through;
 * with `o.handover`, relayed by a {@link WatchRelay} instead (a handover ends it on an event
 * boundary of a 2xx answer's framing).
 */
async function forwardLongRunning(
  _req: IncomingMessage,
  res: ServerResponse,
  o: PassThroughOptions,
  dispatcher: Dispatcher,
  request: Dispatcher.DispatchOptions,
): Promise<void> {
  const ac = new AbortController();
  const onClose = () => {
    if (!res.writableFinished) ac.abort();
  };
  res.on('close', onClose);
  const untrack = o.track?.(() => {
    res.shouldKeepAlive = false;
    ac.abort();
    if (res.headersSent) res.end();
    else res.destroy();
  });
  const relay = o.handover
    ? new WatchRelay(res, { abortUpstream: () => ac.abort(), log: o.log, url: _req.url })
    : undefined;
  const unhandover = relay
    ? o.handover?.(
        () => relay.handover(),
        () => relay.lastResourceVersion(),
      )
    : undefined;
  try {
    const up = await dispatcher.request({ ...request, signal: ac.signal, bodyTimeout: 0 });
    o.onStatus?.(up.statusCode);
    res.writeHead(up.statusCode, forwardResponseHeaders(up.headers));
    res.flushHeaders();
    if (!relay) {
      await pipeline(up.body, res);
      return;
    }
    const ok = up.statusCode >= 200 && up.statusCode < 300;
    relay.start(
      ok
        ? watchFraming(headerValue(up.headers['content-type']), headerValue(up.headers['content-encoding']))
        : undefined,
    );
    await relay.pump(up.body);
    if (!relay.ended && !res.destroyed) res.end();
  } catch (err) {
    if (ac.signal.aborted) return;
    o.log.warn(
      { err: (err as Error).message, method: request.method, url: _req.url },
      'upstream request failed',
    );
    if (!res.headersSent) writeStatus(res, unreachable(err));
    else res.destroy();
  } finally {
    res.off('close', onClose);
    untrack?.();
    unhandover?.();
  }
}

/** Whether an answer with this status carries content (RFC 9110 §6.4.1: not 1xx, 204, 304). */
function hasContent(status: number): boolean {
  return status >= 200 && status !== 204 && status !== 304;
}

function headerValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v.join(', ') : v;
}
