/**
 * The vocabulary every layer shares for "which resource": a GroupVersionResource plus what
 * discovery says about it (apimachinery's `schema.GroupVersionResource` and `metav1.APIResource`).
 */
/** A GroupVersionResource. `group` is "" for the core group (`/api/v1`). */
export interface GroupVersionResource {
  group: string;
  version: string;
  /** Plural lower-case resource name, e.g. `pods`, `deployments`. */
  resource: string;
}

/**
 * The scope of a scoped cache (issue 13, `resource-scope.ts`): the selectors its reflector lists
 * and watches with, in the apiserver's query syntax. Both absent: the whole resource.
 */
export interface ResourceScope {
  fieldSelector?: string;
  labelSelector?: string;
}

/** A resource as discovery describes it (`metav1.APIResource`, resolved to one GroupVersion). */
export interface ResourceInfo {
  gvr: GroupVersionResource;
  /** e.g. `Pod`. */
  kind: string;
  /**
   * e.g. `PodList`. Discovery does not carry it: `${kind}List` until the reflector learnt the
   * real one from the `kind` of its own upstream LIST answer (a CRD's `spec.names.listKind` may be
   * anything; issue 11 item 6).
   */
  listKind: string;
  /** `apiVersion` of objects: `v1` for core, else `group/version`. */
  apiVersion: string;
  namespaced: boolean;
  /** Verbs discovery lists for the resource (`list`, `watch`, …). */
  verbs: string[];
  /**
   * Built-in (compiled-in) type? The apiserver omits `kind`/`apiVersion` on LIST items of
   * built-in types but keeps them for custom resources (CRDs, aggregated APIs).
   */
  builtIn: boolean;
  /**
   * The `Warning` header values (`299 - "…"`) the apiserver sent with the reflector's last
   * accepted LIST or WATCH of this resource, e.g. a deprecated API version's warning; sent with
   * every answer served from the cache (issue 11 item 7). Undefined or empty: none.
   */
  warnings?: readonly string[];
  /**
   * Whether the upstream serves watch-list (`sendInitialEvents`, the WatchList feature gate):
   * false once the reflector's watch-list was refused because the gate is off, true once one
   * succeeded; undefined (assumed true) before either (issue 11 item 8).
   */
  watchList?: boolean;
  /**
   * The scope of a scoped cache (`--resources pods[fieldSelector=…]`, issue 13): the selectors
   * the reflector lists and watches with, so the cache holds only what they select. Undefined:
   * the whole resource.
   */
  scope?: ResourceScope;
  /**
   * A namespace-restricted cache of a namespaced resource: the one namespace its reflector lists
   * and watches (`/…/namespaces/N/<resource>`) and the only one it answers (delegate.ts;
   * `namespace-outside-cache` for every other namespace and for all namespaces). Set from
   * `--namespace` for every cache, or per cache by `--resources=auto` when the proxy's identity
   * may list and watch the resource only in the namespace of the request that started it
   * (on-demand/caches.ts). Undefined: all namespaces (and always for cluster-scoped resources).
   */
  namespace?: string;
}

/** `pods` / `deployments.apps` / `widgets.example.com`: how the CLI names a resource. */
export function groupResourceString(gvr: GroupVersionResource): string {
  return gvr.group === '' ? gvr.resource : `${gvr.resource}.${gvr.group}`;
}

/** URL prefix of a GroupVersion: `/api/v1` or `/apis/apps/v1`. */
export function groupVersionPath(gvr: GroupVersionResource): string {
  return gvr.group === '' ? `/api/${gvr.version}` : `/apis/${gvr.group}/${gvr.version}`;
}
