/**
 * Printed Table rows per cached object, so that readers of the same objects within one
 * wall-clock second (dashboards, several `kubectl get`, a watch event fanned out to its
 * watchers) parse and print each object once, not once per request. A row depends on the
 * object, the printer (a CRD's columns change with the CRD), the form asked (`includeObject`,
 * Table version) and the moment of printing: every age the printers write is
 * `HumanDuration(now − t)` truncated to whole seconds of a whole-second `metav1.Time`, so a row
 * printed in the same wall-clock second is the row printed now. (A `metav1.MicroTime` — an
 * event's `eventTime` — may be read up to a second early, less than the apiserver's own spread:
 * it prints each row at its own `time.Now()`.) Keys are identities: the cache's stored entries
 * (immutable per object version) and shared watch event lines. Rows are kept for the current
 * second only (the whole map is dropped when the second changes), so memory holds at most one
 * second's printed rows.
 */
import type { TablePrinter } from './table-types.ts';

interface Kept<T> {
  printer: TablePrinter;
  value: T;
}

/**
 * See the module's docstring. `T`: the one shape of value this cache keeps (a value of another
 * shape kept under the same key and variant would be handed out as a `T`: one cache per shape).
 */
export class RowCache<T> {
  #second = Number.NaN;
  #rows = new WeakMap<object, Map<string, Kept<T>>>();

  /**
   * The value `make()` built for (`key`, `printer`, `variant`) in the wall-clock second of
   * `nowMs` (Unix ms), built now if none; `key` undefined: built every time.
   */
  get(key: object | undefined, printer: TablePrinter, variant: string, nowMs: number, make: () => T): T {
    if (key === undefined) return make();
    const second = Math.floor(nowMs / 1000);
    if (second !== this.#second) {
      this.#second = second;
      this.#rows = new WeakMap();
    }
    let byVariant = this.#rows.get(key);
    if (!byVariant) {
      byVariant = new Map();
      this.#rows.set(key, byVariant);
    }
    const kept = byVariant.get(variant);
    if (kept && kept.printer === printer) return kept.value;
    const value = make();
    byVariant.set(variant, { printer, value });
    return value;
  }
}
