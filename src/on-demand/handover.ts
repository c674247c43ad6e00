/**
 * Ending the passed-through watches of a freshly synced on-demand cache (`caches.ts`) so that
 * their clients resume in the cache without a gap. The cache's window starts at its first
 * snapshot's RV, and a client that watched upstream since before it stands at an older RV: its
 * re-watch would wait for the upstream to prove the resource unchanged in between
 * (`cache/window-extension.ts`, about a second: the apiserver's bookmark) with no watch at all,
 * its events late — at the control plane's first step through the proxy, 16–42 informers at once,
 * each 0.05–4 s without events. So that proof, from the oldest RV the watches' clients stand at,
 * is asked first, while their passed-through watches still deliver events, and they are ended
 * once it answered, whatever it answered (a failed proof leaves their resume to the 410 it gets
 * anyway).
 */

/** A passed-through watch to end: its handover, and where its client stands. */
export interface HandedOverWatch {
  /** Ends it at an event boundary (`server/watch-relay.ts`). */
  handover?: () => void;
  /** The resourceVersion of the last event relayed to its client; undefined while unknown. */
  position?: () => bigint | undefined;
}

/**
 * Ends every watch of `watches` (see the module comment): at once those whose position is
 * unknown, or all of them without `prove`; the others once `prove(oldest RV)` settled (it should
 * not reject; a rejection counts as a failed proof).
 */
export function handOver(
  watches: readonly HandedOverWatch[],
  prove: ((rv: bigint) => Promise<boolean>) | undefined,
): void {
  let oldest: bigint | undefined;
  const later: (() => void)[] = [];
  for (const w of watches) {
    const rv = prove ? w.position?.() : undefined;
    if (rv === undefined) {
      w.handover?.();
      continue;
    }
    if (oldest === undefined || rv < oldest) oldest = rv;
    if (w.handover) later.push(w.handover);
  }
  if (oldest === undefined || !prove) return;
  void prove(oldest)
    .catch(() => false)
    .then(() => {
      for (const end of later) end();
    });
}
