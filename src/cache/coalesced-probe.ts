/**
 * One upstream probe shared by concurrent callers, never joined late: a caller may share only a
 * probe SENT after it arrived, since only such an answer tells it something at least as new as
 * its own request (a consistent read must see every write completed before it was sent). At most
 * one probe is in flight; callers arriving meanwhile share the next one, sent when it settles.
 */
export class CoalescedProbe<T> {
  readonly #run: () => Promise<T>;
  #inFlight: Promise<T> | undefined;
  #queued: Promise<T> | undefined;

  /** `run` sends one probe; it should not reject (a rejection is passed to its callers). */
  constructor(run: () => Promise<T>) {
    this.#run = run;
  }

  /** The answer of a probe sent no earlier than this call. */
  next(): Promise<T> {
    if (!this.#inFlight) return this.#start();
    this.#queued ??= this.#inFlight.then(
      () => this.#startQueued(),
      () => this.#startQueued(),
    );
    return this.#queued;
  }

  #startQueued(): Promise<T> {
    this.#queued = undefined;
    return this.#start();
  }

  #start(): Promise<T> {
    const p = this.#run();
    this.#inFlight = p;
    const clear = () => {
      if (this.#inFlight === p) this.#inFlight = undefined;
    };
    p.then(clear, clear);
    return p;
  }
}
