/**
 * The token of an `Authorization` header exactly as the apiserver's bearer authenticator takes it
 * (`k8s.io/apiserver/pkg/authentication/request/bearertoken/bearertoken.go`):
 *
 * ```go
 * auth := strings.TrimSpace(req.Header.Get("Authorization"))
 * parts := strings.SplitN(auth, " ", 3)
 * if len(parts) < 2 || strings.ToLower(parts[0]) != "bearer" { no opinion }
 * token := parts[1]
 * if len(token) == 0 { no opinion }   // "Bearer  tok": the space before the token case
 * ```
 *
 * So only single spaces separate: `Bearer\ttok` and `Bearer  tok` carry NO token (the request is
 * anonymous to the apiserver), and `Bearer tok junk` carries `tok` (what follows is ignored).
 */

/**
 * UTF-8 encodings (as the latin1 strings Node gives header bytes in) of the non-ASCII runes Go's
 * `unicode.IsSpace` accepts: U+0085, U+00A0, U+1680, U+2000–U+200A, U+2028, U+2029, U+202F,
 * U+205F, U+3000.
 */
const UTF8_SPACES = [
  '\xc2\x85',
  '\xc2\xa0',
  '\xe1\x9a\x80',
  ...Array.from({ length: 11 }, (_, i) => `\xe2\x80${String.fromCharCode(0x80 + i)}`),
  '\xe2\x80\xa8',
  '\xe2\x80\xa9',
  '\xe2\x80\xaf',
  '\xe2\x81\x9f',
  '\xe3\x80\x80',
];
const ASCII_SPACES = new Set(['\t', '\n', '\v', '\f', '\r', ' ']);

/** Go's `strings.TrimSpace` over the bytes of a header value (one latin1 char per byte). */
export function goTrimSpace(s: string): string {
  let start = 0;
  let end = s.length;
  for (;;) {
    if (start < end && ASCII_SPACES.has(s[start]!)) start++;
    else {
      const u = UTF8_SPACES.find((sp) => s.startsWith(sp, start) && start + sp.length <= end);
      if (!u) break;
      start += u.length;
    }
  }
  for (;;) {
    if (end > start && ASCII_SPACES.has(s[end - 1]!)) end--;
    else {
      const u = UTF8_SPACES.find((sp) => end - sp.length >= start && s.endsWith(sp, end));
      if (!u) break;
      end -= u.length;
    }
  }
  return s.slice(start, end);
}

/**
 * The bearer token of the `Authorization` header value `header`, or undefined when the apiserver's
 * bearer authenticator finds none (not the `bearer` scheme, no second field, an empty one).
 */
export function bearerToken(header: string): string | undefined {
  const auth = goTrimSpace(header);
  if (auth === '') return undefined;
  // strings.SplitN(auth, " ", 3): the first two fields are all that matter.
  const first = auth.indexOf(' ');
  if (first < 0) return undefined;
  // strings.ToLower: no non-ASCII rune lower-cases into the ASCII letters of "bearer".
  if (auth.slice(0, first).toLowerCase() !== 'bearer') return undefined;
  const second = auth.indexOf(' ', first + 1);
  const token = second < 0 ? auth.slice(first + 1) : auth.slice(first + 1, second);
  return token === '' ? undefined : token;
}
