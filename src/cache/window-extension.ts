/**
 * Extending a watch cache's window backwards on demand (docs/design.md §6). After a
 * (re)start or relist the window starts at the snapshot's RV S, and a watch resuming from an
 * older RV N gets 410 — although, when the resource did not change in between, the client's
 * state at N IS the state at S. That is the common case behind a restarted kube-cache-proxy
 * (a pool proxy in front of node proxies, or any proxy its clients resume against): the etcd
 * revision moves on without writes to the resource (leases, other resources), so S > N. The
 * apiserver cannot help its own clients here; the proxy can ask its upstream: a short watch
 * from N (reflector/gap-proof.ts) that shows no event in (N, S] proves it, and the window then
 * starts at N. Any event there, or any failure, keeps the 410 (the client relists, as before),
 * unless this proxy showed the client that RV itself moments ago (`server/serve-watch.ts`: then
 * the watch is forwarded, reason `watch-outside-window`).
 *
 * Bounded: one proof in flight per resource (concurrent resumes share it or wait for it), and
 * a failed proof for N refuses every RV ≤ N at once until the next snapshot.
 */
import type { Logger } from 'pino';
import { groupResourceString, type ResourceInfo } from '../apimachinery/gvr.ts';
import type { History } from './history.ts';

/** Proves that the resource had no event in (from, to]; never throws. */
export type GapProver = (from: bigint, to: bigint, signal?: AbortSignal) => Promise<boolean>;

/** The info line a {@link WindowExtender} of `resource` logs for each resume below its window. */
export function windowExtensionLog(
  logger: Logger | undefined,
  resource: ResourceInfo,
): (from: bigint, to: bigint, proved: boolean) => void {
  return (from, to, proved) =>
    logger?.info(
      { resource: groupResourceString(resource.gvr), from: String(from), windowStart: String(to), proved },
      proved
        ? 'a watch resumed below the window: the upstream showed no event since its resourceVersion'
        : 'a watch below the window gets 410: the upstream did not prove it unchanged since',
    );
}

/** One resource's window extension (see the module docstring). */
export class WindowExtender {
  readonly #prove: GapProver;
  readonly #history: History;
  /** Within this epoch, a proof failed for this RV: every RV ≤ it fails too. */
  #failed: { epoch: number; rv: bigint } | undefined;
  #inFlight: Promise<void> | undefined;

  readonly #onResult: ((from: bigint, to: bigint, proved: boolean) => void) | undefined;

  /** `onResult` is told every proof's outcome (a log line: why a resume was or was not a 410). */
  constructor(
    prove: GapProver,
    history: History,
    onResult?: (from: bigint, to: bigint, proved: boolean) => void,
  ) {
    this.#prove = prove;
    this.#history = history;
    this.#onResult = onResult;
  }

  /**
   * Tries to make `rv` resumable: resolves true when `rv` ≥ the window's start (at once, or
   * after a successful proof lowered it), false when it stays below (the watch gets 410).
   */
  async extend(rv: bigint, signal?: AbortSignal): Promise<boolean> {
    for (;;) {
      const h = this.#history;
      if (rv >= h.start) return true;
      if (this.#failed && this.#failed.epoch === h.epoch && rv <= this.#failed.rv) return false;
      if (signal?.aborted) return false;
      if (this.#inFlight) {
        await this.#inFlight;
        continue;
      }
      const start = h.start;
      const epoch = h.epoch;
      const attempt = (async () => {
        const ok = await this.#prove(rv, start, signal);
        this.#onResult?.(rv, start, ok);
        // A snapshot or an eviction meanwhile changed what "start" means: prove again next time.
        if (h.epoch !== epoch) return;
        // Cut short by its client's disconnect, the proof showed nothing: no failure recorded
        // (it refused every later resume at or below rv until the next snapshot), and a client
        // that waited for it asks again.
        if (!ok && signal?.aborted) return;
        if (!ok || !h.extendBack(rv, start)) {
          if (!ok && (!this.#failed || this.#failed.epoch !== epoch || this.#failed.rv < rv))
            this.#failed = { epoch, rv };
        }
      })();
      this.#inFlight = attempt;
      try {
        await attempt;
      } finally {
        this.#inFlight = undefined;
      }
      return rv >= h.start;
    }
  }
}
