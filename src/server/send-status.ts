/**
 * Writes a `metav1.Status` error the way the apiserver does (`responsewriters.ErrorNegotiated`):
 * JSON body, `Content-Type: application/json`, and `Retry-After` when the Status carries
 * `retryAfterSeconds` (429, 504 too-large RV).
 */
import type { ServerResponse } from 'node:http';
import { goJSON } from '../apimachinery/go-json.ts';
import { toStatusError } from '../util/errors.ts';

/**
 * Sends `err` on a raw response (headers must not have been sent). Anything thrown is accepted:
 * it is mapped to its Status by the catalogue's {@link toStatusError} (a `StatusError` as is,
 * an upstream Status as the upstream worded it, everything else 500 InternalError).
 */
export function writeStatus(res: ServerResponse, err: unknown): void {
  const { status } = toStatusError(err);
  // Go's encoding/json escapes `<`, `>`, `&` (e.g. every selector error's `<nil>`): byte-identical.
  // The apiserver's JSON serializer (json.Encoder) ends the body with a newline.
  const body = Buffer.from(`${goJSON(status)}\n`);
  const headers: Record<string, string | number> = {
    'content-type': 'application/json',
    'cache-control': 'no-cache, private',
    'content-length': body.length,
  };
  const retry = status.details?.retryAfterSeconds;
  if (retry !== undefined) headers['retry-after'] = String(retry);
  res.writeHead(status.code, headers);
  res.end(body);
}
