/**
 * kubectl proxy's request filter defaults (`k8s.io/kubectl/pkg/proxy/proxy_server.go`, kubectl
 * v0.37.2), the defaults of `--accept-paths`, `--reject-paths` and `--reject-methods`:
 *
 * ```go
 * DefaultPathAcceptRE = "^.*"
 * DefaultPathRejectRE = "^/api/.*\/pods/.*\/exec,^/api/.*\/pods/.*\/attach"
 * DefaultMethodRejectRE = "^$"
 * ```
 *
 * and the three settings of the schema (`config.ts` `OPTIONS`). Which mode uses which
 * `--reject-paths` default, and why: {@link rejectPathsDefault}, docs/design.md §4.
 */

/** `DefaultPathAcceptRE`: every path. */
export const KUBECTL_PROXY_ACCEPT_PATHS: readonly string[] = ['^.*'];

/** `DefaultPathRejectRE`: exec and attach of pods (not port-forward). */
export const KUBECTL_PROXY_REJECT_PATHS: readonly string[] = [
  '^/api/.*/pods/.*/exec',
  '^/api/.*/pods/.*/attach',
];

/** `DefaultMethodRejectRE`: `^$`, which no method matches: none is refused. */
export const KUBECTL_PROXY_REJECT_METHODS: readonly string[] = ['^$'];

/**
 * The settings `--accept-paths`, `--reject-paths` and `--reject-methods`, entries of `OPTIONS`
 * (`config.ts`; its `OptionSpec` shape). `--reject-paths` has no static default: {@link rejectPathsDefault}.
 */
export const FILTER_OPTIONS = [
  {
    key: 'acceptPaths',
    flag: 'accept-paths',
    env: 'KCP_ACCEPT_PATHS',
    kind: 'regexps',
    default: KUBECTL_PROXY_ACCEPT_PATHS,
    description:
      "Comma-separated regexps one of which a request's decoded path (no query) must match, else 403 before the cache or the apiserver sees it (kubectl proxy's flag and default; HTTP Upgrade tunnels included).",
  },
  {
    key: 'rejectPaths',
    flag: 'reject-paths',
    env: 'KCP_REJECT_PATHS',
    kind: 'regexps',
    description: `Comma-separated regexps of decoded paths refused with 403 even when --accept-paths accepts them (kubectl proxy's flag). Default without --delegated-auth: kubectl proxy's \`${KUBECTL_PROXY_REJECT_PATHS.join(',')}\` (exec and attach: a request without credential runs as the proxy's identity); with --delegated-auth: none (every request runs as its client). Empty: none.`,
  },
  {
    key: 'rejectMethods',
    flag: 'reject-methods',
    env: 'KCP_REJECT_METHODS',
    kind: 'regexps',
    default: KUBECTL_PROXY_REJECT_METHODS,
    description:
      "Comma-separated regexps of HTTP methods refused with 403, e.g. POST,PUT,PATCH,DELETE (kubectl proxy's flag and default ^$: none).",
  },
] as const;

/**
 * `--reject-paths` when not given: kubectl proxy's `DefaultPathRejectRE` (exec and attach of
 * pods) in the modes without `--delegated-auth`, where a request without credential is sent with
 * the proxy's (as by kubectl proxy), and none with it, where every request carries its client's
 * own identity and the apiserver decides (docs/design.md §4).
 */
export function rejectPathsDefault(delegatedAuth: boolean): string[] {
  return delegatedAuth ? [] : [...KUBECTL_PROXY_REJECT_PATHS];
}
