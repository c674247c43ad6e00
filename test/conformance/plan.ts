/**
 * Which runs one invocation of scripts/conformance.ts makes (or, with `--resume`, reads), in
 * order: each run is a mode and its number, saved in `DIR/<mode>-<n>/`. By default every mode of
 * `--modes` once per repeat (`direct-1, sidecar-1, …, direct-2, …`); with `--only=sidecar-2,direct-3`
 * exactly those, so several invocations can each make some runs of one matrix side by side in
 * the same `--dir`, and a last one with `--resume` reads them all and writes the page.
 */
import { MODES, type Mode } from './runner.ts';

/** One run of the matrix: `mode`, run number `n` (1-based; its directory is `<mode>-<n>`). */
export interface PlannedRun {
  mode: Mode;
  n: number;
}

/**
 * The runs of an invocation: `only` (the `--only` value, `MODE-N` comma-separated, in its order)
 * when given, else `modes` × `repeat` (each repeat all modes in order). Throws an Error naming
 * the entry when `only` has an unknown mode, a number below 1, a repeated entry or is empty.
 */
export function planRuns(modes: readonly Mode[], repeat: number, only?: string): PlannedRun[] {
  if (only === undefined) {
    const out: PlannedRun[] = [];
    for (let n = 1; n <= repeat; n++) for (const mode of modes) out.push({ mode, n });
    return out;
  }
  const out: PlannedRun[] = [];
  for (const entry of only.split(',')) {
    const m = /^([a-z]+)-([1-9]\d*)$/.exec(entry);
    if (!m || !(m[1]! in MODES))
      throw new Error(
        `--only: ${JSON.stringify(entry)}: expected MODE-N (N ≥ 1), MODE one of ${Object.keys(MODES).join(',')}`,
      );
    if (out.some((r) => `${r.mode}-${r.n}` === entry)) throw new Error(`--only: ${entry} is listed twice`);
    out.push({ mode: m[1] as Mode, n: Number(m[2]) });
  }
  return out;
}
