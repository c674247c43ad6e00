/**
 * Bounded label values for the request metrics (`kube_cache_proxy_requests_total`,
 * `kube_cache_proxy_upstream_requests_total` and their histograms). Every value a client can
 * choose would otherwise make series without end (a `…/proxy/<any path>` per path, a resource
 * name per typo or scanner request), each kept by the registry forever. The apiserver has the
 * same rules in `staging/src/k8s.io/apiserver/pkg/endpoints/metrics/metrics.go`:
 * - `verb`: one of a fixed set, anything else `other` (`cleanVerb`, `validRequestMethods`);
 * - `subresource`: ONE path segment (`request.RequestInfo.Subresource`, `requestinfo.go`);
 * - `group`/`version`/`resource`: only registered routes are instrumented there, so only real
 *   resources make series; here the first {@link DEFAULT_MAX_RESOURCE_LABEL_SETS} distinct
 *   well-formed (group, version, resource, subresource) sets keep their values, later ones and
 *   malformed ones are `other`;
 * - `code`: a three-digit HTTP status 100–599, else `other` (`<error>` is kept: no answer).
 */

/** The value that stands for everything beyond a label's bound. */
export const OTHER = 'other';

/**
 * Distinct (group, version, resource, subresource) label sets kept per metrics registry before
 * new ones become `other`: every built-in resource with its subresources and versions is about
 * 300, so room for several hundred CRDs is left.
 */
export const DEFAULT_MAX_RESOURCE_LABEL_SETS = 1000;

/**
 * Verbs kept as they are (apiserver `validRequestMethods`, plus HEAD and OPTIONS which
 * non-resource paths report as their HTTP method).
 */
const VERBS = new Set([
  'APPLY',
  'CONNECT',
  'CREATE',
  'DELETE',
  'DELETECOLLECTION',
  'GET',
  'LIST',
  'PATCH',
  'POST',
  'PROXY',
  'PUT',
  'UPDATE',
  'WATCH',
  'WATCHLIST',
  'HEAD',
  'OPTIONS',
]);

/** A `verb` label value: the verb when it is one of the fixed set, else {@link OTHER}. */
export function boundVerb(verb: string): string {
  return VERBS.has(verb) ? verb : OTHER;
}

/** A `code` label value: `<error>` or a status 100–599, else {@link OTHER}. */
export function boundCode(code: string | number): string {
  const s = String(code);
  if (s === '<error>') return s;
  return /^[1-5][0-9]{2}$/.test(s) ? s : OTHER;
}

/**
 * The `subresource` label of a request whose path continues after the object's name: its first
 * segment only (`proxy/a/b` → `proxy`), like the apiserver's `RequestInfo.Subresource`.
 */
export function subresourceLabel(subresource: string | undefined): string {
  if (subresource === undefined) return '';
  const i = subresource.indexOf('/');
  return i < 0 ? subresource : subresource.slice(0, i);
}

/** The resource labels of one request ("" each for non-resource paths). */
export interface ResourceLabels {
  group: string;
  version: string;
  resource: string;
  subresource: string;
}

/** A DNS subdomain (groups) or a lower-case path segment (versions, resources, subresources). */
const GROUP = /^(?:[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?)?$/;
const SEGMENT = /^(?:[a-z0-9](?:[-a-z0-9.]{0,61}[a-z0-9])?)?$/;

/**
 * Keeps the first `max` distinct well-formed resource label sets and answers {@link OTHER} for
 * the group, version, resource and subresource of any other (non-resource paths, all "", are
 * always kept). One per metrics registry, shared by the downstream and upstream metrics.
 */
export class ResourceLabelBounds {
  readonly #seen = new Set<string>();
  readonly #max: number;

  constructor(max = DEFAULT_MAX_RESOURCE_LABEL_SETS) {
    this.#max = max;
  }

  /** `l` when it is kept, else every non-empty value replaced by {@link OTHER}. */
  bound(l: ResourceLabels): ResourceLabels {
    const key = `${l.group}/${l.version}/${l.resource}/${l.subresource}`;
    if (key === '///' || this.#seen.has(key)) return l;
    const wellFormed =
      GROUP.test(l.group) &&
      SEGMENT.test(l.version) &&
      SEGMENT.test(l.resource) &&
      SEGMENT.test(l.subresource);
    if (wellFormed && this.#seen.size < this.#max) {
      this.#seen.add(key);
      return l;
    }
    return {
      group: OTHER,
      version: OTHER,
      resource: OTHER,
      subresource: l.subresource === '' ? '' : OTHER,
    };
  }
}
