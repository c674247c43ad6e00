/**
 * The GET answer frame (src/apimachinery/protobuf/envelope.ts `objectAnswerFrame`): the same bytes
 * as the whole answer built around the message (`objectAnswer`), for messages whose length takes
 * one, two and three varint bytes; and the watch frame around a message (`watchFrameAround`):
 * the same bytes as `watchFrame` of the envelope's pieces, at the varint lengths' boundaries of
 * the message, the object and the RawExtension.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  objectAnswer,
  objectAnswerFrame,
  unknownEnvelope,
  watchFrame,
  watchFrameAround,
} from '../../../../src/apimachinery/protobuf/envelope.ts';

describe('objectAnswerFrame', () => {
  for (const length of [0, 1, 127, 128, 300, 16_383, 16_384, 70_000]) {
    it(`a message of ${length} bytes: the frame around it is objectAnswer's`, () => {
      const message = Buffer.alloc(length, 0x5a);
      const want = objectAnswer('v1', 'Pod', message);
      const [answer, at] = objectAnswerFrame('v1', 'Pod', length);
      message.copy(answer, at);
      assert.equal(answer.length, want.length);
      assert.deepEqual(answer, want);
    });
  }
  it('the raw field of a 4,620-byte pod message: tag 0x12, varint 8c 24, tail 1a 00 22 00', () => {
    const [answer, at] = objectAnswerFrame('v1', 'Pod', 4620);
    assert.deepEqual([...answer.subarray(at - 3, at)], [0x12, 0x8c, 0x24]);
    assert.deepEqual([...answer.subarray(at + 4620)], [0x1a, 0x00, 0x22, 0x00]);
    assert.equal(answer.subarray(0, 4).toString('latin1'), 'k8s\0');
  });
});

describe('watchFrameAround', () => {
  // 'k8s\0' + TypeMeta{v1, Pod} is 15 bytes: a message of 105–106 bytes makes the object 127–128
  // (its varint 1 → 2 bytes), one of 16,360–16,362 crosses 16,383 for the object and RawExtension.
  const lengths = [
    0, 1, 105, 106, 107, 127, 128, 4620, 16_358, 16_359, 16_360, 16_361, 16_362, 16_384, 70_000,
  ];
  for (const type of ['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK'])
    for (const length of lengths)
      it(`${type}, a message of ${length} bytes: the frame around it is watchFrame's`, () => {
        const message = Buffer.alloc(length, 0x5a);
        const want = watchFrame(type, unknownEnvelope('v1', 'Pod', message));
        const [frame, at] = watchFrameAround(type, 'v1', 'Pod', length);
        message.copy(frame, at);
        assert.equal(frame.length, want.length);
        assert.deepEqual(frame, want);
      });
  it('a PartialObjectMetadata in meta.k8s.io/v1beta1: the same as watchFrame', () => {
    const message = Buffer.alloc(300, 0x33);
    const want = watchFrame(
      'ADDED',
      unknownEnvelope('meta.k8s.io/v1beta1', 'PartialObjectMetadata', message),
    );
    const [frame, at] = watchFrameAround('ADDED', 'meta.k8s.io/v1beta1', 'PartialObjectMetadata', 300);
    message.copy(frame, at);
    assert.deepEqual(frame, want);
    assert.equal(frame.readUInt32BE(0), frame.length - 4);
  });
});
