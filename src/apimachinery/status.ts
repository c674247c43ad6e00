/**
 * Client-facing errors: a {@link StatusError} carries a `metav1.Status` exactly as the apiserver
 * shapes it (apimachinery `pkg/api/errors/errors.go`). Constructors name the apiserver helper they
 * copy. Every layer may throw these; only `server/` writes them to the wire.
 */
import { goQuote } from './go-quote.ts';

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
    // Key order as the apiserver serializes metav1.Status (details before code), so bodies
    // are byte-identical, not only equal as JSON.
    this.status = {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message,
      reason,
      ...(details ? { details } : {}),
      code,
    };
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
 * `errors.NewNotFound`: `pods "x" not found`, the name quoted by Go's `%q` ({@link goQuote}:
 * `pods "a\x01b" not found`); `details.name` is the name as it is.
 *
 * Go (apimachinery pkg/api/errors/errors.go):
 *
 * ```go
 * Message: fmt.Sprintf("%s %q not found", qualifiedResource.String(), name),
 * ```
 */
export function notFound(group: string, resource: string, name: string): StatusError {
  const qualified = group ? `${resource}.${group}` : resource;
  // `group` is omitempty in metav1.StatusDetails: absent for the core group.
  const details: StatusDetails = group ? { name, group, kind: resource } : { name, kind: resource };
  return new StatusError(404, 'NotFound', `${qualified} ${goQuote(name)} not found`, details);
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

/**
 * An error that is no `metav1.Status` reaching the apiserver's handler (`responsewriters`
 * `ErrorToAPIStatus`, its default case): 500, the error's text as message, no reason (Go's
 * `StatusReasonUnknown`, "", omitted from the JSON).
 */
export function unknownError(message: string): StatusError {
  const e = new StatusError(500, '', message);
  delete (e.status as Partial<Status>).reason;
  return e;
}

/**
 * One `field.Error` (apimachinery `pkg/util/validation/field/errors.go`). `type` is the
 * `ErrorType` string as it appears in a Status cause's `reason` (`FieldValueForbidden`, …).
 */
export interface FieldError {
  type: 'FieldValueForbidden' | 'FieldValueNotSupported' | 'FieldValueInvalid' | 'FieldValueRequired';
  field: string;
  /** The rejected value; printed Go-`%q` style for strings. Unused for Forbidden/Required. */
  badValue?: string;
  detail: string;
}

const FIELD_TYPE_TEXT: Record<FieldError['type'], string> = {
  FieldValueForbidden: 'Forbidden',
  FieldValueNotSupported: 'Unsupported value',
  FieldValueInvalid: 'Invalid value',
  FieldValueRequired: 'Required value',
};

/** `field.Error.ErrorBody()`: `Forbidden: detail`, `Unsupported value: "x": supported values: …`. */
function fieldErrorBody(e: FieldError): string {
  let s = FIELD_TYPE_TEXT[e.type];
  if (e.type !== 'FieldValueForbidden' && e.type !== 'FieldValueRequired' && e.badValue !== undefined) {
    s += `: ${goQuote(e.badValue)}`;
  }
  if (e.detail) s += `: ${e.detail}`;
  return s;
}

/** `field.NotSupported(path, value, supported)`: detail `supported values: "a", "b"`. */
export function notSupported(field: string, value: string, supported: string[]): FieldError {
  return {
    type: 'FieldValueNotSupported',
    field,
    badValue: value,
    detail: `supported values: ${supported.map(goQuote).join(', ')}`,
  };
}

/** `field.Forbidden(path, detail)`. */
export function forbidden(field: string, detail: string): FieldError {
  return { type: 'FieldValueForbidden', field, detail };
}

/**
 * `errors.NewInvalid(qualifiedKind, name, errs)`: 422 Invalid, message
 * `Kind.group "name" is invalid: <aggregate>` where the aggregate is the single error or
 * `[e1, e2]` (apimachinery `utilerrors.NewAggregate`, duplicates removed).
 */
export function invalid(group: string, kind: string, name: string, errs: FieldError[]): StatusError {
  const msgs = [...new Set(errs.map((e) => `${e.field}: ${fieldErrorBody(e)}`))];
  const qualified = group ? `${kind}.${group}` : kind;
  let message = `${qualified} ${goQuote(name)} is invalid`;
  if (msgs.length === 1) message += `: ${msgs[0]}`;
  else if (msgs.length > 1) message += `: [${msgs.join(', ')}]`;
  const details: StatusDetails = {
    ...(name ? { name } : {}),
    group,
    kind,
    causes: errs.map((e) => ({ reason: e.type, message: fieldErrorBody(e), field: e.field })),
  };
  return new StatusError(422, 'Invalid', message, details);
}

/** `errors.NewServiceUnavailable`: 503 ServiceUnavailable. */
export function serviceUnavailable(message: string): StatusError {
  return new StatusError(503, 'ServiceUnavailable', message);
}
