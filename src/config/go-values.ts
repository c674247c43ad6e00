/**
 * Go's spellings of flag values, as the apiserver's flags parse them (`strconv.ParseBool`,
 * `time.ParseDuration`).
 */

/** Go `strconv.ParseBool`'s spellings. */
export const GO_BOOL: Record<string, boolean> = {
  '1': true,
  t: true,
  T: true,
  TRUE: true,
  true: true,
  True: true,
  '0': false,
  f: false,
  F: false,
  FALSE: false,
  false: false,
  False: false,
};

const DURATION_UNITS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/** Go `time.ParseDuration` (non-negative), in ms; undefined when not a duration. */
export function parseGoDuration(s: string): number | undefined {
  if (s === '0') return 0;
  if (!/^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/.test(s)) return undefined;
  let ms = 0;
  for (const m of s.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g))
    ms += Number(m[1]) * DURATION_UNITS[m[2]!]!;
  return ms;
}
