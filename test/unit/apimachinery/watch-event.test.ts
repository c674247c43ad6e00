import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { eventLine } from '../../../src/apimachinery/watch-event.ts';

describe('watch event lines', () => {
  it('event lines', () => {
    assert.equal(
      String(eventLine('MODIFIED', Buffer.from('{"a":1}'))),
      '{"type":"MODIFIED","object":{"a":1}}\n',
    );
  });
});
