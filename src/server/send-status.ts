/**
 * Writes a `metav1.Status` error the way the apiserver does (`responsewriters.ErrorNegotiated`):
 * encoded as the request's `Accept` negotiates for an error (JSON, protobuf, or the indented
 * JSON of `WriteRawJSON` when no clause qualifies, e.g. a Table-only Accept), with
 * `Retry-After` when the Status carries `retryAfterSeconds` (429, 504 too-large RV).
 */
import type { ServerResponse } from 'node:http';
import { statusMediaType } from '../apimachinery/accept.ts';
import { goJSON } from '../apimachinery/go-json.ts';
import { encodeParsed, objectAnswer, PROTOBUF_CONTENT_TYPE } from '../apimachinery/protobuf/envelope.ts';
import type { Status } from '../apimachinery/status.ts';
import { toStatusError } from '../util/errors.ts';
import { isPrettyPrint } from './delegate.ts';

/**
 * Sends `err` on a raw response (headers must not have been sent). Anything thrown is accepted:
 * it is mapped to its Status by the catalogue's {@link toStatusError} (a `StatusError` as is,
 * an upstream Status as the upstream worded it, everything else 500 InternalError). The
 * encoding follows the request's `Accept` (`res.req`), {@link statusBody}.
 */
export function writeStatus(res: ServerResponse, err: unknown): void {
  const { status } = toStatusError(err);
  const { body, contentType } = statusBody(
    status,
    res.req?.headers.accept,
    res.req?.url,
    res.req?.headers['user-agent'],
  );
  const headers: Record<string, string | number> = {
    'content-type': contentType,
    'cache-control': 'no-cache, private',
    'content-length': body.length,
  };
  const retry = status.details?.retryAfterSeconds;
  if (retry !== undefined) headers['retry-after'] = String(retry);
  res.writeHead(status.code, headers);
  res.end(body);
}

/**
 * The apiserver's error body for `status` and a request's `Accept`, URL (its `pretty` query) and
 * User-Agent (`WriteObjectNegotiated` under `DefaultEndpointRestrictions`,
 * k8s.io/apiserver v0.37.2 `endpoints/handlers/responsewriters/writers.go`):
 *
 * - protobuf picked: `k8s\0` + Unknown{TypeMeta v1/Status, the Status message};
 * - JSON picked: Go's `json.Encoder` (compact, HTML-safe escapes, a final newline), or its
 *   pretty serializer (`json.MarshalIndent(…, "", "  ")`, no newline) for a clause's
 *   `pretty=1`, a true `pretty` query or a curl/Wget/browser User-Agent;
 * - no clause qualifies (`as=Table`/`as=PartialObjectMetadata…` only): `WriteRawJSON`, the
 *   same indented JSON.
 *
 * YAML and CBOR Accepts get the compact JSON: the cache passes such requests upstream before
 * any error of its own, so only the proxy's own refusals (429, 503) reach them.
 */
export function statusBody(
  status: Status,
  accept: string | undefined,
  url: string | undefined,
  userAgent: string | undefined,
): { body: Buffer; contentType: string } {
  const media = statusMediaType(accept);
  if (media?.subtype === 'vnd.kubernetes.protobuf') {
    const message = encodeParsed('apimachinery/pkg/apis/meta/v1.Status', status);
    return { body: objectAnswer('v1', 'Status', message), contentType: PROTOBUF_CONTENT_TYPE };
  }
  const indented =
    media === undefined || (media.subtype === 'json' && (media.pretty || isPrettyPrint(url, userAgent)));
  // Go's encoding/json escapes `<`, `>`, `&` (e.g. every selector error's `<nil>`): byte-identical.
  // Its json.Encoder (the compact serializer) ends the body with a newline; MarshalIndent does not.
  const body = indented ? goJSON(status, 2) : `${goJSON(status)}\n`;
  return { body: Buffer.from(body), contentType: 'application/json' };
}
