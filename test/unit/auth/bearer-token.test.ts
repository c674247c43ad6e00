import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bearerToken, goTrimSpace } from '../../../src/auth/bearer-token.ts';

describe('bearerToken (bearertoken.go)', () => {
  it('the second space-separated field when the first is "bearer" in any case', () => {
    assert.equal(bearerToken('Bearer tok'), 'tok');
    assert.equal(bearerToken('bearer tok'), 'tok');
    assert.equal(bearerToken('BeArEr tok'), 'tok');
    // SplitN(auth, " ", 3): what follows the token is ignored, a tab inside the field is not a separator.
    assert.equal(bearerToken('Bearer tok junk'), 'tok');
    assert.equal(bearerToken('Bearer tok  junk'), 'tok');
    assert.equal(bearerToken('Bearer tok\tjunk'), 'tok\tjunk');
    // TrimSpace first.
    assert.equal(bearerToken(' \tBearer tok \t'), 'tok');
    assert.equal(bearerToken('Bearer tok\xc2\xa0'), 'tok');
  });
  it('no token: another scheme, one field, a tab or two spaces before the token, empty', () => {
    for (const h of [
      '',
      '   ',
      'Bearer',
      'Bearer ',
      'Bearer  ',
      'Bearer\ttok',
      'Bearer  tok',
      'Bearerx tok',
      'Basic dXNlcjpwdw==',
      'tok',
      'Bearer\xc2\xa0tok',
    ])
      assert.equal(bearerToken(h), undefined, JSON.stringify(h));
  });
});

describe('goTrimSpace (strings.TrimSpace over header bytes)', () => {
  it('ASCII white space and the UTF-8 encodings of unicode.IsSpace runes, at both ends only', () => {
    assert.equal(goTrimSpace('\t\n\v\f\r a b \r\n'), 'a b');
    assert.equal(goTrimSpace('\xc2\x85\xe2\x80\x8aa\xc2\xa0b\xe3\x80\x80\xe2\x81\x9f'), 'a\xc2\xa0b');
    // Bytes that are not a space rune's encoding stay (Go decodes them as RuneError).
    assert.equal(goTrimSpace('\xa0a\x85'), '\xa0a\x85');
    assert.equal(goTrimSpace('\xe2\x80\x8b'), '\xe2\x80\x8b');
  });
});
