/**
 * The object shapes the proxy reads from the wire: the parts of `metav1.ObjectMeta` and
 * `runtime.Object` it needs, and an object kept with its bytes exactly as received.
 */

/** The parts of `metav1.ObjectMeta` the cache reads. */
export interface ObjectMeta {
  name: string;
  namespace?: string;
  resourceVersion: string;
  uid?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  [k: string]: unknown;
}

/** A Kubernetes object as decoded from JSON. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  [k: string]: unknown;
}

/**
 * One object as received from upstream: its JSON bytes exactly as the apiserver sent them
 * (WITH `kind` and `apiVersion`, as in watch events and GET answers) and the parsed value.
 * The bytes are kept verbatim so GET, LIST and WATCH answers re-use them without re-encoding
 * (docs/design.md §3 "Keep the upstream's bytes"). Neither field may be modified after creation.
 */
export interface UpstreamObject {
  readonly raw: Buffer;
  readonly object: KubeObject;
}
