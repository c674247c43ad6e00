/**
 * Ages as the apiserver's printers write them: a port of `duration.HumanDuration` and
 * `ShortHumanDuration` (k8s.io/apimachinery `pkg/util/duration/duration.go`, v0.37.2), and of
 * printers.go's `translateTimestampSince` (`<unknown>` for a zero time).
 */

const SECOND = 1e9;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/**
 * `duration.HumanDuration(d)`: `d` in nanoseconds (a Go `time.Duration`); about 2–3 significant
 * figures (`45s`, `3m12s`, `5h7m`, `3d4h`, `2y14d`); below −1 s `<invalid>`, between −2 s and 0 `0s`.
 */
export function humanDuration(d: number): string {
  const seconds = Math.trunc(d / SECOND);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 60 * 2) return `${seconds}s`;
  const minutes = Math.trunc(d / MINUTE);
  if (minutes < 10) {
    const s = Math.trunc(d / SECOND) % 60;
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`;
  }
  if (minutes < 60 * 3) return `${minutes}m`;
  const hours = Math.trunc(d / HOUR);
  if (hours < 8) {
    const m = Math.trunc(d / MINUTE) % 60;
    return m === 0 ? `${hours}h` : `${hours}h${m}m`;
  }
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) {
    const h = hours % 24;
    return h === 0 ? `${Math.trunc(hours / 24)}d` : `${Math.trunc(hours / 24)}d${h}h`;
  }
  if (hours < 24 * 365 * 2) return `${Math.trunc(hours / 24)}d`;
  if (hours < 24 * 365 * 8) {
    const dy = Math.trunc(hours / 24) % 365;
    const y = Math.trunc(hours / 24 / 365);
    return dy === 0 ? `${y}y` : `${y}y${dy}d`;
  }
  return `${Math.trunc(hours / 24 / 365)}y`;
}

/** `duration.ShortHumanDuration(d)`, `d` in nanoseconds: one unit (`45s`, `3m`, `5h`, `3d`, `2y`). */
export function shortHumanDuration(d: number): string {
  const seconds = Math.trunc(d / SECOND);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.trunc(d / MINUTE);
  if (minutes < 60) return `${minutes}m`;
  const hours = Math.trunc(d / HOUR);
  if (hours < 24) return `${hours}h`;
  if (hours < 24 * 365) return `${Math.trunc(hours / 24)}d`;
  return `${Math.trunc(d / HOUR / 24 / 365)}y`;
}

/**
 * Unix milliseconds of an API timestamp (`metav1.Time` RFC 3339, `metav1.MicroTime` with
 * microseconds); undefined for an absent or empty one (Go's zero time).
 */
export function timeMs(t: unknown): number | undefined {
  if (typeof t !== 'string' || t === '') return undefined;
  const ms = Date.parse(t);
  // Go's zero time `0001-01-01T00:00:00Z` is IsZero.
  if (Number.isNaN(ms) || ms === ZERO_TIME_MS) return undefined;
  return ms;
}

const ZERO_TIME_MS = Date.parse('0001-01-01T00:00:00Z');

/**
 * printers.go `translateTimestampSince` / `translateMicroTimestampSince`: `<unknown>` for a zero
 * time, else `HumanDuration(now − t)`.
 */
export function since(t: unknown, nowMs: number): string {
  const ms = timeMs(t);
  return ms === undefined ? '<unknown>' : humanDuration((nowMs - ms) * 1e6);
}
