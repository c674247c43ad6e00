/**
 * The reflector's error classification (client-go `tools/cache/reflector.go`: `isExpiredError`,
 * `isTooLargeResourceVersionError`, watchList's `isErrorRetriableWithSideEffectsFn`, the error
 * switch of `handleWatch`) and the two control-flow signals that never leave the reflector.
 * The reflector's catalogue errors (`VeryShortWatchError`, `WatchListIncompleteError`,
 * `ResourceVersionError`) are in util/errors.ts.
 */
import {
  isConnectionRefused,
  isExpired,
  isTooLargeResourceVersion,
  isTooManyRequests,
} from '../upstream/api-errors.ts';
import { ResourceVersionError, VeryShortWatchError } from '../util/errors.ts';

/** `stop()` was called: unwinds the loop; never recorded as an error. */
export class StopRequested extends Error {}

/** The liveness watchdog closed a silent stream (see liveness.ts); the watch is restarted. */
export class LivenessExpired extends Error {}

/**
 * The resourceVersion resumed from is gone (410) or unknown to this server (too large): start
 * over from RV="" (client-go `isExpiredError(err) || isTooLargeResourceVersionError(err)`).
 */
export function isResourceVersionUnavailable(err: unknown): boolean {
  return isExpired(err) || isTooLargeResourceVersion(err);
}

/**
 * The upstream is refusing requests for now (connection refused, 429): retry the same request
 * after a backoff, without relisting.
 */
export function isRefusedForNow(err: unknown): boolean {
  return isConnectionRefused(err) || isTooManyRequests(err);
}

/**
 * The upstream's resourceVersions do not parse as uint64 (the cache threw
 * `KCP_ERR_RESOURCE_VERSION_NOT_UINT64`): retrying cannot help; the resource is served by
 * pass-through only (issue 11 item 9).
 */
export function isUncacheable(err: unknown): boolean {
  return err instanceof ResourceVersionError && err.code === 'KCP_ERR_RESOURCE_VERSION_NOT_UINT64';
}

/** The relist reason after a watch that ended with an error needing a relist. */
export function relistReasonOf(err: unknown): 'very_short_watch' | 'watch_error' {
  return err instanceof VeryShortWatchError ? 'very_short_watch' : 'watch_error';
}

/** `Name: message` for logs and `ReflectorStatus.lastError`. */
export function errText(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}
