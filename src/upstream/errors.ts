import type { Status } from '../apimachinery/status.ts';

/**
 * A non-2xx answer from the upstream apiserver (or an ERROR event on a watch stream), with the
 * `metav1.Status` it carried when it carried one. `code` is the HTTP status code; `reason` the
 * Status reason (`Expired`, `Gone`, `TooManyRequests`, `InternalError`, …) or "" when absent.
 * Mirrors apimachinery's `apierrors.StatusError` so the reflector can classify errors as
 * client-go does (`apierrors.IsResourceExpired`, `IsTooManyRequests`, `IsInternalError`).
 */
export class UpstreamError extends Error {
  override readonly name = 'UpstreamError';
  readonly code: number;
  readonly reason: string;
  readonly status: Partial<Status> | undefined;

  constructor(code: number, message: string, status?: Partial<Status>) {
    super(message);
    this.code = code;
    this.reason = typeof status?.reason === 'string' ? status.reason : '';
    this.status = status;
  }

  /** Builds the error from a response body that may or may not be a `metav1.Status`. */
  static fromBody(code: number, body: string, what: string): UpstreamError {
    let status: Partial<Status> | undefined;
    try {
      const parsed = JSON.parse(body) as unknown;
      if (parsed && typeof parsed === 'object' && (parsed as { kind?: unknown }).kind === 'Status') {
        status = parsed as Partial<Status>;
      }
    } catch {
      // not JSON: keep the text in the message
    }
    const msg = status?.message ?? body.slice(0, 200);
    return new UpstreamError(code, `${what}: ${code} ${msg}`, status);
  }

  /** Builds the error from the `metav1.Status` object of a watch ERROR event. */
  static fromStatus(status: Partial<Status>): UpstreamError {
    const code = typeof status.code === 'number' ? status.code : 500;
    return new UpstreamError(code, `watch error: ${code} ${status.message ?? status.reason ?? ''}`, status);
  }
}

/**
 * 410 Gone / reason Expired or Gone: the requested resourceVersion was compacted
 * (apimachinery `apierrors.IsResourceExpired` || `IsGone`; client-go reflector `isExpiredError`).
 */
export function isExpired(err: unknown): boolean {
  return (
    err instanceof UpstreamError && (err.code === 410 || err.reason === 'Expired' || err.reason === 'Gone')
  );
}

/**
 * "Too large resource version": the apiserver answers 504 Timeout with a
 * `ResourceVersionTooLarge` cause (client-go reflector `isTooLargeResourceVersionError`).
 */
export function isTooLargeResourceVersion(err: unknown): boolean {
  if (!(err instanceof UpstreamError)) return false;
  const causes = err.status?.details?.causes ?? [];
  if (causes.some((c) => c.reason === 'ResourceVersionTooLarge')) return true;
  return (err.code === 504 || err.code === 500) && /too large resource version/i.test(err.message);
}

/** 429 Too Many Requests (apimachinery `apierrors.IsTooManyRequests`). */
export function isTooManyRequests(err: unknown): boolean {
  return err instanceof UpstreamError && (err.code === 429 || err.reason === 'TooManyRequests');
}

/** 5xx other than the too-large-RV timeout (apimachinery `apierrors.IsInternalError`, widened to 5xx). */
export function isInternalError(err: unknown): boolean {
  return err instanceof UpstreamError && err.code >= 500 && !isTooLargeResourceVersion(err);
}

/** ECONNREFUSED anywhere in the cause chain (k8s.io/apimachinery `utilnet.IsConnectionRefused`). */
export function isConnectionRefused(err: unknown): boolean {
  let e: unknown = err;
  for (let i = 0; i < 5 && e && typeof e === 'object'; i++) {
    if ((e as { code?: unknown }).code === 'ECONNREFUSED') return true;
    const errors = (e as { errors?: unknown }).errors;
    if (Array.isArray(errors) && errors.some((x) => isConnectionRefused(x))) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}
