/** One RBAC PolicyRule (`rbac.authorization.k8s.io/v1`), as the manifests in deploy/ write it. */
export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  resourceNames?: string[];
  verbs: string[];
}

/**
 * What `--snapshot-dir` adds to the cache rules: `get` on the `kube-system` namespace alone, whose
 * UID tells one cluster from another at the same URL (src/snapshot/apiserver-identity.ts).
 */
export const SNAPSHOT_IDENTITY_RULE: PolicyRule = {
  apiGroups: [''],
  resources: ['namespaces'],
  resourceNames: ['kube-system'],
  verbs: ['get'],
};

/**
 * The entries of a `--resources` value: split at the commas outside a `[...]` scope, each
 * entry's scope dropped (`pods[fieldSelector=spec.nodeName=n1],services` → `pods`, `services`).
 */
export function resourceNames(resources: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of `${resources},`) {
    if (ch === '[') depth++;
    if (ch === ']') depth--;
    if (ch === ',' && depth === 0) {
      const name = cur.replace(/\[.*\]$/s, '').trim();
      if (name !== '') out.push(name);
      cur = '';
    } else cur += ch;
  }
  return out;
}

/**
 * The least-privilege rules the proxy needs for `--resources` (`pods,deployments.apps,…`, the
 * `resource.group` spelling of `kubectl`, scopes such as `pods[fieldSelector=…]` allowed: RBAC
 * cannot express a selector, so a scoped resource needs the same rule): `list` and `watch` only — the reflector's two verbs;
 * GET is answered from the cache and everything else is pass-through under the client's own RBAC.
 * One rule per API group, core ("") first then groups alphabetically, resources sorted.
 * Used by the deploy/ manifest tests, and the wording for "missing permission" hints.
 */
export function cacheRbacRules(resources: string): PolicyRule[] {
  const byGroup = new Map<string, string[]>();
  for (const name of resourceNames(resources)) {
    const dot = name.indexOf('.');
    const [resource, group] = dot < 0 ? [name, ''] : [name.slice(0, dot), name.slice(dot + 1)];
    byGroup.set(group, [...(byGroup.get(group) ?? []), resource]);
  }
  return [...byGroup.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([group, rs]) => ({
      apiGroups: [group],
      resources: [...new Set(rs)].sort(),
      verbs: ['list', 'watch'],
    }));
}
