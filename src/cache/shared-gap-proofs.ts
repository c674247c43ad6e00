/**
 * Gap proofs in flight shared by the reads whose range they cover (`watch-cache.ts`
 * `proveNoEventsBetween`): one upstream request (`reflector/gap-proof.ts`) answers every
 * concurrent read that needs a range inside its own.
 */
import { untilAborted } from './until-aborted.ts';
import type { GapProver } from './window-extension.ts';

/** See the module comment. */
export class SharedGapProofs {
  readonly #prover: GapProver | undefined;
  #inFlight: { from: bigint; to: bigint; proof: Promise<boolean> }[] = [];

  /** `prover`: the upstream's answer for a range; undefined: nothing is ever proven. */
  constructor(prover: GapProver | undefined) {
    this.#prover = prover;
  }

  /**
   * True when the upstream shows no event of the resource in (from, to], sharing a proof in
   * flight that covers the range; false without a prover. `signal` only stops this caller's wait.
   */
  prove(from: bigint, to: bigint, signal?: AbortSignal): Promise<boolean> {
    if (from >= to) return Promise.resolve(true);
    const prover = this.#prover;
    if (!prover) return Promise.resolve(false);
    let entry = this.#inFlight.find((g) => g.from <= from && g.to >= to);
    if (!entry) {
      const e = { from, to, proof: prover(from, to) };
      const drop = () => {
        this.#inFlight = this.#inFlight.filter((g) => g !== e);
      };
      e.proof.then(drop, drop);
      this.#inFlight.push(e);
      entry = e;
    }
    return untilAborted(entry.proof, false, signal);
  }
}
