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
 * Which mode uses which default, and why: `rejectPathsDefault` in `config.ts`, docs/design.md §4.
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
