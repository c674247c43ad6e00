import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { goIsPrint, goQuote } from '../../../src/apimachinery/go-quote.ts';
import { notFound } from '../../../src/apimachinery/status.ts';

/**
 * [UTF-8 bytes (base64), Go 1.26 `strconv.Quote` of them]: printed by a Go program
 * (`json.Marshal([]byte(c))`, `strconv.Quote(c)`), not written by hand.
 */
const GO: [string, string][] = [
  ['cGxhaW4tbmFtZQ==', '"plain-name"'],
  ['YQFi', '"a\\x01b"'],
  ['YeKArmI=', '"a\\u202eb"'],
  ['YX9i', '"a\\x7fb"'],
  ['Yf9i', '"a\\xffb"'],
  ['YSJi', '"a\\"b"'],
  ['YVxi', '"a\\\\b"'],
  ['YQliCmMNZAdlCGYMZwto', '"a\\tb\\nc\\rd\\ae\\bf\\fg\\vh"'],
  ['YcKgYg==', '"a\\u00a0b"'],
  ['YeKAqGI=', '"a\\u2028b"'],
  ['YeKAi2I=', '"a\\u200bb"'],
  ['YeOAgGI=', '"a\\u3000b"'],
  ['YcOpYg==', '"aéb"'],
  ['YfCfmIBi', '"a😀b"'],
  ['YfOggIFi', '"a\\U000e0001b"'],
  ['Ye+/vWI=', '"a�b"'],
  ['Ye2ggGI=', '"a\\xed\\xa0\\x80b"'],
  ['YcCvYg==', '"a\\xc0\\xafb"'],
  ['YeKAYg==', '"a\\xe2\\x80b"'],
  ['YfSQgIBi', '"a\\xf4\\x90\\x80\\x80b"'],
  ['AA==', '"\\x00"'],
  ['YcyBYg==', '"áb"'],
  ['7oCA', '"\\ue000"'],
  ['9I+/vw==', '"\\U0010ffff"'],
  ['zbg=', '"\\u0378"'],
];

describe("Go's strconv.Quote", () => {
  it('quotes raw bytes as Go does, invalid UTF-8 byte by byte', () => {
    for (const [b64, want] of GO) assert.equal(goQuote(Buffer.from(b64, 'base64')), want, b64);
  });

  it('quotes JS strings as Go quotes their UTF-8 bytes', () => {
    for (const [b64, want] of GO) {
      const bytes = Buffer.from(b64, 'base64');
      const str = bytes.toString('utf8');
      // Only valid UTF-8 round-trips through a JS string.
      if (!Buffer.from(str, 'utf8').equals(bytes)) continue;
      assert.equal(goQuote(str), want, b64);
    }
  });

  it('quotes a lone surrogate as its WTF-8 bytes (Go rejects them: \\x escapes)', () => {
    assert.equal(goQuote('a\ud800b'), '"a\\xed\\xa0\\x80b"');
  });

  it('IsPrint: ASCII space only among spaces, no controls or format characters', () => {
    assert.equal(goIsPrint(0x20), true);
    assert.equal(goIsPrint(0xa0), false);
    assert.equal(goIsPrint(0x202e), false);
    assert.equal(goIsPrint(0xe9), true);
    assert.equal(goIsPrint(0x1f600), true);
  });

  it('NotFound quotes the name with %q; details keep it as it is', () => {
    const s = notFound('', 'configmaps', 'a\u0001b\u202e"').status;
    assert.equal(s.message, 'configmaps "a\\x01b\\u202e\\"" not found');
    assert.equal(s.details?.name, 'a\u0001b\u202e"');
  });
});
