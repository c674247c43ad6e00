/**
 * Go's RFC 3339 times as `metav1.Time` / `MicroTime` JSON writes them, read into Unix seconds and
 * nanoseconds for their protobuf form (`time_proto.go`): the common UTC form by hand (no regular
 * expression, no object per time), any other by a regular expression.
 */

/** Nanoseconds of the time {@link parseTime} parsed last (no object allocated per time). */
let lastNanos = 0;

/** The nanoseconds of the time {@link parseTime} parsed last. */
export function timeNanos(): number {
  return lastNanos;
}

function digits(s: string, from: number, to: number): number {
  let n = 0;
  for (let i = from; i < to; i++) {
    const d = s.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return -1;
    n = n * 10 + d;
  }
  return n;
}

/**
 * RFC 3339 (as Go's Time/MicroTime JSON writes it) → Unix seconds (returned; NaN when not such a
 * time) and nanoseconds ({@link timeNanos}). The UTC form `YYYY-MM-DDTHH:MM:SS[.f…]Z` of years 100–9999 is read by
 * hand; anything else by the regular expression.
 */
export function parseTime(s: string): number {
  const n = s.length;
  if (n >= 20 && s.charCodeAt(n - 1) === 90 /* Z */ && s.charCodeAt(10) === 84 /* T */) {
    const year = digits(s, 0, 4);
    const month = digits(s, 5, 7);
    const day = digits(s, 8, 10);
    const hour = digits(s, 11, 13);
    const min = digits(s, 14, 16);
    const sec = digits(s, 17, 19);
    let nanos = 0;
    let ok =
      year >= 100 &&
      month >= 0 &&
      day >= 0 &&
      hour >= 0 &&
      min >= 0 &&
      sec >= 0 &&
      s.charCodeAt(4) === 45 &&
      s.charCodeAt(7) === 45 &&
      s.charCodeAt(13) === 58 &&
      s.charCodeAt(16) === 58;
    if (ok && n > 20) {
      const frac = n - 21; // after the '.', before the 'Z'
      ok = s.charCodeAt(19) === 46 && frac >= 1 && frac <= 9;
      if (ok) {
        nanos = digits(s, 20, n - 1);
        ok = nanos >= 0;
        for (let i = frac; i < 9; i++) nanos *= 10;
      }
    }
    if (ok) {
      lastNanos = nanos;
      return Date.UTC(year, month - 1, day, hour, min, sec) / 1000;
    }
  }
  const t = parseTimeSlow(s);
  if (!t) return Number.NaN;
  lastNanos = t.nanos;
  return t.seconds;
}

function parseTimeSlow(s: string): { seconds: number; nanos: number } | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/.exec(s);
  if (!m) return undefined;
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]));
  // Date.UTC maps years 0–99 to 1900–1999.
  const d = new Date(ms);
  if (Number(m[1]) < 100) d.setUTCFullYear(Number(m[1]));
  let seconds = d.getTime() / 1000;
  if (m[8] !== 'Z') {
    const sign = m[8]![0] === '-' ? -1 : 1;
    seconds -= sign * (Number(m[8]!.slice(1, 3)) * 3600 + Number(m[8]!.slice(4, 6)) * 60);
  }
  const nanos = m[7] ? Number(m[7].padEnd(9, '0')) : 0;
  return { seconds, nanos };
}
