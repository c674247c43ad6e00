/** Polling until a condition holds, for e2e tests that wait on another process. */

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
