/**
 * HTTP Upgrade passed through: `kubectl exec`, `attach`, `port-forward` and `cp` (SPDY/3.1 or
 * WebSocket with any channel subprotocol, e.g. `v5.channel.k8s.io`,
 * `SPDY/3.1+portforward.k8s.io`), and WebSocket watches. The request goes to the apiserver with
 * undici's `Dispatcher.dispatch` and `upgrade` over the HTTP/1.1-only pools of `UpstreamTarget`
 * (`upgradeDispatcher`: the kubeconfig's TLS, the client-credential pools apply); then:
 *
 * - `101 Switching Protocols`: the upstream's head (its raw header lines, in order) is written to
 *   the client, and the two sockets are joined byte for byte (`pipe`, with backpressure). An end
 *   of stream (FIN) is passed on in each direction separately (half-close); a reset or error on
 *   one side destroys the other. What ends a stream is the apiserver's business: its own
 *   upgrade-aware proxy (`apimachinery/pkg/util/proxy/upgradeaware.go`) closes both directions
 *   once one of them ended.
 * - any other answer (404 pod not found, 400 container not found, 403, 401 …): passed back as
 *   the apiserver sent it (status line, end-to-end headers, body streamed) with
 *   `Connection: close`, the body delimited by the close when the upstream gave no length.
 * - the apiserver unreachable: 503 Status, as every pass-through (`passthrough.ts`).
 *
 * Who asks and what credential travels: the same as every pass-through request: the access
 * control admits the request (401/403 answered here), then `upstreamCredentials`
 * (`upstream-credentials.ts`) decides the credential and pool, in {@link tunnelPlan}.
 * Each tunnel holds a `--max-watchers` slot (a long-running request, as the apiserver counts
 * exec/attach/portforward) until both sockets closed; past the cap, 429. At shutdown the
 * upstream side gets a FIN (the apiserver then closes the stream, and the client sees its end);
 * both sockets are destroyed if still open after the grace period.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Dispatcher } from 'undici';
import { goJSON } from '../apimachinery/go-json.ts';
import { StatusError, serviceUnavailable, tooManyRequests } from '../apimachinery/status.ts';
import type { AccessControl, ClientIdentity } from '../auth/access-control.ts';
import type { Logger } from '../util/logger.ts';
import { forwardRequestHeaders } from './hop-by-hop.ts';
import type { Limiter } from './limiter.ts';
import { TOO_MANY_REQUESTS } from './serve-context.ts';
import { type ForwardPlan, upstreamCredentials } from './upstream-credentials.ts';
import type { UpstreamTarget } from './upstream-target.ts';

/** Options of {@link tunnelUpgrade}. Durations in ms. */
export interface TunnelOptions {
  upstream: UpstreamTarget;
  /** Who asks (docs/design.md §4); absent only in unit tests. */
  access?: AccessControl;
  /** The `--max-watchers` cap: a tunnel holds one slot while open. */
  watchers: Limiter;
  /** Registers a function that ends this tunnel at shutdown; returns its unregister. */
  track: (end: () => void) => () => void;
  /** After shutdown sent its FIN, how long until both sockets are destroyed (default 5000). */
  shutdownGraceMs?: number;
  log: Logger;
}

/** Response header fields never passed back on a non-101 answer (this hop's framing). */
const RESPONSE_HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'trailer']);

/**
 * The credential and pool of a tunnel, by the rule of every pass-through: the access control's
 * identity (or, without one, the client's `Authorization`), then `upstreamCredentials` with
 * `upgrade` (the HTTP/1.1-only pools). Resolves with the plan, or the Status to answer (401, 403).
 */
export async function tunnelPlan(
  req: IncomingMessage,
  headers: Record<string, string | string[]>,
  o: Pick<TunnelOptions, 'upstream' | 'access'>,
): Promise<ForwardPlan | StatusError> {
  let identity: ClientIdentity;
  if (o.access) {
    const a = await o.access.admit(req, undefined);
    if (a.kind === 'refuse') return a.status;
    identity = a.identity;
  } else {
    const auth = headers.authorization;
    identity =
      auth !== undefined
        ? { kind: 'bearer', authorization: Array.isArray(auth) ? auth.join(', ') : auth }
        : { kind: 'none' };
  }
  return upstreamCredentials(
    {
      identity,
      headers,
      delegatedAuth: o.access?.o.delegatedAuth ?? false,
      impersonateCertificateClients: o.access?.o.impersonateCertificateClients ?? false,
      impersonationRights: o.access?.o.impersonationRights,
      longRunning: true,
      upgrade: true,
    },
    o.upstream,
  );
}

/**
 * Serves one upgrade request (node's `upgrade` event: the request, its socket, and the bytes the
 * client already sent after its head). Never throws; every failure is answered on `client`.
 */
export function tunnelUpgrade(req: IncomingMessage, client: Duplex, head: Buffer, o: TunnelOptions): void {
  client.on('error', () => client.destroy());
  const release = o.watchers.tryAcquire();
  if (!release) {
    writeRawStatus(client, tooManyRequests(TOO_MANY_REQUESTS, 1));
    return;
  }
  let upSocket: Duplex | undefined;
  let controller: Dispatcher.DispatchController | undefined;
  let forced: NodeJS.Timeout | undefined;
  const untrack = o.track(() => {
    // A FIN upstream (the apiserver ends the stream, the client sees its end), then a deadline.
    if (upSocket) upSocket.end();
    else controller?.abort(new Error('shutting down'));
    if (!upSocket) client.end();
    forced = setTimeout(() => {
      upSocket?.destroy();
      client.destroy();
    }, o.shutdownGraceMs ?? 5000);
    forced.unref();
  });
  let finished = false;
  const finish = () => {
    if (finished) return;
    finished = true;
    release();
    untrack();
    if (forced) clearTimeout(forced);
  };
  client.once('close', () => {
    if (!upSocket) {
      controller?.abort(new Error('client closed'));
      finish();
    }
  });
  start(req, client, head, o, {
    onController: (c) => {
      controller = c;
    },
    onUpgrade: (s) => {
      upSocket = s;
      join(client, s, finish);
    },
    onEnd: () => {
      if (!upSocket) finish();
    },
  }).catch((err: unknown) => {
    o.log.warn({ err: (err as Error).message, url: req.url }, 'upgrade request failed');
    writeRawStatus(
      client,
      serviceUnavailable(`the apiserver could not be reached: ${(err as Error).message}`),
    );
    finish();
  });
}

interface TunnelEvents {
  onController(c: Dispatcher.DispatchController): void;
  onUpgrade(socket: Duplex): void;
  /** A non-101 answer has been passed back (or failed after its head). */
  onEnd(): void;
}

/** Sends the upgrade request upstream; rejects only before any answer reached the client. */
async function start(
  req: IncomingMessage,
  client: Duplex,
  head: Buffer,
  o: TunnelOptions,
  ev: TunnelEvents,
): Promise<void> {
  const forwarded = forwardRequestHeaders(req.headers);
  // The body, if any, is part of the stream after the head: nothing is framed as a request body.
  delete forwarded['content-length'];
  const plan = await tunnelPlan(req, forwarded, o);
  if (plan instanceof StatusError) {
    writeRawStatus(client, plan);
    return ev.onEnd();
  }
  const { headers, dispatcher } = plan;
  if (client.destroyed) return ev.onEnd();
  const base = o.upstream.server;
  const prefix = base.pathname.endsWith('/') ? base.pathname.slice(0, -1) : base.pathname;
  await new Promise<void>((resolve, reject) => {
    let headSent = false;
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart(controller) {
        ev.onController(controller);
        if (client.destroyed) controller.abort(new Error('client closed'));
      },
      onRequestUpgrade(controller, statusCode, _headers, socket) {
        client.write(
          `HTTP/1.1 ${statusCode} Switching Protocols\r\n${headerLines(controller.rawHeaders)}\r\n`,
        );
        if (head.length > 0) socket.write(head);
        ev.onUpgrade(socket);
        resolve();
      },
      onResponseStart(controller, statusCode, _headers, statusMessage) {
        const raw = rawPairs(controller.rawHeaders).filter(
          ([k]) => !RESPONSE_HOP_BY_HOP.has(k.toLowerCase()),
        );
        const lines = raw.map(([k, v]) => `${k}: ${v}\r\n`).join('');
        client.write(`HTTP/1.1 ${statusCode} ${statusMessage ?? ''}\r\n${lines}Connection: close\r\n\r\n`);
        headSent = true;
      },
      onResponseData(controller, chunk) {
        if (!client.write(chunk)) {
          controller.pause();
          client.once('drain', () => controller.resume());
        }
      },
      onResponseEnd() {
        closeAfterWrite(client);
        ev.onEnd();
        resolve();
      },
      onResponseError(_controller, err) {
        if (headSent || client.destroyed) {
          client.destroy();
          ev.onEnd();
          resolve();
        } else reject(err);
      },
    };
    dispatcher.dispatch(
      {
        origin: base.origin,
        path: `${prefix}${req.url ?? '/'}`,
        method: (req.method ?? 'GET') as Dispatcher.HttpMethod,
        headers,
        body: null,
        upgrade: headerText(req.headers.upgrade),
        bodyTimeout: 0,
      },
      handler,
    );
  });
}

/**
 * Joins the client's and the upstream's sockets: bytes both ways with backpressure, each
 * direction's end passed on by itself (half-close); an abrupt close of one side (reset,
 * error) destroys the other. `done` runs once both are closed.
 */
function join(client: Duplex, up: Duplex, done: () => void): void {
  // An end of stream from one side must not end the other side's writes to it.
  for (const s of [client, up] as (Duplex & { allowHalfOpen: boolean; setTimeout?(ms: number): void })[]) {
    s.allowHalfOpen = true;
    s.setTimeout?.(0);
  }
  let open = 2;
  const onClose = (self: Duplex, other: Duplex) => () => {
    // Closed without both directions having ended: the stream was cut, cut the other side too.
    if (!(self.readableEnded && self.writableFinished)) other.destroy();
    if (--open === 0) done();
  };
  up.on('error', () => up.destroy());
  client.on('close', onClose(client, up));
  up.on('close', onClose(up, client));
  client.pipe(up);
  up.pipe(client);
  client.resume();
}

/** `[name, value]` pairs of undici's raw headers (Buffers or strings, alternating). */
function rawPairs(raw: Dispatcher.DispatchController['rawHeaders']): [string, string][] {
  const out: [string, string][] = [];
  if (Array.isArray(raw)) {
    for (let i = 0; i + 1 < raw.length; i += 2) out.push([String(raw[i]), String(raw[i + 1])]);
  } else if (raw) {
    for (const [k, v] of Object.entries(raw)) {
      for (const one of Array.isArray(v) ? v : v === undefined ? [] : [v]) out.push([k, String(one)]);
    }
  }
  return out;
}

function headerLines(raw: Dispatcher.DispatchController['rawHeaders']): string {
  return rawPairs(raw)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
}

function headerText(v: string | string[] | undefined): string {
  return Array.isArray(v) ? v.join(', ') : (v ?? 'websocket');
}

/** Answers a Status on a raw socket and closes it (what `send-status.ts` does on a response). */
export function writeRawStatus(socket: Duplex, err: StatusError): void {
  if (socket.destroyed) return;
  const body = Buffer.from(goJSON(err.status));
  const retry = err.status.details?.retryAfterSeconds;
  closeAfterWrite(
    socket,
    `HTTP/1.1 ${err.status.code} ${REASON_PHRASES[err.status.code] ?? ''}\r\n` +
      'Content-Type: application/json\r\nCache-Control: no-cache, private\r\n' +
      (retry !== undefined ? `Retry-After: ${retry}\r\n` : '') +
      `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n${body.toString()}`,
  );
}

/** Grace after an answer with `Connection: close` before the socket is closed (ms). */
const CLOSE_LINGER_MS = 500;

/**
 * Ends `socket` after `last` and closes it fully a moment later, as Go's server does after a
 * `Connection: close` answer (`closeWriteAndWait`: FIN, 500 ms for the client to read, close):
 * a client that never ends its side must not keep the connection (and shutdown) open.
 */
function closeAfterWrite(socket: Duplex, last?: string): void {
  socket.end(last);
  setTimeout(() => socket.destroy(), CLOSE_LINGER_MS).unref();
}

const REASON_PHRASES: Record<number, string> = {
  401: 'Unauthorized',
  403: 'Forbidden',
  429: 'Too Many Requests',
  503: 'Service Unavailable',
};
