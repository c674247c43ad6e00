/**
 * Query parameters of LIST and WATCH requests, decoded and validated exactly as the apiserver
 * does before it touches storage (`apiserver/pkg/endpoints/handlers/get.go` `ListResource`):
 * 1. `ParameterCodec.DecodeParameters` (integer and boolean conversion; a failure is
 *    400 BadRequest carrying Go's `strconv` message),
 * 2. `SetListOptionsDefaults` (WatchList: a watch at RV ""/"0" means sendInitialEvents=true),
 * 3. `ValidateListOptions` (`apimachinery/pkg/apis/meta/internalversion/validation`), whose
 *    errors are 422 `ListOptions.meta.k8s.io "" is invalid: …`.
 * Selectors are parsed by the cache's parsers (they throw their own 400s).
 */

import { goQuote } from './go-quote.ts';
import { isWatchParam } from './request-info.ts';
import { badRequest, type FieldError, forbidden, invalid, notSupported } from './status.ts';

/** Decoded `metav1.ListOptions` (internal version), as the handler sees it after defaulting. */
export interface ListOptions {
  labelSelector: string;
  fieldSelector: string;
  watch: boolean;
  allowWatchBookmarks: boolean;
  /** `''` when absent. Opaque here; see {@link parseResourceVersion}. */
  resourceVersion: string;
  resourceVersionMatch: string;
  /** Seconds; undefined when absent. */
  timeoutSeconds?: number;
  /** 0 = no limit (the apiserver treats limit <= 0 as none). */
  limit: number;
  continue: string;
  /** undefined when absent (and not defaulted). */
  sendInitialEvents?: boolean;
}

const INT64_MAX = (1n << 63n) - 1n;
const INT64_MIN = -(1n << 63n);

/**
 * Go's `strconv.ParseInt(s, 10, 64)` as `runtime.Convert_Slice_string_To_int64` calls it.
 * Throws the BadRequest the apiserver answers, e.g. `strconv.ParseInt: parsing "x": invalid syntax`.
 */
function parseInt64(s: string): number {
  if (!/^[+-]?[0-9]+$/.test(s)) throw badRequest(`strconv.ParseInt: parsing ${goQuote(s)}: invalid syntax`);
  const v = BigInt(s);
  if (v > INT64_MAX || v < INT64_MIN) {
    throw badRequest(`strconv.ParseInt: parsing ${goQuote(s)}: value out of range`);
  }
  return Number(v);
}

/**
 * Whether the integer parameters of `query` (`timeoutSeconds`, `limit`: their first values)
 * convert as `ParameterCodec.DecodeParameters` converts them (`strconv.ParseInt`, so an empty
 * value fails too). `requestinfo.go` drops what it learnt from the list options when they do not
 * decode (`request-attributes.ts`).
 */
export function listIntegersDecode(query: URLSearchParams): boolean {
  try {
    for (const k of ['timeoutSeconds', 'limit']) {
      const v = query.get(k);
      if (v !== null) parseInt64(v);
    }
    return true;
  } catch {
    return false;
  }
}

/**
 * Decodes and validates LIST/WATCH query parameters. `decodeSelectors` parses the selectors
 * at the point the apiserver does (between decoding and validation); it may throw.
 * @throws StatusError 400 (unparsable integers) or 422 (ValidateListOptions).
 */
export function parseListOptions(
  query: URLSearchParams,
  decodeSelectors?: (o: ListOptions) => void,
  watchListEnabled = true,
): ListOptions {
  const first = (k: string) => query.get(k);
  const opts: ListOptions = {
    labelSelector: first('labelSelector') ?? '',
    fieldSelector: first('fieldSelector') ?? '',
    watch: isWatchParam(first('watch')),
    allowWatchBookmarks: isWatchParam(first('allowWatchBookmarks')),
    resourceVersion: first('resourceVersion') ?? '',
    resourceVersionMatch: first('resourceVersionMatch') ?? '',
    limit: 0,
    continue: first('continue') ?? '',
  };
  // Conversion order of the generated url.Values → v1.ListOptions converter.
  const timeout = first('timeoutSeconds');
  if (timeout !== null) opts.timeoutSeconds = parseInt64(timeout);
  const limit = first('limit');
  if (limit !== null) opts.limit = parseInt64(limit);
  const sie = first('sendInitialEvents');
  if (sie !== null) opts.sendInitialEvents = isWatchParam(sie);

  // v1 → internal conversion parses the selectors (their errors come before validation's).
  decodeSelectors?.(opts);
  setListOptionsDefaults(opts, watchListEnabled);
  const errs = validateListOptions(opts, watchListEnabled);
  if (errs.length > 0) throw invalid('meta.k8s.io', 'ListOptions', '', errs);
  return opts;
}

/** `metainternalversion.SetListOptionsDefaults`. */
function setListOptionsDefaults(o: ListOptions, watchListEnabled: boolean): void {
  if (!watchListEnabled) return;
  if (o.sendInitialEvents !== undefined || o.resourceVersionMatch !== '') return;
  const legacy = o.resourceVersion === '' || o.resourceVersion === '0';
  if (o.watch && legacy) {
    o.sendInitialEvents = true;
    o.resourceVersionMatch = 'NotOlderThan';
  }
}

/** `validation.ValidateListOptions` + `validateWatchOptions`, in their order. */
function validateListOptions(o: ListOptions, watchListEnabled: boolean): FieldError[] {
  const errs: FieldError[] = [];
  const match = o.resourceVersionMatch;
  if (o.watch) {
    if (o.sendInitialEvents !== undefined) {
      if (match !== 'NotOlderThan') {
        errs.push(
          forbidden(
            'resourceVersionMatch',
            'sendInitialEvents requires setting resourceVersionMatch to NotOlderThan',
          ),
        );
      }
      if (!watchListEnabled) {
        errs.push(
          forbidden(
            'sendInitialEvents',
            'sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled',
          ),
        );
      }
    }
    if (match !== '') {
      if (o.sendInitialEvents === undefined) {
        errs.push(
          forbidden(
            'resourceVersionMatch',
            'resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided',
          ),
        );
      }
      if (match !== 'NotOlderThan') errs.push(notSupported('resourceVersionMatch', match, ['NotOlderThan']));
      if (o.continue !== '') {
        errs.push(
          forbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden when continue is provided'),
        );
      }
    }
    return errs;
  }
  if (match !== '') {
    if (o.resourceVersion === '') {
      errs.push(
        forbidden(
          'resourceVersionMatch',
          'resourceVersionMatch is forbidden unless resourceVersion is provided',
        ),
      );
    }
    if (o.continue !== '') {
      errs.push(
        forbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden when continue is provided'),
      );
    }
    if (match !== 'Exact' && match !== 'NotOlderThan') {
      errs.push(notSupported('resourceVersionMatch', match, ['Exact', 'NotOlderThan', '']));
    }
    if (match === 'Exact' && o.resourceVersion === '0') {
      errs.push(
        forbidden(
          'resourceVersionMatch',
          'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
        ),
      );
    }
  }
  if (o.sendInitialEvents !== undefined) {
    errs.push(forbidden('sendInitialEvents', 'sendInitialEvents is forbidden for list'));
  }
  return errs;
}

const UINT64_MAX = (1n << 64n) - 1n;

/**
 * A resourceVersion the cache can order: `''` → undefined (unset), otherwise a canonical
 * decimal uint64. Returns null for anything else (the apiserver's own error for it is
 * obtained by passing the request upstream).
 */
export function parseResourceVersion(rv: string): bigint | undefined | null {
  if (rv === '') return undefined;
  if (!/^(0|[1-9][0-9]{0,19})$/.test(rv)) return null;
  const v = BigInt(rv);
  return v > UINT64_MAX ? null : v;
}
