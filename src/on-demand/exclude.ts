/**
 * `--auto-exclude` (issue 15): the resources `--resources=auto` never caches, as
 * `resource[.group]`. A list given replaces the default `secrets`, and an entry such as
 * `deployments` (no group: not `deployments.apps`) or `secrets.v1` (read as group `v1`) excludes
 * nothing: a warning at start when `secrets` is missing, and once per entry that names a
 * requested resource but not its group.
 */
import { type GroupVersionResource, groupResourceString } from '../apimachinery/gvr.ts';
import type { Logger } from '../util/logger.ts';

/** A Kubernetes version segment (`v1`, `v1beta2`): what `secrets.v1` holds where a group belongs. */
const VERSION_RE = /^v\d+((alpha|beta)\d+)?$/;

/** See the module comment. */
export class ExcludeList {
  readonly #entries: readonly string[];
  readonly #log: Logger;
  /** Entries already warned about. */
  readonly #warned = new Set<string>();

  /** Logs the start warning when `entries` lacks `secrets`. */
  constructor(entries: readonly string[], log: Logger) {
    this.#entries = entries;
    this.#log = log;
    if (!entries.includes('secrets'))
      log.warn(
        { exclude: entries },
        '--auto-exclude does not contain secrets: Secrets a client lists or watches are cached in memory (the list replaces the default secrets; add it back to keep them out)',
      );
  }

  /** Whether the group-resource is excluded (an entry equal to `resource[.group]`). */
  excludes(gr: { group: string; resource: string }): boolean {
    return this.#entries.includes(gr.group ? `${gr.resource}.${gr.group}` : gr.resource);
  }

  /**
   * Warns once per entry that names `gvr`'s resource but not its group (`deployments` for
   * `deployments.apps`), or reads as `resource.version` (`secrets.v1`, group `v1`).
   */
  warnMismatch(gvr: GroupVersionResource): void {
    const gr = groupResourceString(gvr);
    for (const x of this.#entries) {
      if (x === gr || this.#warned.has(x)) continue;
      const [resource, ...rest] = x.split('.');
      if (resource !== gvr.resource) continue;
      this.#warned.add(x);
      const asVersion = rest.length === 1 && VERSION_RE.test(rest[0] ?? '');
      this.#log.warn(
        { entry: x, resource: gr },
        asVersion
          ? `--auto-exclude entry ${x} is read as resource ${resource} of group ${rest[0]} (entries are resource[.group], no version): it does not exclude ${gr}; write ${gr}`
          : `--auto-exclude entry ${x} names the resource but not the group of ${gr}: it does not exclude it; write ${gr}`,
      );
    }
  }
}
