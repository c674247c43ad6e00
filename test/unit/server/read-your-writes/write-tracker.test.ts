import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { answerMeta } from '../../../../src/server/read-your-writes/answer-meta.ts';
import {
  RECENTLY_SHOWN_KEYS,
  RECENTLY_SHOWN_MS,
  WriteTracker,
  writeEffectOf,
} from '../../../../src/server/read-your-writes/write-tracker.ts';
import { k8sProtobuf, objectMeta, pbField } from '../../../support/protobuf-wire.ts';

const b = (v: unknown) => Buffer.from(JSON.stringify(v));
const JSON_H = { contentType: 'application/json' };
const effect = (body: Buffer, method: string, ns: string | undefined, h = JSON_H) =>
  writeEffectOf(answerMeta(body, h, true), method, ns);

describe('writeEffectOf', () => {
  it('an object answer gives its RV', () => {
    assert.deepEqual(
      effect(b({ kind: 'Pod', metadata: { name: 'p', resourceVersion: '42' } }), 'POST', 'a'),
      {
        resourceVersion: 42n,
        deleted: [],
        learnt: true,
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
    assert.deepEqual(effect(b(s), 'DELETE', 'ns1'), {
      deleted: [{ name: 'c', namespace: 'ns1', uid: 'u' }],
      learnt: true,
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
    assert.deepEqual(effect(b(l), 'DELETE', undefined), {
      resourceVersion: 704n,
      deleted: [
        { name: 'x', namespace: 'n', uid: 'u1' },
        { name: 'y', namespace: 'n' },
      ],
      learnt: true,
    });
  });
  it('an empty deletecollection wrote nothing: its list RV (the LIST before the deletes) is only shown, in JSON and protobuf', () => {
    const l = { kind: 'PartialObjectMetadataList', metadata: { resourceVersion: '705' }, items: [] };
    const shown = { shownRV: 705n, deleted: [], learnt: true };
    assert.deepEqual(effect(b(l), 'DELETE', 'n'), shown);
    const pb = k8sProtobuf('v1', 'ConfigMapList', pbField(1, pbField(2, '705')));
    assert.deepEqual(
      effect(pb, 'DELETE', 'n', { contentType: 'application/vnd.kubernetes.protobuf' }),
      shown,
    );
    // An empty list answered to anything but DELETE is not a deletecollection.
    assert.deepEqual(effect(b(l), 'POST', 'n'), { resourceVersion: 705n, deleted: [], learnt: true });
  });
  it('garbage and failure Statuses are not learnt (never "assume seen")', () => {
    assert.deepEqual(effect(Buffer.from('not json'), 'DELETE', 'a'), { deleted: [], learnt: false });
    assert.deepEqual(
      effect(b({ kind: 'Status', status: 'Failure', details: { name: 'x' } }), 'DELETE', 'a'),
      {
        deleted: [],
        learnt: false,
      },
    );
  });
  it('issue 11 item 3: gzip and protobuf write answers give their RV; CBOR is not learnt', () => {
    const json = b({ kind: 'ConfigMap', metadata: { name: 'c', resourceVersion: '61' } });
    assert.equal(
      effect(gzipSync(json), 'POST', 'a', { ...JSON_H, contentEncoding: 'gzip' } as never).resourceVersion,
      61n,
    );
    const pb = k8sProtobuf('v1', 'ConfigMap', pbField(1, objectMeta('c', 'a', 'u', '62')));
    const pbH = { contentType: 'application/vnd.kubernetes.protobuf' };
    assert.equal(effect(pb, 'PUT', 'a', pbH).resourceVersion, 62n);
    const cbor = effect(Buffer.from([0xd9, 0xd9, 0xf7, 0xa0]), 'POST', 'a', {
      contentType: 'application/cbor',
    });
    assert.deepEqual(cbor, { deleted: [], learnt: false });
  });
});

describe('WriteTracker', () => {
  it('keeps the max RV and expires pending deletes after 60 s', () => {
    const t = new WriteTracker();
    t.apply('pods.', { resourceVersion: 9n, deleted: [], learnt: true }, 0);
    t.apply('pods.', { resourceVersion: 7n, deleted: [{ name: 'p' }], learnt: true }, 1000);
    assert.equal(t.required('pods.'), 9n);
    assert.equal(t.pendingDeletes('pods.', 60_999).length, 1);
    assert.equal(t.pendingDeletes('pods.', 61_000).length, 0);
  });
  it("a shown RV is no write's: consistent reads wait for nothing, the cache must only have reached it", () => {
    const t = new WriteTracker();
    t.apply('c.', { shownRV: 705n, deleted: [], learnt: true }, 1000);
    assert.equal(t.required('c.'), 0n);
    assert.equal(t.shownRV('c.'), 705n);
  });
  it('resolved deletes are forgotten', () => {
    const t = new WriteTracker();
    t.apply('c.', { deleted: [{ name: 'a' }, { name: 'b' }], learnt: true }, 0);
    const [a] = t.pendingDeletes('c.', 0);
    t.resolveDeletes('c.', new Set([a!]));
    assert.deepEqual(
      t.pendingDeletes('c.', 0).map((d) => d.name),
      ['b'],
    );
  });
  it('issue 11 item 3: an answer not learnt makes the resource blind until an answer to a later request tells an RV', () => {
    const t = new WriteTracker();
    t.apply('c.', { deleted: [], learnt: false }, 1000, 990);
    assert.equal(t.isBlind('c.'), true);
    // A read that started before the blind write was answered proves nothing about it.
    t.shown('c.', 50n, 1000);
    assert.equal(t.isBlind('c.'), true);
    // One that started after it does (etcd is linearizable): its RV is at least the write's.
    t.shown('c.', 60n, 1001);
    assert.equal(t.isBlind('c.'), false);
    assert.equal(t.shownRV('c.'), 60n);
    assert.equal(t.required('c.'), 0n);
  });

  it('shownRecently: an RV at or above the lowest a forwarded read showed within 75 s', () => {
    const t = new WriteTracker();
    assert.equal(t.shownRecently('rq.', 258n, 0), false, 'nothing shown');
    t.shown('rq.', 258n, 1000);
    t.shown('rq.', 300n, 2000);
    assert.equal(t.shownRecently('rq.', 258n, 2000), true, 'the RV shown');
    assert.equal(t.shownRecently('rq.', 270n, 2000), true, 'newer than one shown');
    assert.equal(t.shownRecently('rq.', 257n, 2000), false, 'older than any shown');
    assert.equal(t.shownRecently('pods.', 258n, 2000), false, 'another resource');
    assert.equal(t.shownRecently('rq.', 258n, 1000 + RECENTLY_SHOWN_MS), true);
    assert.equal(t.shownRecently('rq.', 258n, 1001 + RECENTLY_SHOWN_MS), false, 'expired after 75 s');
    // After expiry the next shown RV starts a new lowest (a higher one).
    t.shown('rq.', 400n, 100_000);
    assert.equal(t.shownRecently('rq.', 300n, 100_000), false);
    assert.equal(t.shownRecently('rq.', 400n, 100_000), true);
  });

  it('shownUpstream remembers at most RECENTLY_SHOWN_KEYS resources (expired ones make room)', () => {
    const t = new WriteTracker();
    for (let i = 0; i < RECENTLY_SHOWN_KEYS; i++) t.shownUpstream(`r${i}.`, 5n, 0);
    t.shownUpstream('extra.', 5n, 1000);
    assert.equal(t.shownRecently('extra.', 5n, 1000), false, 'full: a new resource is ignored');
    assert.equal(t.shownRecently('r0.', 5n, 1000), true);
    t.shownUpstream('extra.', 5n, RECENTLY_SHOWN_MS + 1);
    assert.equal(t.shownRecently('extra.', 5n, RECENTLY_SHOWN_MS + 1), true, 'the expired ones were dropped');
  });
});
