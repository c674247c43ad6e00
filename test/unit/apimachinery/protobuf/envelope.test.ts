/**
 * The GET answer frame (src/apimachinery/protobuf/envelope.ts `objectAnswerFrame`): the same bytes
 * as the whole answer built around the message (`objectAnswer`), for messages whose length takes
 * one, two and three varint bytes.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { objectAnswer, objectAnswerFrame } from '../../../../src/apimachinery/protobuf/envelope.ts';

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
