/**
 * Go's `strconv.Quote` (what `fmt`'s `%q` prints for a string), as the apiserver quotes names and
 * values in its messages (`pods "x" not found`, `strconv.ParseInt: parsing "x": invalid syntax`,
 * `User "u" cannot get …`). JSON quoting agrees only on printable ASCII: Go escapes every rune
 * `unicode.IsPrint` rejects (`\x01`, `\u202e`, `\u00a0`, `\U000e0001`), writes invalid UTF-8
 * byte by byte (`\xff`), and keeps printable non-ASCII as it is.
 */

const LOWER_HEX = '0123456789abcdef';

/**
 * Go's `unicode.IsPrint`: letters, marks, numbers, punctuation, symbols (categories L, M, N, P,
 * S) and the ASCII space; not other spaces, controls, format characters (`Cf`: U+200B, U+202E),
 * private use, surrogates or unassigned code points. The categories are V8's Unicode tables, a
 * version that may be newer than Go's (code points assigned in between differ).
 *
 * Go (unicode/graphic.go):
 *
 * ```go
 * // IsPrint reports whether the rune is defined as printable by Go. Such
 * // characters include letters, marks, numbers, punctuation, symbols, and the
 * // ASCII space character, from categories [L], [M], [N], [P], [S] and the ASCII space
 * // character. This categorization is the same as [IsGraphic] except that the
 * // only spacing character is ASCII space, U+0020.
 * func IsPrint(r rune) bool {
 *     if uint32(r) <= MaxLatin1 {
 *         return properties[uint8(r)]&pp != 0
 *     }
 *     return In(r, PrintRanges...)
 * }
 * ```
 */
export function goIsPrint(r: number): boolean {
  if (r === 0x20) return true;
  return PRINT.test(String.fromCodePoint(r));
}

const PRINT = /^[\p{L}\p{M}\p{N}\p{P}\p{S}]$/u;

/**
 * The UTF-8 bytes of `s` as Go would hold them: a lone surrogate (a JS string can hold one, a
 * valid Go string cannot) is written as its 3-byte WTF-8 form, which Go's decoder rejects, so it
 * is quoted byte by byte like any invalid UTF-8 (`\xed\xa0\x80`).
 */
function wtf8(s: string): Uint8Array {
  const out: number[] = [];
  for (let i = 0; i < s.length; i++) {
    const c = s.codePointAt(i)!;
    if (c > 0xffff) i++;
    if (c < 0x80) out.push(c);
    else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 0x3f));
    else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f));
    else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 0x3f), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f));
  }
  return Uint8Array.from(out);
}

/**
 * Go's `utf8.DecodeRune` of `b` at `i`: `[rune, width]`, or `[-1, 1]` for an invalid encoding
 * (a stray continuation byte, a truncated or overlong sequence, a surrogate, beyond U+10FFFF).
 */
function decodeRune(b: Uint8Array, i: number): [number, number] {
  const b0 = b[i]!;
  if (b0 < 0x80) return [b0, 1];
  const cont = (k: number, lo = 0x80, hi = 0xbf) => {
    const x = b[i + k];
    return x !== undefined && x >= lo && x <= hi ? x & 0x3f : -1;
  };
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    const c1 = cont(1);
    return c1 < 0 ? [-1, 1] : [((b0 & 0x1f) << 6) | c1, 2];
  }
  if (b0 >= 0xe0 && b0 <= 0xef) {
    // E0: no overlong (A0..BF); ED: no surrogates (80..9F).
    const c1 = cont(1, b0 === 0xe0 ? 0xa0 : 0x80, b0 === 0xed ? 0x9f : 0xbf);
    const c2 = c1 < 0 ? -1 : cont(2);
    return c2 < 0 ? [-1, 1] : [((b0 & 0x0f) << 12) | (c1 << 6) | c2, 3];
  }
  if (b0 >= 0xf0 && b0 <= 0xf4) {
    // F0: no overlong (90..BF); F4: not beyond U+10FFFF (80..8F).
    const c1 = cont(1, b0 === 0xf0 ? 0x90 : 0x80, b0 === 0xf4 ? 0x8f : 0xbf);
    const c2 = c1 < 0 ? -1 : cont(2);
    const c3 = c2 < 0 ? -1 : cont(3);
    return c3 < 0 ? [-1, 1] : [((b0 & 0x07) << 18) | (c1 << 12) | (c2 << 6) | c3, 4];
  }
  return [-1, 1];
}

const hex = (v: number, digits: number) => v.toString(16).padStart(digits, '0');

/**
 * Go's `strconv.Quote(s)`: `s` in double quotes, `"` and `\` backslashed, `\a \b \f \n \r \t \v`
 * by name, other non-printable runes ({@link goIsPrint}) as `\xHH` (below U+0020 and U+007F),
 * `\uHHHH` or `\UHHHHHHHH` (lower-case hex), each byte of an invalid UTF-8 sequence as `\xHH`;
 * printable runes as they are. `s` is a JS string or the raw bytes (e.g. a percent-decoded path
 * segment that is not UTF-8).
 *
 * Go (strconv/quote.go, `appendQuotedWith` and `appendEscapedRune`, ASCIIonly and graphicOnly
 * false):
 *
 * ```go
 * for width := 0; len(s) > 0; s = s[width:] {
 *     r := rune(s[0])
 *     width = 1
 *     if r >= utf8.RuneSelf {
 *         r, width = utf8.DecodeRuneInString(s)
 *     }
 *     if width == 1 && r == utf8.RuneError {
 *         buf = append(buf, `\x`...)
 *         buf = append(buf, lowerhex[s[0]>>4])
 *         buf = append(buf, lowerhex[s[0]&0xF])
 *         continue
 *     }
 *     buf = appendEscapedRune(buf, r, quote, ASCIIonly, graphicOnly)
 * }
 * …
 * if r == rune(quote) || r == '\\' { // always backslashed
 *     buf = append(buf, '\\')
 *     buf = utf8.AppendRune(buf, r)
 *     return buf
 * }
 * if IsPrint(r) { return utf8.AppendRune(buf, r) }
 * switch r {
 * case '\a': buf = append(buf, `\a`...)
 * case '\b': buf = append(buf, `\b`...)
 * case '\f': buf = append(buf, `\f`...)
 * case '\n': buf = append(buf, `\n`...)
 * case '\r': buf = append(buf, `\r`...)
 * case '\t': buf = append(buf, `\t`...)
 * case '\v': buf = append(buf, `\v`...)
 * default:
 *     switch {
 *     case r < ' ' || r == 0x7f:
 *         buf = append(buf, `\x`...) // + 2 hex digits
 *     case !utf8.ValidRune(r):
 *         r = 0xFFFD
 *         fallthrough
 *     case r < 0x10000:
 *         buf = append(buf, `\u`...) // + 4 hex digits
 *     default:
 *         buf = append(buf, `\U`...) // + 8 hex digits
 *     }
 * }
 * ```
 */
export function goQuote(s: string | Uint8Array): string {
  const b = typeof s === 'string' ? wtf8(s) : s;
  let out = '"';
  for (let i = 0; i < b.length; ) {
    const [r, width] = decodeRune(b, i);
    if (r < 0) {
      out += `\\x${LOWER_HEX[b[i]! >> 4]}${LOWER_HEX[b[i]! & 0xf]}`;
      i += width;
      continue;
    }
    i += width;
    out += escapeRune(r);
  }
  return `${out}"`;
}

const NAMED: Record<number, string> = {
  7: '\\a',
  8: '\\b',
  12: '\\f',
  10: '\\n',
  13: '\\r',
  9: '\\t',
  11: '\\v',
};

/** `appendEscapedRune` for a valid rune `r`. */
function escapeRune(r: number): string {
  if (r === 0x22 || r === 0x5c) return `\\${String.fromCodePoint(r)}`;
  if (goIsPrint(r)) return String.fromCodePoint(r);
  const named = NAMED[r];
  if (named) return named;
  if (r < 0x20 || r === 0x7f) return `\\x${hex(r, 2)}`;
  if (r < 0x10000) return `\\u${hex(r, 4)}`;
  return `\\U${hex(r, 8)}`;
}
