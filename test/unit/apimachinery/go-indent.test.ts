/**
 * The port of Go's `json.Indent` (`appendIndent`, Go 1.26 `src/encoding/json/indent.go`) that the
 * apiserver's pretty serializer (`json.MarshalIndent(obj, "", "  ")`) applies. Each expected text
 * below is what Go 1.26 wrote for the compact text beside it (`json.NewEncoder(w).Encode(v)` and
 * `json.MarshalIndent(v, "", "  ")` of the same value, run once by hand); the e2e side by side
 * with the apiserver is test/e2e/pretty-answers.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GoIndenter, goIndent, indentedPieces } from '../../../src/apimachinery/go-indent.ts';

/** [the Encoder's compact text, MarshalIndent's], both from Go 1.26. */
const GO: [string, string][] = [
  // Escaped quotes and backslashes, punctuation inside strings, an empty string.
  [
    '{"e":"","p":"{[,:]}\\\\","q":"a\\"b\\\\c\\\\\\"d"}\n',
    '{\n  "e": "",\n  "p": "{[,:]}\\\\",\n  "q": "a\\"b\\\\c\\\\\\"d"\n}',
  ],
  // Strings longer than the indenter's first look (32 bytes), escapes on either side of it.
  [
    `{"k":"${'a'.repeat(31)}\\\\${'b'.repeat(40)}\\"${'c'.repeat(33)}\\\\","l":["${'x'.repeat(70)}\\"",{}]}\n`,
    `{\n  "k": "${'a'.repeat(31)}\\\\${'b'.repeat(40)}\\"${'c'.repeat(33)}\\\\",\n  "l": [\n    "${'x'.repeat(70)}\\"",\n    {}\n  ]\n}`,
  ],
  // Empty objects and arrays, nested.
  [
    '{"a":{},"b":[],"c":[{},[],{"d":[[]]}]}\n',
    '{\n  "a": {},\n  "b": [],\n  "c": [\n    {},\n    [],\n    {\n      "d": [\n        []\n      ]\n    }\n  ]\n}',
  ],
  // Non-ASCII (2- and 4-byte UTF-8) and the HTML escapes, copied as they are.
  [
    '{"n":"ü𝄞 \\u003c\\u0026\\u003e \\u2028 \\u0001"}\n',
    '{\n  "n": "ü𝄞 \\u003c\\u0026\\u003e \\u2028 \\u0001"\n}',
  ],
  // Numbers and literals.
  [
    '[0,-1.5e+10,1e-7,12345678901234567890,true,false,null]\n',
    '[\n  0,\n  -1.5e+10,\n  1e-7,\n  12345678901234567890,\n  true,\n  false,\n  null\n]',
  ],
  ['[]\n', '[]'],
  ['{}\n', '{}'],
  ['"s,:{}"\n', '"s,:{}"'],
  ['7\n', '7'],
];

describe('goIndent: Go json.MarshalIndent(v, "", "  ") of the compact JSON', () => {
  for (const [compact, want] of GO) {
    it(JSON.stringify(compact), () => {
      assert.equal(goIndent(Buffer.from(compact)).toString(), want);
    });
  }

  it('the same bytes whatever the pieces: cut at every byte, inside escapes and UTF-8 sequences', () => {
    for (const [compact, want] of GO) {
      const bytes = Buffer.from(compact);
      for (const size of [1, 2, 3, 4, 31, 33]) {
        const pieces: Buffer[] = [];
        for (let at = 0; at < bytes.length; at += size) pieces.push(bytes.subarray(at, at + size));
        const p = indentedPieces(pieces);
        const out: Buffer[] = [];
        for (let b = p.next(); b; b = p.next()) out.push(b);
        assert.equal(out.length, pieces.length);
        assert.equal(Buffer.concat(out).toString(), want, `${JSON.stringify(compact)} in pieces of ${size}`);
        assert.equal(p.length, Buffer.byteLength(want));
      }
    }
  });

  it('counting without writing gives the written length, and the state carries between pieces', () => {
    const count = new GoIndenter();
    assert.equal(count.indent(Buffer.from('{"a":['), undefined, 0), '{\n  "a": ['.length);
    assert.equal(count.indent(Buffer.from(']}'), undefined, 0), ']\n}'.length);
    const write = new GoIndenter();
    const out = Buffer.alloc(20, 0x2e);
    assert.equal(write.indent(Buffer.from('{"a":[1'), out, 3), 3 + '{\n  "a": [\n    1'.length);
    assert.equal(out.toString(), '...{\n  "a": [\n    1.', 'written from 3, nothing past the end');
  });

  it('a LIST as the cache writes it (head, items, tail): the indented bytes of the whole text', () => {
    const head = '{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"9"},"items":[';
    const items = ['{"metadata":{"name":"a"},"data":{"k":"v\\"]"}}', '{"metadata":{"name":"b"}}'];
    const pieces = [head, items[0]!, ',', items[1]!, ']}\n'].map((s) => Buffer.from(s));
    const p = indentedPieces(pieces);
    const out: Buffer[] = [];
    for (let b = p.next(); b; b = p.next()) out.push(b);
    const whole = JSON.stringify(JSON.parse(Buffer.concat(pieces).toString()), null, 2);
    assert.equal(Buffer.concat(out).toString(), whole);
  });
});
