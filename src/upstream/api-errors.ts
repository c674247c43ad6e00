/**
 * Classification of upstream errors as client-go's reflector does it (apimachinery
 * `pkg/api/errors`: `IsResourceExpired`, `IsGone`, `IsTooManyRequests`, `IsInternalError`;
 * `utilnet.IsConnectionRefused`). The error classes themselves are in the catalogue
 * (util/errors.ts: {@link UpstreamError}, {@link ConnectionRefusedError}).
 */
import { ConnectionRefusedError, UpstreamError } from '../util/errors.ts';

/**
 * 410 Gone / reason Expired or Gone: the requested resourceVersion was compacted
 * (apimachinery `apierrors.IsResourceExpired` || `IsGone`; client-go reflector `isExpiredError`).
 */
export function isExpired(err: unknown): boolean {
  return (
    err instanceof UpstreamError &&
    (err.statusCode === 410 || err.reason === 'Expired' || err.reason === 'Gone')
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
  return (
    (err.statusCode === 504 || err.statusCode === 500) && /too large resource version/i.test(err.message)
  );
}

/**
 * The apiserver refused a watch-list because its WatchList feature gate is off: 422 Invalid
 * naming `sendInitialEvents` (apimachinery `validation.ValidateListOptions`:
 * "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled").
 */
export function isWatchListDisabled(err: unknown): boolean {
  return (
    err instanceof UpstreamError &&
    err.statusCode === 422 &&
    /WatchList feature gate is enabled/.test(err.message)
  );
}

/** 429 Too Many Requests (apimachinery `apierrors.IsTooManyRequests`). */
export function isTooManyRequests(err: unknown): boolean {
  return err instanceof UpstreamError && (err.statusCode === 429 || err.reason === 'TooManyRequests');
}

/** 5xx other than the too-large-RV timeout (apimachinery `apierrors.IsInternalError`, widened to 5xx). */
export function isInternalError(err: unknown): boolean {
  return err instanceof UpstreamError && err.statusCode >= 500 && !isTooLargeResourceVersion(err);
}

/**
 * A {@link ConnectionRefusedError}, or ECONNREFUSED anywhere in the cause chain of an HTTP
 * client error (k8s.io/apimachinery `utilnet.IsConnectionRefused`).
 */
export function isConnectionRefused(err: unknown): boolean {
  let e: unknown = err;
  for (let i = 0; i < 5 && e && typeof e === 'object'; i++) {
    if (e instanceof ConnectionRefusedError) return true;
    if ((e as { code?: unknown }).code === 'ECONNREFUSED') return true;
    const errors = (e as { errors?: unknown }).errors;
    if (Array.isArray(errors) && errors.some((x) => isConnectionRefused(x))) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}
