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
