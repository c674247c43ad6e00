import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WriteTracker, writeEffectOf } from '../../../src/server/write-tracker.ts';

const b = (v: unknown) => Buffer.from(JSON.stringify(v));

describe('writeEffectOf', () => {
  it('an object answer gives its RV', () => {
    assert.deepEqual(
      writeEffectOf(b({ kind: 'Pod', metadata: { name: 'p', resourceVersion: '42' } }), 'POST', 'a'),
      {
        resourceVersion: 42n,
        deleted: [],
      },
    );
  });
  it('a DELETE Status names the deleted object (namespace from the request)', () => {
    const s = {
      kind: 'Status',
      status: 'Success',
      metadata: {},
      details: { name: 'c', kind: 'configmaps', uid: 'u' },
    };
    assert.deepEqual(writeEffectOf(b(s), 'DELETE', 'ns1'), {
      deleted: [{ name: 'c', namespace: 'ns1', uid: 'u' }],
    });
  });
  it('a deletecollection list names every item', () => {
    const l = {
      kind: 'ConfigMapList',
      metadata: { resourceVersion: '704' },
      items: [
        { metadata: { name: 'x', namespace: 'n', uid: 'u1' } },
        { metadata: { name: 'y', namespace: 'n' } },
      ],
    };
    assert.deepEqual(writeEffectOf(b(l), 'DELETE', undefined), {
      resourceVersion: 704n,
      deleted: [
        { name: 'x', namespace: 'n', uid: 'u1' },
        { name: 'y', namespace: 'n' },
      ],
    });
  });
  it('garbage and failure Statuses have no effect', () => {
    assert.deepEqual(writeEffectOf(Buffer.from('not json'), 'DELETE', 'a'), { deleted: [] });
    assert.deepEqual(
      writeEffectOf(b({ kind: 'Status', status: 'Failure', details: { name: 'x' } }), 'DELETE', 'a'),
      {
        deleted: [],
      },
    );
  });
});

describe('WriteTracker', () => {
  it('keeps the max RV and expires pending deletes after 60 s', () => {
    const t = new WriteTracker();
    t.apply('pods.', { resourceVersion: 9n, deleted: [] }, 0);
    t.apply('pods.', { resourceVersion: 7n, deleted: [{ name: 'p' }] }, 1000);
    assert.equal(t.required('pods.'), 9n);
    assert.equal(t.pendingDeletes('pods.', 60_999).length, 1);
    assert.equal(t.pendingDeletes('pods.', 61_000).length, 0);
  });
  it('resolved deletes are forgotten', () => {
    const t = new WriteTracker();
    t.apply('c.', { deleted: [{ name: 'a' }, { name: 'b' }] }, 0);
    const [a] = t.pendingDeletes('c.', 0);
    t.resolveDeletes('c.', new Set([a!]));
    assert.deepEqual(
      t.pendingDeletes('c.', 0).map((d) => d.name),
      ['b'],
    );
  });
});
