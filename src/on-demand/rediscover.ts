/**
 * Discovery of an on-demand cache's resource again, after a relist or a ListAndWatch error
 * (issue 15: a CRD deleted and re-created at once with another scope leaves the reflector no 404
 * to see; the apiserver tears its own cacher down with the CRD's storage).
 */
import type { ResourceInfo } from '../apimachinery/gvr.ts';
import { resourceChange } from '../apimachinery/resource-change.ts';
import { DiscoveryError } from '../util/errors.ts';

/**
 * What changed about the resource of entry `name`, started as `before`: {@link resourceChange}
 * (scope, kind, verbs), or the discovery error's message when it is not served any more or not
 * list+watchable; undefined when nothing that matters did.
 * @throws what any other failed discovery throws (an upstream error: nothing is known).
 */
export async function rediscoveredChange(
  discover: (name: string) => Promise<ResourceInfo>,
  name: string,
  before: ResourceInfo,
): Promise<string | undefined> {
  try {
    return resourceChange(before, await discover(name));
  } catch (err) {
    const gone =
      err instanceof DiscoveryError &&
      (err.code === 'KCP_ERR_DISCOVERY_NOT_FOUND' || err.code === 'KCP_ERR_DISCOVERY_NOT_LIST_WATCHABLE');
    if (gone) return err.message;
    throw err;
  }
}
