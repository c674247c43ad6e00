/**
 * LIST continue tokens exactly as the apiserver writes them: apiserver `pkg/storage/continue.go`
 * (`EncodeContinue` / `DecodeContinue`): base64url without padding of
 * `{"v":"meta.k8s.io/v1","rv":N,"start":"/<key>\u0000"}`, where `<key>` is the last returned
 * object's key relative to the listed prefix (`name` within a namespace, `namespace/name` across
 * namespaces). Tokens are interchangeable between the cache and the apiserver in both directions.
 */
import { badRequest } from './status.ts';

/** A decoded token: the snapshot RV and the first key (relative, inclusive) of the next page. */
export interface ContinueToken {
  rv: bigint;
  /** Relative key to start at (inclusive), e.g. `c-a\u0000`. */
  start: string;
}

/** The token that continues a list after `lastKey` (relative to the listed prefix) at `rv`. */
export function encodeContinue(lastKey: string, rv: bigint): string {
  const json = `{"v":"meta.k8s.io/v1","rv":${rv},"start":${JSON.stringify(`/${lastKey}\u0000`)}}`;
  return Buffer.from(json).toString('base64url');
}

const INVALID = 'invalid continue token: continue key is not valid';

/**
 * Decodes a token like `storage.DecodeContinue`.
 * @returns the token, or undefined when it is malformed in a way whose exact apiserver message
 *   (a Go base64/JSON decoder error) the cache cannot reproduce — the caller passes the request
 *   upstream, which answers for itself.
 * @throws StatusError 400 with the apiserver's message for the errors it words itself.
 */
export function decodeContinue(token: string): ContinueToken | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(token)) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return undefined;
  const { v, rv, start } = parsed as { v?: unknown; rv?: unknown; start?: unknown };
  if ((v !== undefined && typeof v !== 'string') || (rv !== undefined && !Number.isSafeInteger(rv)))
    return undefined;
  if (start !== undefined && typeof start !== 'string') return undefined;
  if (v !== 'meta.k8s.io/v1') {
    throw badRequest(`${INVALID}: server does not recognize this encoded version ${v ?? ''}`);
  }
  if (rv === undefined || rv === 0) {
    throw badRequest(`${INVALID}: incorrect encoded start resourceVersion (version meta.k8s.io/v1)`);
  }
  if (!start) throw badRequest(`${INVALID}: encoded start key empty (version meta.k8s.io/v1)`);
  if ((rv as number) < 0) return undefined;
  // path.Clean defence of the apiserver: a key that cleans differently is rejected.
  const key = start.startsWith('/') ? start : `/${start}`;
  if (cleanPath(key) !== key) throw badRequest(`${INVALID}: ${start}`);
  return { rv: BigInt(rv as number), start: key.slice(1) };
}

/** Go's `path.Clean` for absolute paths. */
function cleanPath(p: string): string {
  const out: string[] = [];
  for (const part of p.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') out.pop();
    else out.push(part);
  }
  return `/${out.join('/')}`;
}
