/**
 * Asks the upstream whether etcd has compacted a revision, the way a client can: one LIST of one
 * item at exactly that revision (`resourceVersion=<rv>&resourceVersionMatch=Exact&limit=1`)
 * through the reflector's own {@link ListerWatcher} (same path, namespace, scope and pool). The
 * apiserver answers it from its watch cache's snapshot at that revision, or from etcd; once its
 * compactor has learnt (within 15 s, `k8s.io/apiserver` `pkg/storage/cacher/compactor.go`) that
 * etcd compacted past the revision it answers 410 Expired ("The resourceVersion for the provided
 * list is too old.", `pkg/storage/etcd3/errors.go` `interpretListError`). Used by the watch
 * cache's compaction floor (`cache/compaction-floor.ts`).
 */
import { UpstreamError } from '../util/errors.ts';
import type { ListerWatcher } from './list-watch.ts';

/**
 * What an Exact read at one revision told: `compacted` (410), `available` (200), or `unknown`
 * (any other answer, a network error, the deadline).
 */
export type CompactionAnswer = 'compacted' | 'available' | 'unknown';

/**
 * One Exact LIST of one item at `rv` (see the module docstring); never throws. `deadlineMs`
 * bounds the request (default 5 s); `signal` aborts it (`unknown`).
 */
export async function exactReadAt(
  lw: ListerWatcher,
  rv: bigint,
  signal?: AbortSignal,
  deadlineMs = 5000,
): Promise<CompactionAnswer> {
  const deadline = AbortSignal.timeout(deadlineMs);
  try {
    await lw.list(
      { resourceVersion: rv.toString(), resourceVersionMatch: 'Exact', limit: 1 },
      signal ? AbortSignal.any([signal, deadline]) : deadline,
    );
    return 'available';
  } catch (err) {
    return err instanceof UpstreamError && err.statusCode === 410 ? 'compacted' : 'unknown';
  }
}
