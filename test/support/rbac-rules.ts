/** One RBAC PolicyRule (`rbac.authorization.k8s.io/v1`), as the manifests in deploy/ write it. */
export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

/**
 * The least-privilege rules the proxy needs for `--resources` (`pods,deployments.apps,…`, the
 * `resource.group` spelling of `kubectl`): `list` and `watch` only — the reflector's two verbs;
 * GET is answered from the cache and everything else is pass-through under the client's own RBAC.
 * One rule per API group, core ("") first then groups alphabetically, resources sorted.
 * Used by the deploy/ manifest tests, and the wording for "missing permission" hints.
 */
export function cacheRbacRules(resources: string): PolicyRule[] {
  const byGroup = new Map<string, string[]>();
  for (const r of resources.split(',')) {
    const name = r.trim();
    if (name === '') continue;
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
