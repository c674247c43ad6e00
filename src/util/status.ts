/**
 * Client-facing errors: a {@link StatusError} carries a `metav1.Status` exactly as the apiserver
 * shapes it (apimachinery `pkg/api/errors/errors.go`). Constructors name the apiserver helper they
 * copy. Every layer may throw these; only `server/` writes them to the wire.
 */

/** `metav1.StatusDetails`. */
export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: { reason?: string; message?: string; field?: string }[];
  retryAfterSeconds?: number;
}

/** `metav1.Status` with `status: "Failure"`. */
export interface Status {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Failure' | 'Success';
  message: string;
  reason: string;
  details?: StatusDetails;
  code: number;
}

/** An error that the server answers with `status.code` and the Status JSON body. */
export class StatusError extends Error {
  override readonly name = 'StatusError';
  readonly status: Status;
  constructor(code: number, reason: string, message: string, details?: StatusDetails) {
    super(message);
    this.status = {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message,
      reason,
      code,
    };
    if (details) this.status.details = details;
  }
  get code(): number {
    return this.status.code;
  }
}

/** `errors.NewResourceExpired` (410 Expired), e.g. "too old resource version: 5 (10)". */
export function expired(message: string): StatusError {
  return new StatusError(410, 'Expired', message);
}

/** The watch-cache message for a watch/list below the window (apiserver cacher `watch_cache.go`). */
export function tooOldResourceVersion(requested: bigint | string, oldest: bigint | string): StatusError {
  return expired(`too old resource version: ${requested} (${oldest})`);
}

/**
 * `storage.NewTooLargeResourceVersionError` as the apiserver returns it: 504 Timeout with
 * reason `Timeout`, a `ResourceVersionTooLarge` cause and `retryAfterSeconds: 1`.
 */
export function tooLargeResourceVersion(requested: bigint | string, current: bigint | string): StatusError {
  const message = `Too large resource version: ${requested}, current: ${current}`;
  return new StatusError(504, 'Timeout', message, {
    causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }],
    retryAfterSeconds: 1,
  });
}

/** `errors.NewNotFound`: `pods "x" not found`. */
export function notFound(group: string, resource: string, name: string): StatusError {
  const qualified = group ? `${resource}.${group}` : resource;
  return new StatusError(404, 'NotFound', `${qualified} "${name}" not found`, {
    name,
    group,
    kind: resource,
  });
}

/** `errors.NewBadRequest`. */
export function badRequest(message: string): StatusError {
  return new StatusError(400, 'BadRequest', message);
}

/** `errors.NewTooManyRequests`: 429 with `retryAfterSeconds`. */
export function tooManyRequests(message: string, retryAfterSeconds: number): StatusError {
  return new StatusError(429, 'TooManyRequests', message, { retryAfterSeconds });
}

/** `errors.NewInternalError`. */
export function internalError(message: string): StatusError {
  return new StatusError(500, 'InternalError', `Internal error occurred: ${message}`, {
    causes: [{ message }],
  });
}
