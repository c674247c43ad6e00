import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { topLevelValueSpan } from '../../../src/apimachinery/json-span.ts';

const span = (json: string, key = 'metadata') => {
  const b = Buffer.from(json);
  const s = topLevelValueSpan(b, key);
  return s ? b.subarray(s[0], s[1]).toString() : undefined;
};

describe('topLevelValueSpan', () => {
  it('finds metadata of a built-in object (third key)', () => {
    assert.equal(
      span('{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","labels":{"x":"}"}},"spec":{}}'),
      '{"name":"a","labels":{"x":"}"}}',
    );
  });
  it('finds metadata of a custom resource after sorted keys, skipping nested and escaped strings', () => {
    const cr =
      '{"apiVersion":"x/v1","data":{"metadata":{"fake":1},"s":"a\\"metadata\\":{","arr":[1,[2,{"metadata":3}]]},"kind":"W","metadata":{"name":"w","annotations":{"q":"\\\\"}},"spec":{"n":-1.5e3,"t":true,"z":null}}';
    assert.equal(span(cr), '{"name":"w","annotations":{"q":"\\\\"}}');
    assert.equal(span(cr, 'spec'), '{"n":-1.5e3,"t":true,"z":null}');
    assert.equal(span(cr, 'kind'), '"W"');
  });
  it('tolerates whitespace', () => {
    assert.equal(span(' {\n "a" : 1 ,\n "metadata" : { "n" : [ ] } }'), '{ "n" : [ ] }');
  });
  it('returns undefined when absent or malformed', () => {
    assert.equal(span('{"kind":"Pod"}'), undefined);
    assert.equal(span('{}'), undefined);
    assert.equal(span('[{"metadata":{}}]'), undefined);
    assert.equal(span('{"a":"unterminated'), undefined);
    assert.equal(span('{"a":{"b":1}'), undefined);
  });
});
