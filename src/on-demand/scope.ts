/**
 * Where `--resources=auto` may cache a resource (`on-demand/caches.ts`): the scope at which the
 * proxy's own identity may list and watch it, by SelfSubjectAccessReviews (one per verb):
 * cluster-wide, else, for a namespaced resource asked in namespace N, in N; with `--namespace`,
 * in that namespace only (namespaced resources; cluster-scoped ones are reviewed cluster-wide).
 * A cluster-wide denial is remembered for the resource (a request in another namespace then
 * reviews only its namespace), a namespace's denial for the resource and namespace.
 */
import type { ResourceInfo } from '../apimachinery/gvr.ts';
import { type Refusals, refusalKey } from './refusals.ts';

/** What {@link reviewScope} needs. */
export interface ScopeDeps {
  /** Whether the proxy's identity may `verb` the resource (SelfSubjectAccessReview); namespace "" = all. */
  allowed(verb: 'list' | 'watch', info: ResourceInfo, namespace: string): Promise<boolean>;
  /** `--namespace`. */
  namespace?: string;
  refused: Refusals;
  /** How long a cluster-wide denial is remembered (ms). */
  ttlMs: number;
  /** Counts, logs and remembers a `forbidden` refusal of `key` (an entry name or a `refusalKey`). */
  refuse(key: string, why: string, clusterDenied?: 'list' | 'watch'): void;
}

/**
 * The scope: "" for cluster-wide, a namespace, or undefined after refusing (through `refuse`).
 * @throws whatever a SelfSubjectAccessReview throws.
 */
export async function reviewScope(
  d: ScopeDeps,
  name: string,
  info: ResourceInfo,
  asked: string | undefined,
): Promise<string | undefined> {
  const fixed = d.namespace;
  if (info.namespaced && fixed !== undefined) {
    const denied = await deniedVerb(d, info, fixed);
    if (denied === undefined) return fixed;
    d.refuse(name, `the proxy's identity may not ${denied} it in namespace ${fixed}`);
    return undefined;
  }
  // A cluster-wide denial remembered from a request of another namespace: not asked again.
  const clusterDenied = d.refused.live(name)?.clusterDenied ?? (await deniedVerb(d, info, ''));
  if (clusterDenied === undefined) return '';
  const ns = info.namespaced ? asked : undefined;
  if (ns === undefined) {
    d.refuse(
      name,
      `the proxy's identity may not ${clusterDenied} it cluster-wide`,
      info.namespaced ? clusterDenied : undefined,
    );
    return undefined;
  }
  if (!d.refused.live(name)) d.refused.remember(name, d.ttlMs, clusterDenied);
  const nsDenied = await deniedVerb(d, info, ns);
  if (nsDenied === undefined) return ns;
  const what =
    nsDenied === clusterDenied
      ? `${nsDenied} it cluster-wide nor in namespace ${ns}`
      : `${clusterDenied} it cluster-wide nor ${nsDenied} it in namespace ${ns}`;
  d.refuse(refusalKey(name, ns), `the proxy's identity may not ${what}`);
  return undefined;
}

/** The first verb of list, watch the proxy's identity may not use on `info` in `namespace` ("" = all); undefined: both allowed. */
async function deniedVerb(
  d: ScopeDeps,
  info: ResourceInfo,
  namespace: string,
): Promise<'list' | 'watch' | undefined> {
  const [list, watch] = await Promise.all([
    d.allowed('list', info, namespace),
    d.allowed('watch', info, namespace),
  ]);
  return !list ? 'list' : !watch ? 'watch' : undefined;
}
