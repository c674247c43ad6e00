/**
 * The upstream check: can the proxy reach the apiserver, does the apiserver accept its TLS, and
 * does it accept the proxy's credentials? `GET /version` (what `kubectl version` and client-go's
 * `ServerVersion` ask; allowed to every user by the `system:public-info-viewer` ClusterRole) and,
 * when `identity` is asked, `POST /apis/authentication.k8s.io/v1/selfsubjectreviews` (what
 * `kubectl auth whoami` sends; allowed to every authenticated user by `system:basic-user`), with
 * the proxy's own credentials on the given pool. A failure is one line naming the request and the
 * cause ({@link describeUpstreamFailure}); never a credential.
 */
import type { Dispatcher } from 'undici';
import { UpstreamError } from '../util/errors.ts';
import { request } from './undici-core.ts';

/** What the check needs: where, which pool, the proxy's current `Authorization` header value. */
export interface UpstreamCheckTarget {
  readonly baseUrl: string;
  readonly dispatcher: Dispatcher;
  authorization(): Promise<string | undefined> | string | undefined;
}

/** A passed check: the apiserver's `gitVersion`, and its answer to "who am I" when asked. */
export interface UpstreamCheckPassed {
  ok: true;
  /** `/version`'s `gitVersion`, e.g. `v1.37.2`. */
  version: string;
  /**
   * The proxy's username as the apiserver authenticated it (SelfSubjectReview), `undefined`
   * when not asked or when the apiserver does not serve SelfSubjectReview (404, before 1.28) or
   * forbids it (403: the identity is authenticated all the same).
   */
  user?: string;
}

/** A failed check: `reason` is one line, e.g. `GET https://10.0.0.1:6443/version: connection refused (ECONNREFUSED)`. */
export interface UpstreamCheckFailed {
  ok: false;
  reason: string;
}

/** Time each request of the check may take (ms) before it fails: the apiserver's webhook timeout. */
export const UPSTREAM_CHECK_TIMEOUT_MS = 10_000;

const SSR_PATH = '/apis/authentication.k8s.io/v1/selfsubjectreviews';

/**
 * Runs the check once. `identity`: also send the SelfSubjectReview. Never throws: every failure
 * (network, TLS, non-2xx, undecodable answer) is a {@link UpstreamCheckFailed}.
 */
export async function checkUpstream(
  target: UpstreamCheckTarget,
  opts: { identity?: boolean; timeoutMs?: number } = {},
): Promise<UpstreamCheckPassed | UpstreamCheckFailed> {
  const timeoutMs = opts.timeoutMs ?? UPSTREAM_CHECK_TIMEOUT_MS;
  let authorization: string | undefined;
  try {
    authorization = (await target.authorization()) ?? undefined;
  } catch (err) {
    return { ok: false, reason: `the proxy's credentials: ${oneLine(errMessage(err))}` };
  }
  const versionUrl = `${target.baseUrl}/version`;
  let version: string;
  try {
    const body = await send(target, versionUrl, 'GET', authorization, undefined, timeoutMs);
    version = String((JSON.parse(body) as { gitVersion?: unknown }).gitVersion ?? '');
  } catch (err) {
    return { ok: false, reason: `GET ${versionUrl}: ${describeUpstreamFailure(err)}` };
  }
  if (!opts.identity) return { ok: true, version };
  const ssrUrl = `${target.baseUrl}${SSR_PATH}`;
  try {
    const body = await send(
      target,
      ssrUrl,
      'POST',
      authorization,
      JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' }),
      timeoutMs,
    );
    const user = (JSON.parse(body) as { status?: { userInfo?: { username?: unknown } } }).status?.userInfo
      ?.username;
    return { ok: true, version, user: typeof user === 'string' ? user : '' };
  } catch (err) {
    // Not served (before Kubernetes 1.28, or the API disabled) or not granted: the request was
    // authenticated all the same (a bad credential is 401 before any authorization).
    if (err instanceof UpstreamError && (err.statusCode === 404 || err.statusCode === 403))
      return { ok: true, version };
    return { ok: false, reason: `POST ${ssrUrl}: ${describeUpstreamFailure(err)}` };
  }
}

async function send(
  target: UpstreamCheckTarget,
  url: string,
  method: 'GET' | 'POST',
  authorization: string | undefined,
  body: string | undefined,
  timeoutMs: number,
): Promise<string> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (authorization) headers.authorization = authorization;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await request(url, {
    method,
    headers,
    ...(body !== undefined ? { body } : {}),
    dispatcher: target.dispatcher,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.body.text();
  if (res.statusCode < 200 || res.statusCode >= 300)
    throw UpstreamError.fromBody(res.statusCode, text, `${method} ${new URL(url).pathname}`);
  return text;
}

/** Node's (OpenSSL's) certificate verification error codes, and the host-name mismatch. */
const TLS_CODES = new Set([
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'INVALID_CA',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'ERR_SSL_WRONG_VERSION_NUMBER',
  'EPROTO',
]);

/**
 * One line for an upstream failure, for the log and `/readyz?verbose`:
 * - `connection refused (ECONNREFUSED)`, `no such host (ENOTFOUND)`, `timed out (…)`;
 * - `TLS: <Node's reason> (<code>)` for a certificate the proxy does not trust, a host name
 *   mismatch, or a server that does not speak TLS;
 * - `401 Unauthorized: the apiserver rejected the proxy's credentials (…)`;
 * - otherwise `<code> <reason>: <the Status message>`.
 */
export function describeUpstreamFailure(err: unknown): string {
  if (err instanceof UpstreamError) {
    if (err.statusCode === 401)
      return "401 Unauthorized: the apiserver rejected the proxy's credentials (the kubeconfig user's token or client certificate)";
    const message = typeof err.status?.message === 'string' ? err.status.message : err.message;
    return oneLine(`${err.statusCode}${err.reason ? ` ${err.reason}` : ''}: ${message}`);
  }
  const code = errCode(err);
  if (code === 'ECONNREFUSED') return 'connection refused (ECONNREFUSED)';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `no such host (${code})`;
  if (code === 'ECONNRESET') return 'connection reset by peer (ECONNRESET)';
  if (code !== undefined && TLS_CODES.has(code))
    // Node appends a hint about the system CA store, beside the point for a kubeconfig's CA.
    return oneLine(
      `TLS: ${errMessage(err).replace(/; if the root CA is installed locally.*$/s, '')} (${code})`,
    );
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT' || isTimeout(err))
    return 'timed out (no answer within 10s)';
  return oneLine(code ? `${errMessage(err)} (${code})` : errMessage(err));
}

/** The first `code` in the error, its `cause` chain or an AggregateError's `errors`. */
function errCode(err: unknown): string | undefined {
  let e: unknown = err;
  for (let i = 0; i < 5 && e && typeof e === 'object'; i++) {
    const c = (e as { code?: unknown }).code;
    if (typeof c === 'string' && c !== 'UND_ERR_SOCKET') return c;
    const errors = (e as { errors?: unknown }).errors;
    if (Array.isArray(errors) && errors.length > 0) return errCode(errors[0]);
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

function errMessage(err: unknown): string {
  let e: unknown = err;
  // undici wraps the socket's error: the innermost message is the one that says why.
  for (let i = 0; i < 5 && e instanceof Error && e.cause instanceof Error; i++) e = e.cause;
  return e instanceof Error ? e.message : String(e);
}

function isTimeout(err: unknown): boolean {
  return err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError');
}

function oneLine(s: string): string {
  return s.replace(/\s*\n\s*/g, ' ').trim();
}
