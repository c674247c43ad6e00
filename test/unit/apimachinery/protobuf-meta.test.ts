import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeProtobufMeta } from '../../../src/apimachinery/protobuf-meta.ts';
import { k8sProtobuf, objectMeta, pbField } from '../../support/protobuf-wire.ts';

describe('issue 11 item 3: decodeProtobufMeta', () => {
  const cm = (name: string, rv: string) =>
    Buffer.concat([pbField(1, objectMeta(name, 'ns', `uid-${name}`, rv)), pbField(2, pbField(1, 'k'))]);

  it('an object: kind and ObjectMeta (field 1) name, namespace, uid, resourceVersion (field 6)', () => {
    assert.deepEqual(decodeProtobufMeta(k8sProtobuf('v1', 'ConfigMap', cm('c', '4242'))), {
      kind: 'ConfigMap',
      metadata: { name: 'c', namespace: 'ns', uid: 'uid-c', resourceVersion: '4242' },
    });
  });

  it('a list: ListMeta resourceVersion (field 2) and every item; a prefix still gives the RV', () => {
    const raw = Buffer.concat([
      pbField(1, pbField(2, '704')),
      pbField(2, cm('x', '700')),
      pbField(2, cm('y', '701')),
    ]);
    const body = k8sProtobuf('v1', 'ConfigMapList', raw);
    assert.deepEqual(decodeProtobufMeta(body), {
      kind: 'ConfigMapList',
      metadata: { resourceVersion: '704' },
      items: [
        { metadata: { name: 'x', namespace: 'ns', uid: 'uid-x', resourceVersion: '700' } },
        { metadata: { name: 'y', namespace: 'ns', uid: 'uid-y', resourceVersion: '701' } },
      ],
    });
    assert.deepEqual(decodeProtobufMeta(body.subarray(0, 40))?.metadata, { resourceVersion: '704' });
  });

  it('attack: a meta.k8s.io/v1beta1 PartialObjectMetadataList: items are field 1, ListMeta field 2', () => {
    // apis/meta/v1beta1/generated.proto numbers them the other way round from v1 (the apiserver
    // v1.37.2 writes {1: item…, 2: ListMeta}); read as v1, the first item was the ListMeta.
    const item = (name: string, rv: string) => pbField(1, objectMeta(name, 'ns', `uid-${name}`, rv));
    const raw = Buffer.concat([
      pbField(1, item('x', '700')),
      pbField(1, item('y', '701')),
      pbField(2, pbField(2, '704')),
    ]);
    const expected = {
      kind: 'PartialObjectMetadataList',
      metadata: { resourceVersion: '704' },
      items: [
        { metadata: { name: 'x', namespace: 'ns', uid: 'uid-x', resourceVersion: '700' } },
        { metadata: { name: 'y', namespace: 'ns', uid: 'uid-y', resourceVersion: '701' } },
      ],
    };
    assert.deepEqual(
      decodeProtobufMeta(k8sProtobuf('meta.k8s.io/v1beta1', 'PartialObjectMetadataList', raw)),
      expected,
    );
    const v1 = Buffer.concat([
      pbField(1, pbField(2, '704')),
      pbField(2, item('x', '700')),
      pbField(2, item('y', '701')),
    ]);
    assert.deepEqual(
      decodeProtobufMeta(k8sProtobuf('meta.k8s.io/v1', 'PartialObjectMetadataList', v1)),
      expected,
    );
  });

  it('an empty list: `items: []` when the answer is complete (protobuf writes no field for it), left out of a prefix', () => {
    const body = k8sProtobuf('v1', 'ConfigMapList', pbField(1, pbField(2, '705')));
    assert.deepEqual(decodeProtobufMeta(body, true), {
      kind: 'ConfigMapList',
      metadata: { resourceVersion: '705' },
      items: [],
    });
    assert.deepEqual(decodeProtobufMeta(body), {
      kind: 'ConfigMapList',
      metadata: { resourceVersion: '705' },
    });
  });

  it('a Status: status (field 2) and details name (1) / uid (6)', () => {
    const details = Buffer.concat([pbField(1, 'c'), pbField(3, 'configmaps'), pbField(6, 'u')]);
    const raw = Buffer.concat([pbField(1, Buffer.alloc(0)), pbField(2, 'Success'), pbField(5, details)]);
    assert.deepEqual(decodeProtobufMeta(k8sProtobuf('v1', 'Status', raw)), {
      kind: 'Status',
      status: 'Success',
      details: { name: 'c', uid: 'u' },
    });
  });

  it('not protobuf, or garbage after the magic: nothing, never a throw', () => {
    assert.equal(decodeProtobufMeta(Buffer.from('{"kind":"Pod"}')), undefined);
    assert.deepEqual(decodeProtobufMeta(Buffer.from([0x6b, 0x38, 0x73, 0x00, 0xff, 0xff, 0xff])), {});
  });
});
