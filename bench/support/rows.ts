/**
 * Failure bookkeeping for bench/run.ts: a row (one load step, one scenario) that throws or runs
 * past its time limit is recorded as a {@link FailedRow} with its error, and the run goes on, so
 * one slow or broken step (e.g. 50 informers that never sync on a loaded machine) cannot lose
 * the rows measured before and after it.
 */
import type { FailedRow } from '../report/results.ts';

/** Collects {@link FailedRow}s for one run. */
export class RowFailures {
  readonly rows: FailedRow[] = [];
  readonly #t0 = performance.now();
  readonly #log: (msg: string) => void;

  constructor(log: (msg: string) => void) {
    this.#log = log;
  }

  /**
   * Runs `fn` as row `row` of `scenario`; resolves with its result, or with `undefined` after
   * recording the error when it throws or does not settle within `timeoutMs` (default 10 min).
   * A timed-out `fn` is left running; callers pass work that ends on its own (a child process
   * with its own timeout, a load run of fixed duration).
   */
  async attempt<T>(
    scenario: string,
    row: string,
    fn: () => Promise<T>,
    timeoutMs = 600_000,
  ): Promise<T | undefined> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs / 1000} s`)), timeoutMs);
    });
    try {
      return await Promise.race([fn(), timeout]);
    } catch (err) {
      const error = (err instanceof Error ? err.message : String(err)).replace(/\s+/g, ' ').slice(0, 600);
      const atS = Math.round((performance.now() - this.#t0) / 100) / 10;
      this.rows.push({ scenario, row, error, atS });
      this.#log(`FAILED ${scenario} / ${row}: ${error}`);
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  }
}
