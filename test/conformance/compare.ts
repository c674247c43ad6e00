/**
 * Direct against proxied: the verdict of the conformance runs (docs/conformance.md, and the CI
 * subset's assertions). The goal: every spec that passes direct passes through the proxy in every
 * mode, in at most max(2 × its direct time, direct + 10 s) (median over the repeats).
 */
import type { SpecResult } from './junit.ts';
import type { Mode } from './runner.ts';

/** One spec in one mode over the repeats. */
export interface Cell {
  /** Ginkgo states, one per repeat that ran it. */
  states: string[];
  /** Median run time, s. */
  seconds: number;
  /** The first failure text (or '' when none failed). */
  message: string;
}

/** A spec's row: its cell per mode (a mode that did not run it has none). */
export interface Row {
  name: string;
  cells: Partial<Record<Mode, Cell>>;
}

/** Why a proxied cell falls short of the direct one. */
export interface Difference {
  name: string;
  mode: Mode;
  /** `result`: passed direct, not through the proxy; `time`: over the allowed time. */
  kind: 'result' | 'time';
  direct: Cell;
  proxied: Cell;
  /** The allowed time, s (for `time`). */
  allowed: number;
}

/** The median of `xs` (0 for none). */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** The longest a proxied spec may take when it took `direct` seconds direct: max(2×, +10 s). */
export function allowedSeconds(direct: number): number {
  return Math.max(2 * direct, direct + 10);
}

/** Whether every repeat of the cell passed. */
export function passed(c: Cell | undefined): boolean {
  return !!c && c.states.length > 0 && c.states.every((s) => s === 'passed');
}

/** The rows of `runs` (mode → the spec lists of its repeats), sorted by spec name. */
export function rows(runs: Partial<Record<Mode, SpecResult[][]>>): Row[] {
  const byName = new Map<string, Row>();
  for (const [mode, repeats] of Object.entries(runs) as [Mode, SpecResult[][]][]) {
    const per = new Map<string, SpecResult[]>();
    for (const specs of repeats) for (const s of specs) per.set(s.name, [...(per.get(s.name) ?? []), s]);
    for (const [name, results] of per) {
      const row = byName.get(name) ?? { name, cells: {} };
      row.cells[mode] = {
        states: results.map((r) => r.state),
        seconds: median(results.map((r) => r.seconds)),
        message:
          results.find((r) => r.message && r.state !== 'passed' && r.state !== 'skipped')?.message ?? '',
      };
      byName.set(name, row);
    }
  }
  return [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** Every shortfall of a proxied mode against direct, in row order. */
export function differences(all: readonly Row[]): Difference[] {
  const out: Difference[] = [];
  for (const row of all) {
    const direct = row.cells.direct;
    if (!passed(direct)) continue;
    for (const [mode, proxied] of Object.entries(row.cells) as [Mode, Cell][]) {
      if (mode === 'direct') continue;
      const allowed = allowedSeconds(direct!.seconds);
      if (!passed(proxied))
        out.push({ name: row.name, mode, kind: 'result', direct: direct!, proxied, allowed });
      else if (proxied.seconds > allowed)
        out.push({ name: row.name, mode, kind: 'time', direct: direct!, proxied, allowed });
    }
  }
  return out;
}
