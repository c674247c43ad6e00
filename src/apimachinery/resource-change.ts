/**
 * What changed about a served resource between two discoveries of the same GroupVersionResource
 * (issue 15): a CRD deleted and re-created under the same group, version and plural may come
 * back with another `scope`, other verbs or another kind. The apiserver's own watch cache is torn
 * down with the CRD's storage (apiextensions-apiserver `customresource_handler.go`: the
 * `crdHandler` destroys a CRD's storage, its cacher with it, when the CRD is deleted or updated)
 * and built anew from the new definition; a cache of the proxy must not go on answering with the
 * old one.
 */
import type { ResourceInfo } from './gvr.ts';

/**
 * A one-line description of what differs between `before` and `after` for serving
 * (`scope Namespaced → Cluster`, `kind Thing → Gadget`, `verbs … → …`), joined by `, `;
 * undefined when nothing that matters did. Verbs compare as sets.
 */
export function resourceChange(before: ResourceInfo, after: ResourceInfo): string | undefined {
  const out: string[] = [];
  const scope = (i: ResourceInfo) => (i.namespaced ? 'Namespaced' : 'Cluster');
  if (before.namespaced !== after.namespaced) out.push(`scope ${scope(before)} → ${scope(after)}`);
  if (before.kind !== after.kind) out.push(`kind ${before.kind} → ${after.kind}`);
  const verbs = (i: ResourceInfo) => [...new Set(i.verbs)].sort().join(',');
  if (verbs(before) !== verbs(after)) out.push(`verbs ${verbs(before)} → ${verbs(after)}`);
  return out.length ? out.join(', ') : undefined;
}
