/**
 * Waiting on a promise shared with other callers, for as long as one caller's request lasts: the
 * shared upstream probes of the watch cache (its revision probe, gap proofs, the compaction
 * floor's poll) keep running for the others when one caller's client leaves.
 */

/** `p`, or `onAbort` as soon as `signal` aborts (`p` keeps running for its other callers). */
export function untilAborted<T>(p: Promise<T>, onAbort: T, signal?: AbortSignal): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) return Promise.resolve(onAbort);
  return new Promise<T>((resolve, reject) => {
    const abort = () => resolve(onAbort);
    signal.addEventListener('abort', abort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', abort);
        resolve(v);
      },
      (err) => {
        signal.removeEventListener('abort', abort);
        reject(err);
      },
    );
  });
}
