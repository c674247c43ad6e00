/**
 * A request whose target is `*` (asterisk form, RFC 9112 §3.2.4) with any method but `OPTIONS`
 * (which Go's server answers itself: `global-options.ts`). Go parses the target as the path `*`
 * and the apiserver handles it as any other non-resource path: authentication, then
 * authorization of `<verb>` on the path `*` (RBAC: only a rule whose `nonResourceURLs` holds
 * `*` matches it), then the not-found handler. An HTTP client library sends origin-form paths
 * only (undici refuses a path without a leading `/`: the proxy answered 503 "could not be
 * reached"), so the proxy sends the stand-in path `/*` instead, which the apiserver handles the
 * same way (its router has no route for it; RBAC matches it with the rules `*` and `/*` only),
 * and puts the path back in the answer's Status message
 * (`forbidden: User "…" cannot get path "/*"` becomes `… path "*"`).
 * Checked side by side on v1.37.2 (GET, POST, DELETE, HEAD; the cluster admin's 404
 * `404 page not found`, other users' 403, an invalid token's 401): `test/e2e/server-edges.test.ts`.
 */
import type { HeldAnswer } from './passthrough.ts';

/** The origin-form path sent upstream for the target `*`. */
export const ASTERISK_STAND_IN = '/*';

/** Whether a request target (`req.url` as received) is the asterisk form. */
export function isAsteriskTarget(target: string | undefined): boolean {
  return target === '*';
}

const STAND_IN_QUOTED = Buffer.from('path \\"/*\\"');
const ASTERISK_QUOTED = Buffer.from('path \\"*\\"');

/**
 * The apiserver's answer to the stand-in, as it would have been for `*`: the first
 * `path \"/*\"` of a JSON body (the Status message of a 403 for a non-resource path, as
 * `authorization.go` words it) becomes `path \"*\"`, one byte shorter, and so does the
 * `Content-Length` of a HEAD 403 (the apiserver's length of the body it does not send). Any other
 * answer is returned as is (the same object).
 */
export function asteriskAnswer(a: HeldAnswer): HeldAnswer {
  if (a.head) {
    if (a.status !== 403 || a.contentLength === undefined) return a;
    return { ...a, contentLength: a.contentLength - (STAND_IN_QUOTED.length - ASTERISK_QUOTED.length) };
  }
  const i = a.body.indexOf(STAND_IN_QUOTED);
  if (i < 0) return a;
  const body = Buffer.concat([
    a.body.subarray(0, i),
    ASTERISK_QUOTED,
    a.body.subarray(i + STAND_IN_QUOTED.length),
  ]);
  return { ...a, body, contentLength: body.length };
}
