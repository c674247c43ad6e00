/**
 * A protobuf LIST's body of kept items (src/server/kept-list-body.ts): the head, each item's
 * message put back together from its kept pieces where they lie (inside a bigger buffer, as in
 * the store's slabs, the JSON its spans point into too: after other bytes), and the tail,
 * however the writer's buffers cut it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { keptMessage, MIN_SPAN_BYTES, splice } from '../../../src/apimachinery/protobuf/spliced.ts';
import { keptListBody } from '../../../src/server/kept-list-body.ts';

describe('keptListBody', () => {
  // Item 1: own bytes around a 100-byte string found in its JSON (one span); item 2: no span.
  const long = 'q'.repeat(MIN_SPAN_BYTES + 36);
  const message1 = Buffer.from(`\x12\x7f<own-head>${long}<own-tail>`);
  const json1 = Buffer.from(`{"metadata":{"a":"${long}"}}`);
  const kept1 = Buffer.from(splice(message1, [12, long.length], json1));
  const message2 = Buffer.from('\x12\x05hello');
  const kept2 = Buffer.from(splice(message2, [], Buffer.alloc(0)));
  // Both kept in one "slab", after other bytes.
  const slab = Buffer.concat([Buffer.from('xxxx'), kept1, Buffer.from('yy'), kept2]);
  const s1 = 4;
  const s2 = 4 + kept1.length + 2;
  // Item 1's JSON lies in its own "slab" after other bytes (span offsets are relative to it).
  const jsonSlab = Buffer.concat([Buffer.from(`{"other":"${'q'.repeat(long.length - 1)}r"}`), json1]);
  const j1 = jsonSlab.length - json1.length;
  const list = () => ({
    bufs: [slab, slab, kept2],
    starts: Uint32Array.of(s1, s2, 0),
    ends: Uint32Array.of(s1 + kept1.length, s2 + kept2.length, kept2.length),
    jsonBufs: [jsonSlab, Buffer.alloc(0), Buffer.alloc(0)],
    jsonStarts: Uint32Array.of(j1, 0, 0),
    lengths: Uint32Array.of(message1.length, message2.length, message2.length),
  });
  const head = Buffer.from('HEAD');
  const tail = Buffer.from('TAIL');
  const want = Buffer.concat([head, message1, message2, message2, tail]);

  it('kept1 keeps its string as a span of its JSON: 12-byte record, own bytes without the string', () => {
    assert.equal(kept1.length, message1.length - long.length + 12 + 4);
    assert.deepEqual(keptMessage(kept1, json1), message1);
  });
  it('whole, and in every buffer size from 1 to past its length: the same bytes', () => {
    assert.equal(keptListBody(head, list(), tail).length, want.length);
    for (let size = 1; size <= want.length + 3; size++) {
      const body = keptListBody(head, list(), tail);
      const parts: Buffer[] = [];
      for (;;) {
        const b = Buffer.alloc(size);
        const n = body.fill(b);
        if (n === 0) break;
        parts.push(b.subarray(0, n));
      }
      assert.deepEqual(Buffer.concat(parts), want, `buffers of ${size}`);
      assert.equal(body.fill(Buffer.alloc(8)), 0, 'ended');
    }
  });
});
