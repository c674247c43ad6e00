/**
 * The internal error catalogue, in the style of undici's `lib/core/errors.js` and fastify's
 * `lib/errors.js`: every error kube-cache-proxy itself raises that can reach another layer, the
 * operator or a client has a `code` listed once in {@link ERROR_CODES}, with a fixed `name`, and
 * is a {@link KcpError}. {@link toStatusError} is the one mapping from anything thrown to the
 * `metav1.Status` a client is answered with. docs/errors.md documents every code.
 *
 * Client-facing errors the proxy words like the apiserver (`StatusError`: 400, 404, 410, 422, 429,
 * 501, 503) live in apimachinery/status.ts; they are already a Status and pass through unchanged.
 */
import { internalError, type Status, StatusError } from '../apimachinery/status.ts';

/** How an error of a code is answered when it reaches a client. */
export type StatusMapping =
  /** The upstream's own `metav1.Status` when the error carries one, else 500 InternalError. */
  | 'upstream'
  /** 500 InternalError, `Internal error occurred: <message>` (apimachinery `NewInternalError`). */
  | 'internal';

/** One catalogue entry. */
export interface ErrorSpec {
  /** The `name` every error of this code has. */
  readonly name: string;
  readonly status: StatusMapping;
}

/** Every internal error code, defined once: code → class name and Status mapping. */
export const ERROR_CODES = {
  KCP_ERR_UPSTREAM_STATUS: { name: 'UpstreamError', status: 'upstream' },
  KCP_ERR_CONNECTION_REFUSED: { name: 'ConnectionRefusedError', status: 'internal' },
  KCP_ERR_KUBECONFIG: { name: 'KubeconfigError', status: 'internal' },
  KCP_ERR_API_CLIENT_UNAVAILABLE: { name: 'ApiClientUnavailableError', status: 'internal' },
  KCP_ERR_DEPENDENCY_MISSING: { name: 'DependencyMissingError', status: 'internal' },
  KCP_ERR_DISCOVERY_INVALID_NAME: { name: 'DiscoveryError', status: 'internal' },
  KCP_ERR_DISCOVERY_NOT_FOUND: { name: 'DiscoveryError', status: 'internal' },
  KCP_ERR_DISCOVERY_NOT_LIST_WATCHABLE: { name: 'DiscoveryError', status: 'internal' },
  KCP_ERR_DISCOVERY_FAILED: { name: 'DiscoveryError', status: 'internal' },
  KCP_ERR_WATCH_TOO_SHORT: { name: 'VeryShortWatchError', status: 'internal' },
  KCP_ERR_WATCH_LIST_INCOMPLETE: { name: 'WatchListIncompleteError', status: 'internal' },
  KCP_ERR_LIST_NO_RESOURCE_VERSION: { name: 'ResourceVersionError', status: 'internal' },
  KCP_ERR_UNEARNED_RESOURCE_VERSION: { name: 'ResourceVersionError', status: 'internal' },
  KCP_ERR_RESOURCE_VERSION_NOT_UINT64: { name: 'ResourceVersionError', status: 'internal' },
  KCP_ERR_CONFIG: { name: 'ConfigError', status: 'internal' },
  KCP_ERR_LISTEN_ADDRESS: { name: 'ListenAddressError', status: 'internal' },
} as const satisfies Record<`KCP_ERR_${string}`, ErrorSpec>;

/** A catalogue code. */
export type KcpErrorCode = keyof typeof ERROR_CODES;

/**
 * Base class of every catalogue error: `code` is fixed per class (or per constructor argument
 * where one class has several codes) and `name` comes from {@link ERROR_CODES}.
 */
export class KcpError<C extends KcpErrorCode = KcpErrorCode> extends Error {
  readonly code: C;
  constructor(code: C, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
    this.name = ERROR_CODES[code].name;
  }
}

/**
 * A non-2xx answer from the upstream apiserver (or an ERROR event on a watch stream), with the
 * `metav1.Status` it carried when it carried one. `statusCode` is the HTTP status code; `reason`
 * the Status reason (`Expired`, `Gone`, `TooManyRequests`, `InternalError`, …) or "" when absent.
 * Mirrors apimachinery's `apierrors.StatusError` so the reflector can classify errors as
 * client-go does (upstream/errors.ts: `isExpired`, `isTooManyRequests`, `isInternalError`).
 */
export class UpstreamError extends KcpError<'KCP_ERR_UPSTREAM_STATUS'> {
  readonly statusCode: number;
  readonly reason: string;
  readonly status: Partial<Status> | undefined;

  constructor(statusCode: number, message: string, status?: Partial<Status>) {
    super('KCP_ERR_UPSTREAM_STATUS', message);
    this.statusCode = statusCode;
    this.reason = typeof status?.reason === 'string' ? status.reason : '';
    this.status = status;
  }

  /** Builds the error from a response body that may or may not be a `metav1.Status`. */
  static fromBody(statusCode: number, body: string, what: string): UpstreamError {
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
    return new UpstreamError(statusCode, `${what}: ${statusCode} ${msg}`, status);
  }

  /** Builds the error from the `metav1.Status` object of a watch ERROR event. */
  static fromStatus(status: Partial<Status>): UpstreamError {
    const code = typeof status.code === 'number' ? status.code : 500;
    return new UpstreamError(code, `watch error: ${code} ${status.message ?? status.reason ?? ''}`, status);
  }
}

/** The upstream refused the connection (ECONNREFUSED); `cause` is the HTTP client's error. */
export class ConnectionRefusedError extends KcpError<'KCP_ERR_CONNECTION_REFUSED'> {
  constructor(message: string, options?: ErrorOptions) {
    super('KCP_ERR_CONNECTION_REFUSED', message, options);
  }
}

/** No usable kubeconfig: none found, a file that cannot be read or parsed, or no current cluster / server URL. */
export class KubeconfigError extends KcpError<'KCP_ERR_KUBECONFIG'> {
  constructor(message: string, options?: ErrorOptions) {
    super('KCP_ERR_KUBECONFIG', message, options);
  }
}

/** client-node's generated API client was called although the CLI loads client-node without it. */
export class ApiClientUnavailableError extends KcpError<'KCP_ERR_API_CLIENT_UNAVAILABLE'> {
  constructor(message: string) {
    super('KCP_ERR_API_CLIENT_UNAVAILABLE', message);
  }
}

/**
 * A production dependency could not be loaded: the bundled CLI runs without its package's
 * `node_modules` (src/upstream/undici-core.ts). `cause` is the `MODULE_NOT_FOUND` error.
 */
export class DependencyMissingError extends KcpError<'KCP_ERR_DEPENDENCY_MISSING'> {
  constructor(message: string, options?: ErrorOptions) {
    super('KCP_ERR_DEPENDENCY_MISSING', message, options);
  }
}

/** The discovery codes of {@link DiscoveryError}. */
export type DiscoveryErrorCode =
  | 'KCP_ERR_DISCOVERY_INVALID_NAME'
  | 'KCP_ERR_DISCOVERY_NOT_FOUND'
  | 'KCP_ERR_DISCOVERY_NOT_LIST_WATCHABLE'
  | 'KCP_ERR_DISCOVERY_FAILED';

/** Why a configured resource cannot be cached (upstream/discovery.ts). */
export class DiscoveryError extends KcpError<DiscoveryErrorCode> {
  /** The resource as configured. */
  readonly resource: string;
  /**
   * `KCP_ERR_DISCOVERY_NOT_FOUND` only: the whole group-version is not served (not just the
   * resource), so no other resource of it is either.
   */
  groupVersionMissing = false;
  constructor(code: DiscoveryErrorCode, resource: string, message: string, cause?: unknown) {
    super(code, message, cause === undefined ? undefined : { cause });
    this.resource = resource;
  }
}

/** A watch closed within 1 s without any event (client-go `VeryShortWatchError`). */
export class VeryShortWatchError extends KcpError<'KCP_ERR_WATCH_TOO_SHORT'> {
  constructor(message: string) {
    super('KCP_ERR_WATCH_TOO_SHORT', message);
  }
}

/** The watch-list stream ended before the `k8s.io/initial-events-end` bookmark. */
export class WatchListIncompleteError extends KcpError<'KCP_ERR_WATCH_LIST_INCOMPLETE'> {
  constructor(message: string) {
    super('KCP_ERR_WATCH_LIST_INCOMPLETE', message);
  }
}

/** The resourceVersion codes of {@link ResourceVersionError}. */
export type ResourceVersionErrorCode =
  | 'KCP_ERR_LIST_NO_RESOURCE_VERSION'
  | 'KCP_ERR_UNEARNED_RESOURCE_VERSION'
  | 'KCP_ERR_RESOURCE_VERSION_NOT_UINT64';

/** A resourceVersion the proxy cannot build a consistent cache on. */
export class ResourceVersionError extends KcpError<ResourceVersionErrorCode> {}

/** A configuration error: one line naming the flag, variable or file key; exit code 2. */
export class ConfigError extends KcpError<'KCP_ERR_CONFIG'> {
  constructor(message: string) {
    super('KCP_ERR_CONFIG', message);
  }
}

/** A listen address that is not `host:port`. */
export class ListenAddressError extends KcpError<'KCP_ERR_LISTEN_ADDRESS'> {
  constructor(message: string) {
    super('KCP_ERR_LISTEN_ADDRESS', message);
  }
}

/**
 * The one mapping from anything thrown to the Status a client is answered with:
 * a `StatusError` passes through; an {@link UpstreamError} carrying a `metav1.Status` keeps it;
 * everything else is the apiserver's 500 InternalError (`Internal error occurred: <message>`).
 */
export function toStatusError(err: unknown): StatusError {
  if (err instanceof StatusError) return err;
  if (err instanceof UpstreamError && err.status !== undefined) {
    const s = err.status;
    return new StatusError(
      typeof s.code === 'number' ? s.code : err.statusCode,
      s.reason ?? '',
      s.message ?? err.message,
      s.details,
    );
  }
  return internalError(err instanceof Error ? err.message : String(err));
}
