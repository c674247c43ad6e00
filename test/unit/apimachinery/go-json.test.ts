import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { encodeStatus, goJSON } from '../../../src/apimachinery/go-json.ts';
import { tooOldResourceVersion } from '../../../src/apimachinery/status.ts';

describe('Go encoding/json output', () => {
  it('ERROR Status in Go field order with Go escaping', () => {
    assert.equal(
      String(encodeStatus(tooOldResourceVersion(5n, 10n).status)),
      '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 5 (10)","reason":"Expired","code":410}',
    );
    assert.equal(goJSON('<nil> & >'), '"\\u003cnil\\u003e \\u0026 \\u003e"');
  });
  it('a value with no JSON text throws naming it (was "Cannot read properties of undefined (reading \'replace\')")', () => {
    assert.throws(() => goJSON(undefined), {
      name: 'TypeError',
      message: 'goJSON: undefined has no JSON encoding',
    });
    assert.throws(() => goJSON(() => 1), {
      name: 'TypeError',
      message: 'goJSON: function has no JSON encoding',
    });
    // Inside a value, JSON.stringify's rules stand: an undefined field is left out, null in a list.
    assert.equal(goJSON({ a: undefined, b: [undefined] }), '{"b":[null]}');
  });
});
