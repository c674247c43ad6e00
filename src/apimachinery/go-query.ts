/**
 * The query string as the apiserver sees it: Go's `url.ParseQuery` (`net/url/url.go`
 * `parseQuery`) via `req.URL.Query()`, which drops what it cannot parse instead of failing:
 * a pair containing `;` ("invalid semicolon separator in query") and a pair with a bad
 * `%` escape are skipped entirely. `URLSearchParams` keeps both verbatim, so
 * `labelSelector=a%ZZ` was a 400 from the cache but an unfiltered list from the apiserver.
 */

/** Parses `qs` (without the `?`) into the parameters the apiserver would decode. */
export function parseGoQuery(qs: string): URLSearchParams {
  const out = new URLSearchParams();
  for (const pair of qs.split('&')) {
    if (pair === '' || pair.includes(';')) continue;
    const eq = pair.indexOf('=');
    const key = queryUnescape(eq < 0 ? pair : pair.slice(0, eq));
    const value = queryUnescape(eq < 0 ? '' : pair.slice(eq + 1));
    if (key === undefined || value === undefined) continue;
    out.append(key, value);
  }
  return out;
}

/** Go's `url.QueryUnescape`: `+` is a space, `%XX` must be two hex digits; undefined otherwise. */
function queryUnescape(s: string): string | undefined {
  if (/%(?![0-9a-fA-F]{2})/.test(s)) return undefined;
  const plus = s.replaceAll('+', ' ');
  try {
    return decodeURIComponent(plus);
  } catch {
    // Escapes of bytes that are not UTF-8: Go keeps the raw bytes; the closest string is lossy.
    const bytes: number[] = [];
    for (let i = 0; i < plus.length; i++) {
      if (plus[i] === '%') {
        bytes.push(Number.parseInt(plus.slice(i + 1, i + 3), 16));
        i += 2;
      } else bytes.push(...Buffer.from(plus[i]!, 'utf8'));
    }
    return Buffer.from(bytes).toString('utf8');
  }
}

/** `time.ParseDuration`'s units, in nanoseconds. */
const DURATION_UNITS: Record<string, bigint> = {
  ns: 1n,
  us: 1_000n,
  µs: 1_000n, // U+00B5 micro sign
  μs: 1_000n, // U+03BC Greek mu
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
};

const INT64_LIMIT = 1n << 63n;

/**
 * Go's `time.ParseDuration` (`[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+`, or `0`), in nanoseconds;
 * undefined where Go answers an error (no unit, an unknown unit, no digits, overflow). The
 * apiserver parses the `timeout` query parameter of a non-long-running request with it
 * (`endpoints/filters/request_deadline.go` `parseTimeout`) and answers 400 "invalid timeout
 * specified in the request URL" when it fails. Fractions are rounded like Go's only roughly.
 */
export function parseGoDuration(input: string): bigint | undefined {
  let s = input;
  let neg = false;
  if (s[0] === '-' || s[0] === '+') {
    neg = s[0] === '-';
    s = s.slice(1);
  }
  if (s === '0') return 0n;
  if (s === '') return undefined;
  let d = 0n;
  while (s !== '') {
    const m = /^([0-9]*)(?:\.([0-9]*))?([^0-9.]*)/.exec(s)!;
    const [all, whole = '', frac] = m;
    if (whole === '' && (frac === undefined || frac === '')) return undefined;
    const unit = DURATION_UNITS[m[3]!];
    if (unit === undefined) return undefined;
    let v = BigInt(whole === '' ? '0' : whole);
    if (v > INT64_LIMIT / unit) return undefined;
    v *= unit;
    if (frac !== undefined && frac !== '') v += BigInt(Math.floor(Number(`0.${frac}`) * Number(unit)));
    if (v > INT64_LIMIT) return undefined;
    d += v;
    if (d > INT64_LIMIT) return undefined;
    s = s.slice(all.length);
  }
  if (neg) return -d;
  return d > INT64_LIMIT - 1n ? undefined : d;
}
