/**
 * POSTs a review object (TokenReview, SubjectAccessReview, SelfSubjectReview) to the apiserver
 * with the proxy's own credentials and returns the answer's JSON: what client-go's typed
 * `Create` does for the delegated authenticator and authorizer of an extension apiserver.
 */
import type { Dispatcher } from 'undici';
import { request } from '../upstream/undici-core.ts';
import { UpstreamError } from '../util/errors.ts';

/** What a review needs from the upstream: where, which pool, the proxy's `Authorization`. */
export interface ReviewUpstream {
  readonly baseUrl: string;
  readonly dispatcher: Dispatcher;
  authorization(): Promise<string | undefined> | string | undefined;
}

/** Time a review may take before it fails (ms): the apiserver's webhook client timeout (10 s). */
export const REVIEW_TIMEOUT_MS = 10_000;

/**
 * POST `body` as JSON to `path`; resolves to the parsed answer.
 * @throws UpstreamError for a non-2xx answer (with its Status), undici's errors for network failures.
 */
export async function createReview<T>(up: ReviewUpstream, path: string, body: unknown): Promise<T> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json',
  };
  const auth = await up.authorization();
  if (auth) headers.authorization = auth;
  const res = await request(`${up.baseUrl}${path}`, {
    method: 'POST',
    headers,
    body: JSON.stringify(body),
    dispatcher: up.dispatcher,
    headersTimeout: REVIEW_TIMEOUT_MS,
    bodyTimeout: REVIEW_TIMEOUT_MS,
  });
  const text = await res.body.text();
  if (res.statusCode < 200 || res.statusCode >= 300)
    throw UpstreamError.fromBody(res.statusCode, text, `POST ${path}`);
  return JSON.parse(text) as T;
}
