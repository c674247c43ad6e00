/**
 * `OPTIONS *` (an asterisk-form request target, RFC 9112 §3.2.4), answered by the proxy itself as
 * Go's net/http server answers it for the apiserver: before any handler, so without
 * authentication, authorization, audit or API Status. The apiserver never sees such a request (Go
 * answers it in `serverHandler.ServeHTTP`, the apiserver does not set
 * `DisableGeneralOptionsHandler`), and it could not be passed on anyway: an HTTP client library
 * sends origin-form paths only.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** Most bytes of an `OPTIONS *` body read and discarded; beyond them the connection is closed. */
export const GLOBAL_OPTIONS_BODY_LIMIT = 4 << 10;

/**
 * Whether a request is `OPTIONS *` (the raw request target, as Go compares `req.RequestURI`).
 * Any other method with the target `*` is not: the apiserver routes it as the path `*`.
 *
 * Go (net/http server.go, `serverHandler.ServeHTTP`):
 *
 * ```go
 * if !sh.srv.DisableGeneralOptionsHandler && req.RequestURI == "*" && req.Method == "OPTIONS" {
 *     handler = globalOptionsHandler{}
 * }
 * ```
 */
export function isGlobalOptions(req: IncomingMessage): boolean {
  return req.method === 'OPTIONS' && req.url === '*';
}

/**
 * Answers `OPTIONS *` as Go's `globalOptionsHandler`: 200, `Content-Length: 0`, no body and no
 * other header of its own. A body is read and discarded up to {@link GLOBAL_OPTIONS_BODY_LIMIT}
 * bytes; a longer one is not read on, and the answer carries `Connection: close` and closes the
 * connection (Go's `MaxBytesReader` marks the response `closeAfterReply`).
 *
 * Go (net/http server.go):
 *
 * ```go
 * func (globalOptionsHandler) ServeHTTP(w ResponseWriter, r *Request) {
 *     w.Header().Set("Content-Length", "0")
 *     if r.ContentLength != 0 {
 *         // Read up to 4KB of OPTIONS body (as mentioned in the
 *         // spec as being reserved for future use), but anything
 *         // over that is considered a waste of server resources
 *         // (or an attack) and we abort and close the connection,
 *         // courtesy of MaxBytesReader's EOF behavior.
 *         mb := MaxBytesReader(w, r.Body, 4<<10)
 *         io.Copy(io.Discard, mb)
 *     }
 * }
 * ```
 */
export function answerGlobalOptions(req: IncomingMessage, res: ServerResponse): void {
  let read = 0;
  let answered = false;
  const answer = (tooLarge: boolean) => {
    if (answered) return;
    answered = true;
    req.off('data', onData);
    // Node would add `Transfer-Encoding: chunked` without the explicit length.
    const headers: Record<string, string> = tooLarge
      ? { Connection: 'close', 'Content-Length': '0' }
      : { 'Content-Length': '0' };
    res.writeHead(200, headers);
    res.end();
    if (tooLarge) res.once('finish', () => req.socket.destroySoon());
  };
  const onData = (chunk: Buffer) => {
    read += chunk.length;
    if (read > GLOBAL_OPTIONS_BODY_LIMIT) {
      req.pause();
      answer(true);
    }
  };
  req.on('data', onData);
  req.once('end', () => answer(false));
  req.once('error', () => answer(true));
}
