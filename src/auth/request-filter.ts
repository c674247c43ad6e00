/**
 * The path and method filter of the main listener, after `kubectl proxy`'s
 * (`k8s.io/kubectl/pkg/proxy/proxy_server.go` `FilterServer.accept`, kubectl v0.37.2):
 *
 * ```go
 * func (f *FilterServer) accept(method, path, host string) bool {
 *     if matchesRegexp(path, f.RejectPaths) { return false }
 *     if matchesRegexp(method, f.RejectMethods) { return false }
 *     if matchesRegexp(path, f.AcceptPaths) && matchesRegexp(host, f.AcceptHosts) { return true }
 *     return false
 * }
 * ```
 *
 * A regexp matches anywhere in the string unless anchored (Go's `MatchString`, JS's `test`);
 * the path is the request's decoded path without its query (Go's `req.URL.Path`), so
 * `/api/v1/namespaces/a/pods/p/ex%65c` is the `exec` it names. The host part of kubectl's filter
 * is `--accept-hosts` (`accept-hosts.ts`, checked by the access control). Every request of the
 * main listener passes this filter first, HTTP Upgrade tunnels (exec, attach, port-forward)
 * included, before the cache or the apiserver sees it (docs/design.md §4).
 *
 * Deliberate difference: a refusal is a 403 `metav1.Status` naming the flag that refused it;
 * kubectl proxy answers `403` `text/plain` `Forbidden` (Go's `http.Error`), which kubectl prints
 * as `error: unable to upgrade connection: Forbidden` for an exec.
 */
import type { StatusError } from '../apimachinery/status.ts';
import { proxyForbidden } from './forbidden.ts';

/** Which of the three lists refused a request: the fixed values of the metric's `filter` label. */
export type FilterRule = 'reject-paths' | 'reject-methods' | 'accept-paths';

/** Every {@link FilterRule}, for metrics that pre-create their series. */
export const FILTER_RULES: readonly FilterRule[] = ['reject-paths', 'reject-methods', 'accept-paths'];

/** The three lists, as regular expression sources (validated by the config). */
export interface RequestFilterOptions {
  acceptPaths: readonly string[];
  rejectPaths: readonly string[];
  rejectMethods: readonly string[];
}

/** A refusal: the rule that refused and the 403 to answer. */
export interface FilterRefusal {
  rule: FilterRule;
  status: StatusError;
}

/**
 * The decoded path of an origin-form target without its query, as Go's `url.URL.Path`: each
 * `%XX` is its byte, the bytes read as UTF-8 (an invalid sequence as U+FFFD). A target whose
 * escapes do not parse (`%zz`) is returned as is: Go's server answers it 400 before any handler,
 * and so does the apiserver the proxy passes it to.
 */
export function decodedPath(target: string): string {
  const q = target.indexOf('?');
  const raw = q < 0 ? target : target.slice(0, q);
  if (!raw.includes('%')) return raw;
  if (/%(?![0-9A-Fa-f]{2})/.test(raw)) return raw;
  const bytes = Buffer.from(
    raw.replace(/%([0-9A-Fa-f]{2})/g, (_m, h: string) => String.fromCharCode(Number.parseInt(h, 16))),
    'latin1',
  );
  return bytes.toString('utf8');
}

/** The compiled `--accept-paths`, `--reject-paths` and `--reject-methods`. */
export class RequestFilter {
  readonly #accept: RegExp[];
  readonly #reject: RegExp[];
  readonly #methods: RegExp[];
  readonly #sources: RequestFilterOptions;

  /** `o`: regular expression sources, already validated (`config-values.ts` kind `regexps`). */
  constructor(o: RequestFilterOptions) {
    this.#sources = o;
    this.#accept = o.acceptPaths.map((p) => new RegExp(p));
    this.#reject = o.rejectPaths.map((p) => new RegExp(p));
    this.#methods = o.rejectMethods.map((p) => new RegExp(p));
  }

  /**
   * Whether `method` on `target` (origin form, `/path?query`) passes; a refusal carries the rule
   * and its 403 Status, worded `forbidden: <METHOD> <path> is refused by --reject-paths "<re>"`.
   */
  check(method: string, target: string): FilterRefusal | undefined {
    const path = decodedPath(target);
    const rejected = this.#reject.findIndex((r) => r.test(path));
    if (rejected >= 0) return refusal('reject-paths', method, path, this.#sources.rejectPaths[rejected]!);
    const m = this.#methods.findIndex((r) => r.test(method));
    if (m >= 0) return refusal('reject-methods', method, path, this.#sources.rejectMethods[m]!);
    if (!this.#accept.some((r) => r.test(path)))
      return refusal('accept-paths', method, path, this.#sources.acceptPaths.join(','));
    return undefined;
  }
}

function refusal(rule: FilterRule, method: string, path: string, pattern: string): FilterRefusal {
  const why =
    rule === 'accept-paths'
      ? `the path matches none of --accept-paths ${JSON.stringify(pattern)}`
      : rule === 'reject-paths'
        ? `the path matches --reject-paths ${JSON.stringify(pattern)}`
        : `the method matches --reject-methods ${JSON.stringify(pattern)}`;
  return {
    rule,
    status: proxyForbidden(`kube-cache-proxy refuses ${method} ${JSON.stringify(path)}: ${why}`),
  };
}
