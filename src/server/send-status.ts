/**
 * Writes a `metav1.Status` error the way the apiserver does (`responsewriters.ErrorNegotiated`):
 * JSON body, `Content-Type: application/json`, and `Retry-After` when the Status carries
 * `retryAfterSeconds` (429, 504 too-large RV).
 */
import type { ServerResponse } from 'node:http';
import { goJSON } from '../apimachinery/go-json.ts';
import { internalError, StatusError } from '../apimachinery/status.ts';

/** Converts anything thrown into the StatusError to answer with (unknown errors → 500). */
export function toStatusError(err: unknown): StatusError {
  if (err instanceof StatusError) return err;
  return internalError(err instanceof Error ? err.message : String(err));
}

/** Sends `err` on a raw response (headers must not have been sent). */
export function writeStatus(res: ServerResponse, err: StatusError): void {
  // Go's encoding/json escapes `<`, `>`, `&` (e.g. every selector error's `<nil>`): byte-identical.
  const body = Buffer.from(goJSON(err.status));
  const headers: Record<string, string | number> = {
    'content-type': 'application/json',
    'cache-control': 'no-cache, private',
    'content-length': body.length,
  };
  const retry = err.status.details?.retryAfterSeconds;
  if (retry !== undefined) headers['retry-after'] = String(retry);
  res.writeHead(err.code, headers);
  res.end(body);
}
