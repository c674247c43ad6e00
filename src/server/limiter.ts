/**
 * A counting cap (in-flight requests, open watchers). Past it the server answers 429 with
 * `Retry-After`, as the apiserver's max-in-flight filter does
 * (`apiserver/pkg/server/filters/maxinflight.go`: "Too many requests, please try again later.").
 */
export class Limiter {
  readonly max: number;
  #inUse = 0;

  constructor(max: number) {
    this.max = max;
  }

  /** Takes a slot; returns its release function (idempotent), or undefined when full. */
  tryAcquire(): (() => void) | undefined {
    if (this.#inUse >= this.max) return undefined;
    this.#inUse++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#inUse--;
    };
  }

  get inUse(): number {
    return this.#inUse;
  }
}
