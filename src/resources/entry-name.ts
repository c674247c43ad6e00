/**
 * How cached resources are named. An on-demand entry's key (`on-demand/caches.ts`) and the name
 * a configured cache's re-check discovers by are discovery's `resource.version[.group]`
 * (`configmaps.v1`, `deployments.v1.apps`); logs name an entry as `/debug/cache` does.
 */

/**
 * The log fields naming an entry as `/debug/cache` does: `resource` is its `name` (`configmaps`,
 * `deployments.apps`), `version` its version.
 */
export function logName(name: string): { resource: string; version: string } {
  const [resource = '', version = '', ...group] = name.split('.');
  return { resource: group.length ? `${resource}.${group.join('.')}` : resource, version };
}

/** The entry name of a GroupVersionResource: `resource.version[.group]` (discovery's syntax). */
export function entryName(gvr: { group: string; version: string; resource: string }): string {
  return `${gvr.resource}.${gvr.version}${gvr.group ? `.${gvr.group}` : ''}`;
}
