import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EntryContext } from '../../../src/cache/entry-context.ts';
import { PODS } from '../../support/watch-cache-fixtures.ts';

describe('EntryContext shared sets (issue 32: a field-set object per pod cost ~125 heap bytes)', () => {
  it('equal field sets among the recent ones are one frozen object; a different value is another', () => {
    const ctx = new EntryContext(PODS);
    const set = (node: string, ip: string) => ({
      'spec.nodeName': node,
      'status.phase': 'Running',
      'status.podIP': ip,
    });
    const a = ctx.fields(set('n1', ''));
    assert.equal(ctx.fields(set('n1', '')), a);
    assert.ok(Object.isFrozen(a));
    assert.deepEqual(a, set('n1', ''));
    const b = ctx.fields(set('n1', '10.0.0.1'));
    assert.notEqual(b, a);
    assert.deepEqual(b, set('n1', '10.0.0.1'));
    // A set with a key less, or more, is not equal.
    assert.notEqual(ctx.fields({ 'spec.nodeName': 'n1', 'status.phase': 'Running' }), a);
    // Only the last 8 sets are compared: the first is built again after 8 others.
    for (let i = 0; i < 8; i++) ctx.fields(set(`x${i}`, ''));
    const again = ctx.fields(set('n1', ''));
    assert.notEqual(again, a);
    assert.deepEqual(again, a);
  });

  it('labels and field sets are shared apart', () => {
    const ctx = new EntryContext(PODS);
    const l = ctx.labels({ app: 'web' });
    assert.notEqual(ctx.fields({ app: 'web' }), l);
    assert.equal(ctx.labels({ app: 'web' }), l);
  });
});
