/**
 * Bodies copied into reused batch buffers (src/server/filled-body.ts): the bytes in order, at
 * most two buffers handed out, none refilled before its write is done.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bufferItems, itemsBodyChunks } from '../../../src/apimachinery/list-items.ts';
import { BATCH_BYTES, bodyBytes, chunksBody, itemsBody, pumpBody } from '../../../src/server/filled-body.ts';
import { filledIn } from '../../support/filled-in.ts';

const chunks = [Buffer.from('abc'), Buffer.alloc(0), Buffer.from('defghij'), Buffer.from('k')];

describe('chunksBody', () => {
  it('fills in any sizes, the chunks in order, then 0', () => {
    const body = chunksBody(chunks);
    assert.equal(body.length, 11);
    const out: string[] = [];
    for (const n of [2, 5, 1, 10, 10]) {
      const b = Buffer.alloc(n);
      out.push(b.toString('latin1', 0, body.fill(b)));
    }
    assert.deepEqual(out, ['ab', 'cdefg', 'h', 'ijk', '']);
    assert.equal(bodyBytes(chunksBody(chunks)).toString(), 'abcdefghijk');
  });
});

describe('itemsBody', () => {
  it('head, items wrapped and separated by commas, tail: in every buffer size, 0, 1 and 3 items', () => {
    // Items inside a bigger buffer, as in the store's slabs: only their range is written.
    const slab = Buffer.from('..first..second-item..3..');
    const at = (s: string) => slab.subarray(slab.indexOf(s), slab.indexOf(s) + s.length);
    const all = [at('first'), at('second-item'), at('3')];
    for (const [open, close] of [
      ['', ''],
      ['<', '>'],
    ]) {
      for (const count of [0, 1, 3]) {
        const body = {
          head: Buffer.from('{"items":['),
          items: bufferItems(all.slice(0, count)),
          open: Buffer.from(open!),
          close: Buffer.from(close!),
          tail: Buffer.from(']}\n'),
        };
        const want = Buffer.concat(itemsBodyChunks(body)).toString();
        assert.equal(
          want,
          `{"items":[${all
            .slice(0, count)
            .map((b) => `${open}${b}${close}`)
            .join(',')}]}\n`,
        );
        assert.equal(itemsBody(body).length, want.length);
        for (let size = 1; size <= want.length + 1; size++)
          assert.equal(
            filledIn(itemsBody(body), () => size).toString(),
            want,
            `${count} items, buffers of ${size}`,
          );
      }
    }
  });
});

describe('pumpBody', () => {
  it('two buffers in turn, each refilled only after its write is done; then end', () => {
    const big = Buffer.alloc(BATCH_BYTES * 5 + 123);
    for (let i = 0; i < big.length; i++) big[i] = i % 251;
    const pending: Array<{ chunk: Buffer; copy: Buffer; done: () => void }> = [];
    const written: Buffer[] = [];
    let ended = false;
    let maxPending = 0;
    pumpBody(
      chunksBody([big]),
      (chunk, done) => {
        pending.push({ chunk, copy: Buffer.from(chunk), done: () => done() });
        maxPending = Math.max(maxPending, pending.length);
      },
      () => {
        ended = true;
      },
      () => false,
    );
    while (pending.length > 0) {
      const w = pending.shift()!;
      assert.deepEqual(w.chunk, w.copy, 'not overwritten while being written');
      written.push(w.copy);
      w.done();
    }
    assert.equal(maxPending, 2);
    assert.ok(ended);
    assert.deepEqual(Buffer.concat(written), big);
  });
  it('stops when the destination closed; a failed write is not refilled', () => {
    let writes = 0;
    let ended = false;
    let closed = false;
    const calls: Array<(err?: Error | null) => void> = [];
    pumpBody(
      chunksBody([Buffer.alloc(BATCH_BYTES * 4)]),
      (_c, done) => {
        writes++;
        calls.push(done);
      },
      () => {
        ended = true;
      },
      () => closed,
    );
    assert.equal(writes, 2);
    closed = true;
    calls.shift()!(null);
    calls.shift()!(new Error('gone'));
    assert.equal(writes, 2);
    assert.equal(ended, false);
  });
});
