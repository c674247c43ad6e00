import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { answerMeta } from '../../../../src/server/read-your-writes/answer-meta.ts';
import { k8sProtobuf, objectMeta, pbField } from '../../../support/protobuf-wire.ts';

const JSON_TYPE = 'application/json';

describe('issue 11 item 3: answerMeta', () => {
  it('gzip, also several members (one per flush, as Kubernetes 1.37 watch-lists)', () => {
    const text = JSON.stringify({ kind: 'ConfigMap', metadata: { name: 'c', resourceVersion: '77' } });
    const one = gzipSync(text);
    const multi = Buffer.concat([gzipSync(text.slice(0, 10)), gzipSync(text.slice(10))]);
    for (const body of [one, multi]) {
      const m = answerMeta(body, { contentType: JSON_TYPE, contentEncoding: 'gzip' }, true);
      assert.equal(m?.metadata?.resourceVersion, '77');
    }
  });

  it("a prefix of a large gzip JSON LIST gives the list's RV (metadata comes before items)", () => {
    const items = Array.from({ length: 3000 }, (_, i) => ({
      metadata: { name: `n${i}`, resourceVersion: `${i}` },
    }));
    const text = JSON.stringify({ kind: 'ConfigMapList', metadata: { resourceVersion: '9001' }, items });
    const body = gzipSync(text).subarray(0, 2048);
    const m = answerMeta(body, { contentType: JSON_TYPE, contentEncoding: 'gzip' }, false);
    assert.deepEqual(m, { metadata: { resourceVersion: '9001' } });
  });

  it('protobuf, plain or gzipped', () => {
    const pb = k8sProtobuf('v1', 'ConfigMap', pbField(1, objectMeta('c', 'ns', 'u', '55')));
    const h = { contentType: 'application/vnd.kubernetes.protobuf' };
    assert.equal(answerMeta(pb, h, true)?.metadata?.resourceVersion, '55');
    const z = answerMeta(gzipSync(pb), { ...h, contentEncoding: 'gzip' }, true);
    assert.equal(z?.metadata?.resourceVersion, '55');
  });

  it("YAML: the top-level metadata's resourceVersion, not an item's", () => {
    const list =
      'apiVersion: v1\nitems:\n- metadata:\n    resourceVersion: "5"\nkind: List\nmetadata:\n  continue: ""\n  resourceVersion: "9"\n';
    assert.deepEqual(answerMeta(Buffer.from(list), { contentType: 'application/yaml' }, true), {
      metadata: { resourceVersion: '9' },
    });
  });

  it('CBOR, YAML without metadata, unknown encodings: not learnt', () => {
    assert.equal(
      answerMeta(Buffer.from([0xd9, 0xd9, 0xf7, 0xa1]), { contentType: 'application/cbor' }, true),
      undefined,
    );
    assert.equal(
      answerMeta(Buffer.from('metadata:\n'), { contentType: 'application/yaml' }, true),
      undefined,
    );
    assert.equal(
      answerMeta(Buffer.from('x'), { contentType: JSON_TYPE, contentEncoding: 'br' }, true),
      undefined,
    );
  });
});
