/**
 * Asks the upstream whether a resource had NO event in an RV range (from, to] — the proof a
 * freshly (re)synced cache needs before it may accept a watch that resumes below its window
 * (docs/design.md §6): one short watch `?watch=1&resourceVersion=<from>
 * &allowWatchBookmarks=true&timeoutSeconds=3` through the reflector's own {@link ListerWatcher}
 * (same path, namespace and pool). The apiserver's cacher sends a watcher with a deadline its
 * bookmark 2 s before it (`storage/cacher/cache_watcher.go` `nextBookmarkTime`), so the answer
 * comes within about a second (observed on kube-apiserver 1.37.2; except, also observed, for a
 * resource without any event since the apiserver started: that watch ends empty after 3 s —
 * probably because the cacher's bookmark carries its last processed RV, unset until then — and
 * the proof fails, the safe way): a BOOKMARK or an event with RV > `to` before any event with
 * RV ≤ `to` proves the range empty; an event inside the range, an ERROR (410: `from` left the
 * upstream's window too), a refused watch, an early end or the deadline disprove it.
 */
import { parseResourceVersion } from '../apimachinery/list-options.ts';
import type { ListerWatcher } from './list-watch.ts';

/** The proof's own upstream timeout, s (the bookmark comes 2 s before it). */
export const GAP_PROOF_TIMEOUT_SECONDS = 3;

/**
 * True when the upstream shows no event of the resource with `from` < RV ≤ `to` (see the module
 * docstring); false otherwise, never throws. `deadlineMs` bounds the whole attempt (default 5 s).
 */
export async function proveNoEventsBetween(
  lw: ListerWatcher,
  from: bigint,
  to: bigint,
  signal?: AbortSignal,
  deadlineMs = 5000,
): Promise<boolean> {
  if (from >= to) return true;
  const ac = new AbortController();
  const onAbort = () => ac.abort();
  signal?.addEventListener('abort', onAbort, { once: true });
  let stream: Awaited<ReturnType<ListerWatcher['watch']>> | undefined;
  // Closing the stream settles a pending next(); aborting covers a watch not yet accepted.
  const timer = setTimeout(() => {
    ac.abort();
    stream?.close();
  }, deadlineMs);
  try {
    stream = await lw.watch(
      {
        resourceVersion: from.toString(),
        allowWatchBookmarks: true,
        timeoutSeconds: GAP_PROOF_TIMEOUT_SECONDS,
      },
      ac.signal,
    );
    for (;;) {
      const e = await stream.next();
      if (e === undefined || e.type === 'ERROR') return false;
      const rv = parseResourceVersion(e.object.object.metadata?.resourceVersion ?? '');
      if (rv === undefined || rv === null) return false;
      if (rv > to) return true;
      if (e.type === 'BOOKMARK') {
        if (rv >= to) return true;
        continue;
      }
      return false;
    }
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
    stream?.close();
  }
}

/**
 * The upstream's current revision: the RV of a consistent LIST of one item (`limit=1`, RV="")
 * through the reflector's own {@link ListerWatcher}. The apiserver reads etcd's current revision
 * before answering it (KEP-2340), so the RV is at least that of every write completed before
 * the request was sent. undefined when the request failed or within `deadlineMs` (default 5 s).
 */
export async function currentRevision(lw: ListerWatcher, deadlineMs = 5000): Promise<bigint | undefined> {
  try {
    const list = await lw.list({ resourceVersion: '', limit: 1 }, AbortSignal.timeout(deadlineMs));
    const rv = parseResourceVersion(list.resourceVersion);
    return typeof rv === 'bigint' ? rv : undefined;
  } catch {
    return undefined;
  }
}
