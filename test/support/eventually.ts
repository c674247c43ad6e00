/** Polling until a condition holds, for tests that wait on another process or on timers. */

/** Polls `fn` every 200 ms until it returns a value other than undefined (or throws after `ms`). */
export async function eventually<T>(what: string, ms: number, fn: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms${last ? `: ${last}` : ''}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * Waits until `cond` holds, checking every `everyMs` (default 5 ms, for in-process unit tests);
 * throws naming `what` after `ms` (default 30 s: a bound for a hang, not a guess at how long a
 * loaded machine takes).
 */
export async function until(
  what: string,
  cond: () => boolean | Promise<boolean>,
  ms = 30_000,
  everyMs = 5,
): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
