/** Builds the `ResourceInfo` that discovery would return, for unit tests. */
import type { ResourceInfo } from '../../src/apimachinery/gvr.ts';

/**
 * `kind` + `group/version/resource`; list kind `<Kind>List`, apiVersion `v1` or `group/version`.
 * Defaults: namespaced, built-in unless the group has a dot, verbs list/watch/get.
 */
export function resourceInfo(
  gv: string,
  resource: string,
  kind: string,
  o: { namespaced?: boolean; builtIn?: boolean; verbs?: string[] } = {},
): ResourceInfo {
  const [group, version] = gv.includes('/') ? (gv.split('/') as [string, string]) : ['', gv];
  return {
    gvr: { group, version, resource },
    kind,
    listKind: `${kind}List`,
    apiVersion: gv,
    namespaced: o.namespaced ?? true,
    verbs: o.verbs ?? ['list', 'watch', 'get'],
    builtIn: o.builtIn ?? !group.includes('.'),
  };
}
