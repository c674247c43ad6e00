/**
 * Cases marked `attack:` are inputs found by attacking the proxy against a real apiserver
 * (v1.37.2) where the cache answered differently from the apiserver; each must now reach the
 * apiserver (or be accepted like it does).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseGoQuery } from '../../../src/apimachinery/go-query.ts';

describe('attack: query strings are parsed like Go url.ParseQuery', () => {
  it('drops pairs with a bad escape or a semicolon, as the apiserver does', () => {
    const q = parseGoQuery('labelSelector=a%ZZ&resourceVersion=0&x=a;b&fieldSelector=a+b%3Dc&&watch');
    assert.deepEqual(
      [...q],
      [
        ['resourceVersion', '0'],
        ['fieldSelector', 'a b=c'],
        ['watch', ''],
      ],
    );
    assert.deepEqual(
      [...parseGoQuery('resourceVersion=1&resourceVersion=2')],
      [
        ['resourceVersion', '1'],
        ['resourceVersion', '2'],
      ],
    );
    assert.equal(parseGoQuery('n=caf%C3%A9').get('n'), 'café');
  });
});
