import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ByteBuffer } from '../../support/byte-buffer.ts';

describe('ByteBuffer', () => {
  it('keeps the bytes in order across pushes, takes and skips', () => {
    const b = new ByteBuffer(4);
    b.push(Buffer.from('ab\ncd'));
    assert.equal(b.indexOf(10), 2);
    assert.equal(String(b.take(3)), 'ab\n');
    b.push(Buffer.from('ef\r\ngh'));
    assert.equal(b.indexOf('\r\n'), 4);
    b.skip(2);
    assert.equal(String(b.view()), 'ef\r\ngh');
    b.skip(100);
    assert.equal(b.length, 0);
  });

  it('a large event arriving in many small reads is copied a bounded number of times (no concat per read)', () => {
    const b = new ByteBuffer();
    const read = Buffer.alloc(1024, 'x');
    const reads = 8 * 1024; // 8 MiB without a newline, then one
    for (let i = 0; i < reads; i++) b.push(read);
    b.push(Buffer.from('\n'));
    const total = reads * read.length + 1;
    assert.equal(b.indexOf(10), total - 1);
    assert.equal(b.take(total).length, total);
    // Concatenating per read would copy the whole held prefix every time: ~reads²/2 KiB = 32 GiB.
    assert.ok(b.copied <= 3 * total, `${b.copied} bytes copied for ${total}`);
  });
});
