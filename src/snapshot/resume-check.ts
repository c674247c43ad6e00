/**
 * Whether a loaded snapshot may be resumed (docs/design.md §3, "Snapshots and warm restart"): the
 * upstream is the apiserver it was taken from (URL and `kube-system` UID, `apiserver-identity.ts`)
 * and its current resourceVersion is not below the snapshot's — one that is (etcd restored from a
 * backup, a re-created cluster) would make the proxy wait for RVs that never come or serve state
 * that never existed there. Everything else a restart can miss is the watch's to tell: it resumes
 * from the snapshot's RV, and a 410 relists.
 */
import { currentRevision } from '../reflector/gap-proof.ts';
import type { ListerWatcher } from '../reflector/list-watch.ts';
import { type IdentitySource, identityMismatch } from './apiserver-identity.ts';
import type { LoadedSnapshot } from './resource-snapshot.ts';

/** The upstream could not answer (the caller retries while it serves the snapshot). */
export class UpstreamUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UpstreamUnavailableError';
  }
}

/**
 * Returns the check for `CachedResource`'s `verifySnapshot`: resolves the reason to refuse the
 * snapshot, or undefined to resume it.
 * @throws what the identity request throws, or {@link UpstreamUnavailableError} when the
 *   upstream's current RV could not be learnt.
 */
export function resumeCheck(
  identity: Pick<IdentitySource, 'server' | 'get'>,
): (s: LoadedSnapshot, lw: ListerWatcher, signal: AbortSignal) => Promise<string | undefined> {
  return async (s, lw, signal) => {
    const now = await identity.get(signal);
    const mismatch = identityMismatch(s.header.identity, now);
    if (mismatch !== undefined) return `another apiserver: ${mismatch}`;
    const current = await currentRevision(lw);
    if (current === undefined)
      throw new UpstreamUnavailableError("the upstream's current resourceVersion could not be read");
    if (current < BigInt(s.header.resourceVersion))
      return `snapshot resourceVersion ${s.header.resourceVersion} is ahead of the upstream's ${current} (etcd restored from a backup?)`;
    return undefined;
  };
}
