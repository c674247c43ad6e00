/**
 * Header handling of an intermediary (RFC 9110 §7.6.1): hop-by-hop fields, and every field the
 * `Connection` header names, are not forwarded. `Host` is set by the client library for the
 * upstream origin; `Expect` is answered by Node's server itself.
 */
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

function connectionTokens(v: string | string[] | undefined): Set<string> {
  const s = new Set<string>();
  for (const line of Array.isArray(v) ? v : v ? [v] : []) {
    for (const t of line.split(',')) if (t.trim()) s.add(t.trim().toLowerCase());
  }
  return s;
}

/**
 * Request headers to send upstream: end-to-end only, no `host`/`expect`. `Authorization` is
 * kept even when `Connection` names it: dropping it made the pass-through substitute the
 * proxy's own credentials for a client that sent its own (`Connection: close, Authorization`
 * with a limited user's token created objects as the proxy's identity).
 */
export function forwardRequestHeaders(h: IncomingHttpHeaders): Record<string, string | string[]> {
  const drop = connectionTokens(h.connection);
  drop.delete('authorization');
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(h)) {
    if (v === undefined || HOP_BY_HOP.has(k) || drop.has(k) || k === 'host' || k === 'expect') continue;
    out[k] = v;
  }
  return out;
}

/** Response headers to send to the client: end-to-end only (`Warning`, `Retry-After`, `Content-Encoding` kept). */
export function forwardResponseHeaders(
  h: Record<string, string | string[] | undefined>,
): OutgoingHttpHeaders {
  const drop = connectionTokens(h.connection);
  const out: OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(h)) {
    if (v === undefined || HOP_BY_HOP.has(k) || drop.has(k)) continue;
    out[k] = v;
  }
  return out;
}
