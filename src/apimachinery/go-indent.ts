/**
 * The apiserver's indented JSON (`pretty=true`, a curl/Wget/browser User-Agent, an Accept clause's
 * `pretty=1`): apimachinery `runtime/serializer/json/json.go` `doEncode` writes
 * `json.MarshalIndent(obj, "", "  ")` where the compact serializer writes `json.NewEncoder(w).Encode(obj)`.
 * `MarshalIndent` is `Marshal` then `appendIndent` (Go `src/encoding/json/encode.go`), and
 * `Marshal`'s bytes are the Encoder's without its final newline (both escape HTML); so the indented
 * answer is Go's `appendIndent` (`src/encoding/json/indent.go`, Go 1.26, the build without
 * `goexperiment.jsonv2` that Kubernetes ships) of the compact answer the cache already writes
 * byte for byte, with the newline dropped. Checked side by side with the apiserver v1.37.2
 * (test/e2e/pretty-answers.test.ts).
 */

import {
  BACKSLASH,
  CLOSE_BRACE,
  CLOSE_BRACKET,
  COLON,
  COMMA,
  isSpace,
  OPEN_BRACE,
  OPEN_BRACKET,
  QUOTE,
} from './json-bytes.ts';

const NEWLINE = 0x0a;
const SPACE = 0x20;

/** The indent of one nesting level: `MarshalIndent(obj, "", "  ")`. */
const INDENT = 2;

/**
 * Go's `appendIndent(dst, src, "", "  ")` over JSON given in pieces (a LIST's head, items and
 * tail), one {@link GoIndenter.indent} call per piece in order; the state between pieces is kept.
 * The input must be valid JSON (the cache's own compact answers): the scanner's errors are not
 * ported. Whitespace outside strings is dropped (Go's scanner skips it between tokens; the only
 * whitespace in the cache's answers is the Encoder's final newline, which `Marshal` does not
 * write). Non-ASCII bytes only occur inside strings and are copied unchanged, as Go copies them.
 */
export class GoIndenter {
  private depth = 0;
  /** After `{` or `[`: the newline waits for the next byte (none for `{}` and `[]`). */
  private needIndent = false;
  private inString = false;
  /** Inside a string, after a backslash: the next byte is escaped. */
  private escaped = false;

  /**
   * Indents `src` (the next piece) into `out` from offset `at`, or only counts when `out` is
   * undefined; returns the offset after the written (counted) bytes. `out` must have room:
   * measure with a fresh indenter first.
   */
  indent(src: Buffer, out: Buffer | undefined, at: number): number {
    // The state in locals while the piece is scanned (V8 keeps them in registers).
    let { depth, needIndent, inString, escaped } = this;
    let run = 0; // start of the bytes of src copied as they are, not yet written
    let backslash = -2; // the next backslash at or after i (-1: none left; -2: not looked for)
    const n = src.length;
    let i = 0;
    while (i < n) {
      if (inString) {
        // A string's bytes are copied as they are: jump to its closing quote, stepping over
        // escapes. Its first bytes are looked at here (most strings are short keys and values);
        // a longer one's next quote and backslash are found natively (each found once per piece).
        const near = Math.min(i + 32, n);
        for (; i < near; i++) {
          const c = src[i]!;
          if (escaped) escaped = false;
          else if (c === BACKSLASH) escaped = true;
          else if (c === QUOTE) break;
        }
        if (i < near) {
          inString = false;
          i++;
          continue;
        }
        if (i === n) break;
        if (escaped) {
          escaped = false;
          i++;
          continue;
        }
        if (backslash !== -1 && backslash < i) backslash = src.indexOf(BACKSLASH, i);
        const quote = src.indexOf(QUOTE, i);
        if (backslash !== -1 && (quote === -1 || backslash < quote)) {
          escaped = true;
          i = backslash + 1;
          continue;
        }
        if (quote === -1) break; // the string goes on in the next piece
        inString = false;
        i = quote + 1;
        continue;
      }
      const c = src[i]!;
      if (isSpace(c)) {
        at = copyRun(src, run, i, out, at);
        run = i + 1;
        i++;
        continue;
      }
      if (needIndent && c !== CLOSE_BRACE && c !== CLOSE_BRACKET) {
        needIndent = false;
        depth++;
        at = copyRun(src, run, i, out, at);
        run = i;
        at = newline(out, at, depth);
      }
      switch (c) {
        case QUOTE:
          inString = true;
          break;
        case OPEN_BRACE:
        case OPEN_BRACKET:
          needIndent = true;
          break;
        case COMMA:
          at = copyRun(src, run, i + 1, out, at);
          run = i + 1;
          at = newline(out, at, depth);
          break;
        case COLON:
          at = copyRun(src, run, i + 1, out, at);
          run = i + 1;
          if (out) out[at] = SPACE;
          at++;
          break;
        case CLOSE_BRACE:
        case CLOSE_BRACKET:
          if (needIndent) {
            needIndent = false;
          } else {
            depth--;
            at = copyRun(src, run, i, out, at);
            run = i;
            at = newline(out, at, depth);
          }
          break;
      }
      i++;
    }
    this.depth = depth;
    this.needIndent = needIndent;
    this.inString = inString;
    this.escaped = escaped;
    return copyRun(src, run, n, out, at);
  }
}

/**
 * Copies `src[from, to)` to `out` at `at` (counts only without `out`); the offset after it.
 * Most runs are a key or a short value: copied byte by byte, without a native call.
 */
function copyRun(src: Buffer, from: number, to: number, out: Buffer | undefined, at: number): number {
  const len = to - from;
  if (len <= 0 || !out) return at + Math.max(len, 0);
  if (len < 32) {
    for (let k = 0; k < len; k++) out[at + k] = src[from + k]!;
    return at + len;
  }
  return at + src.copy(out, at, from, to);
}

/** Go's `appendNewline` with prefix "" and indent "  ": `\n` and `depth` indents. */
function newline(out: Buffer | undefined, at: number, depth: number): number {
  const width = 1 + depth * INDENT;
  if (out) {
    out[at] = NEWLINE;
    for (let k = 1; k < width; k++) out[at + k] = SPACE;
  }
  return at + width;
}

/**
 * The indented form of compact JSON given in `pieces` (Go `MarshalIndent(obj, "", "  ")` when
 * the pieces are `json.NewEncoder(w).Encode(obj)`'s bytes): one Buffer per piece, in order, each
 * exactly its indented length. Two passes: the lengths first (so the answer's length is known
 * before anything is written), then the bytes, piece by piece, only as `next` is called.
 */
export function indentedPieces(pieces: readonly Buffer[]): {
  length: number;
  next(): Buffer | undefined;
} {
  const measure = new GoIndenter();
  const lengths = pieces.map((p) => measure.indent(p, undefined, 0));
  let length = 0;
  for (const l of lengths) length += l;
  const write = new GoIndenter();
  let i = 0;
  return {
    length,
    next(): Buffer | undefined {
      if (i >= pieces.length) return undefined;
      const out = Buffer.allocUnsafe(lengths[i]!);
      const end = write.indent(pieces[i]!, out, 0);
      if (end !== out.length) throw new Error(`indented piece ${i}: ${end} of ${out.length} bytes`);
      i++;
      return out;
    },
  };
}

/** The indented form of one whole compact JSON text (tests, small answers). */
export function goIndent(compact: Buffer): Buffer {
  const p = indentedPieces([compact]);
  return p.next() ?? Buffer.alloc(0);
}
