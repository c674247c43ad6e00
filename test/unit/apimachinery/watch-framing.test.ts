import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EventBoundary, watchFraming } from '../../../src/apimachinery/watch-framing.ts';

/** One protobuf watch frame: 4-byte big-endian length, then the payload. */
function frame(payload: Buffer): Buffer {
  const head = Buffer.alloc(4);
  head.writeUInt32BE(payload.length);
  return Buffer.concat([head, payload]);
}

describe('watchFraming', () => {
  it('knows the media types the apiserver sets on watch answers', () => {
    assert.equal(watchFraming('application/json', undefined), 'json-lines');
    assert.equal(watchFraming('application/json;charset=utf-8', undefined), 'json-lines');
    assert.equal(watchFraming('Application/JSON', 'identity'), 'json-lines');
    assert.equal(
      watchFraming('application/vnd.kubernetes.protobuf;stream=watch', undefined),
      'length-prefixed',
    );
    assert.equal(
      watchFraming('application/vnd.kubernetes.protobuf; stream=watch', undefined),
      'length-prefixed',
    );
  });
  it('answers undefined for other media types, no media type, or an encoded body', () => {
    assert.equal(watchFraming('application/vnd.kubernetes.protobuf', undefined), undefined);
    assert.equal(watchFraming('application/cbor-seq', undefined), undefined);
    assert.equal(watchFraming('application/yaml;stream=watch', undefined), undefined);
    assert.equal(watchFraming('text/plain', undefined), undefined);
    assert.equal(watchFraming(undefined, undefined), undefined);
    assert.equal(watchFraming('application/json', 'gzip'), undefined);
  });
});

describe('EventBoundary json-lines', () => {
  const e1 = '{"type":"ADDED","object":{"metadata":{"name":"a\\nb"}}}\n';
  const e2 = '{"type":"MODIFIED","object":{"metadata":{"name":"c"}}}\n';

  it('is on a boundary before any byte and after each complete line', () => {
    const b = new EventBoundary('json-lines');
    assert.equal(b.atBoundary, true);
    b.push(Buffer.from(e1));
    assert.equal(b.atBoundary, true);
    b.push(Buffer.alloc(0));
    assert.equal(b.atBoundary, true, 'an empty chunk changes nothing');
  });

  it('an event split across chunks: not on a boundary until its newline', () => {
    const b = new EventBoundary('json-lines');
    b.push(Buffer.from(e1.slice(0, 10)));
    assert.equal(b.atBoundary, false);
    b.push(Buffer.from(e1.slice(10, -1)));
    assert.equal(b.atBoundary, false);
    b.push(Buffer.from('\n'));
    assert.equal(b.atBoundary, true);
  });

  it('several events per chunk, the last one cut: cut() answers the length up to the first newline', () => {
    const b = new EventBoundary('json-lines');
    b.push(Buffer.from(`${e1}${e2.slice(0, 20)}`));
    assert.equal(b.atBoundary, false);
    const rest = Buffer.from(`${e2.slice(20)}${e1}${e2.slice(0, 5)}`);
    const n = b.cut(rest);
    assert.equal(n, e2.length - 20);
    assert.equal(rest.subarray(0, n).toString(), e2.slice(20));
    assert.equal(b.atBoundary, true);
    assert.equal(b.cut(Buffer.from(e1)), 0, 'on a boundary: nothing more to write');
  });

  it('cut() on a chunk without the newline: -1, and the next chunk ends it', () => {
    const b = new EventBoundary('json-lines');
    b.push(Buffer.from(e1.slice(0, 3)));
    assert.equal(b.cut(Buffer.from(e1.slice(3, 30))), -1);
    assert.equal(b.atBoundary, false);
    const last = Buffer.from(`${e1.slice(30)}${e2}`);
    assert.equal(b.cut(last), e1.length - 30);
  });
});

describe('EventBoundary length-prefixed', () => {
  const f1 = frame(Buffer.from('k8s\0first event payload'));
  const f2 = frame(Buffer.alloc(300, 7)); // length 300: 0x0000012c, two non-zero header bytes

  it('whole frames, several per chunk: on a boundary after each', () => {
    const b = new EventBoundary('length-prefixed');
    assert.equal(b.atBoundary, true);
    b.push(Buffer.concat([f1, f2, f1]));
    assert.equal(b.atBoundary, true);
  });

  it('a frame split in its payload: on a boundary only once all of it came', () => {
    const b = new EventBoundary('length-prefixed');
    b.push(f2.subarray(0, 100));
    assert.equal(b.atBoundary, false);
    b.push(f2.subarray(100, 303));
    assert.equal(b.atBoundary, false);
    b.push(f2.subarray(303));
    assert.equal(b.atBoundary, true);
  });

  it('the 4-byte length spanning chunk boundaries (every split of the header)', () => {
    for (let split = 1; split < 4; split++) {
      const b = new EventBoundary('length-prefixed');
      const all = Buffer.concat([f1, f2]);
      const at = f1.length + split;
      b.push(all.subarray(0, at));
      assert.equal(b.atBoundary, false, `split ${split}: inside the header`);
      b.push(all.subarray(at, at + 1)); // one more header (or first payload) byte
      assert.equal(b.atBoundary, false);
      b.push(all.subarray(at + 1, all.length - 1));
      assert.equal(b.atBoundary, false, 'the last payload byte is missing');
      b.push(all.subarray(all.length - 1));
      assert.equal(b.atBoundary, true, `split ${split}`);
    }
  });

  it('byte by byte: on a boundary exactly at the end of each frame', () => {
    const b = new EventBoundary('length-prefixed');
    const all = Buffer.concat([f2, f1]);
    const ends: number[] = [];
    for (let i = 0; i < all.length; i++) {
      b.push(all.subarray(i, i + 1));
      if (b.atBoundary) ends.push(i + 1);
    }
    assert.deepEqual(ends, [f2.length, f2.length + f1.length]);
  });

  it('a large length (high header byte set) is read unsigned', () => {
    const b = new EventBoundary('length-prefixed');
    b.push(Buffer.from([0x80, 0, 0, 1]));
    assert.equal(b.atBoundary, false);
    assert.equal(b.cut(Buffer.alloc(1000)), -1, '0x80000001 bytes announced, 1000 came');
  });

  it('a zero-length frame is complete after its header', () => {
    const b = new EventBoundary('length-prefixed');
    b.push(Buffer.from([0, 0]));
    assert.equal(b.cut(Buffer.from([0, 0, 9, 9])), 2);
    assert.equal(b.atBoundary, true);
  });

  it('cut() mid-frame: the length that completes it, with the next frame and its header split after', () => {
    const b = new EventBoundary('length-prefixed');
    const all = Buffer.concat([f1, f2, f1]);
    b.push(all.subarray(0, f1.length + 2)); // f1 and half of f2's header
    const rest = all.subarray(f1.length + 2);
    assert.equal(b.cut(rest.subarray(0, 1)), -1, 'a header byte only');
    assert.equal(b.cut(rest.subarray(1, 50)), -1);
    const n = b.cut(rest.subarray(50));
    assert.equal(n, f2.length - 2 - 50);
    assert.equal(b.atBoundary, true);
  });
});

describe('EventBoundary: which complete event was a BOOKMARK (from its first bytes)', () => {
  const added = '{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n';
  const bookmark =
    '{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"12","annotations":{"k8s.io/initial-events-end":"true"}}}}\n';
  /** A protobuf watch frame whose raw metav1.WatchEvent payload has field 1 `type` = `t`. */
  const pbEvent = (t: string, rest = 40) =>
    frame(
      Buffer.concat([
        Buffer.from([0x0a, t.length]),
        Buffer.from(t),
        Buffer.from([0x12, rest]),
        Buffer.alloc(rest, 3),
      ]),
    );

  /** Kinds of the events completed while following `chunks` in order (B: bookmark, E: other). */
  function kinds(b: EventBoundary, chunks: Uint8Array[]): string {
    let out = '';
    for (const c of chunks) {
      let off = 0;
      for (;;) {
        const n = b.next(c.subarray(off));
        if (n < 0) break;
        off += n;
        out += b.lastWasBookmark ? 'B' : 'E';
      }
    }
    return out;
  }

  it('json-lines: bookmarks and other events, whole and split at every byte of the prefix', () => {
    const all = Buffer.from(added + bookmark + added + bookmark);
    assert.equal(kinds(new EventBoundary('json-lines'), [all]), 'EBEB');
    for (let at = 1; at < 25; at++) {
      const off = added.length + at;
      const b = new EventBoundary('json-lines');
      assert.equal(kinds(b, [all.subarray(0, off), all.subarray(off)]), 'EBEB', `split at ${at}`);
      assert.equal(b.events, 4);
    }
    const one = new EventBoundary('json-lines');
    assert.equal(
      kinds(
        one,
        [...all].map((x) => Buffer.from([x])),
      ),
      'EBEB',
      'byte by byte',
    );
  });

  it('json-lines: a type that only starts like BOOKMARK, or a line shorter than the prefix, is no bookmark', () => {
    const b = new EventBoundary('json-lines');
    assert.equal(kinds(b, [Buffer.from('{"type":"BOOK"}\n{"type":"ERROR","object":{}}\n{}\n')]), 'EEE');
  });

  it('length-prefixed: field 1 type BOOKMARK (0x0a 0x08 "BOOKMARK") is a bookmark, ADDED is not', () => {
    const all = Buffer.concat([
      pbEvent('ADDED'),
      pbEvent('BOOKMARK'),
      pbEvent('MODIFIED'),
      pbEvent('BOOKMARK'),
    ]);
    assert.equal(kinds(new EventBoundary('length-prefixed'), [all]), 'EBEB');
    const b = new EventBoundary('length-prefixed');
    assert.equal(
      kinds(
        b,
        [...all].map((x) => Buffer.from([x])),
      ),
      'EBEB',
      'byte by byte',
    );
    assert.equal(b.atBoundary, true);
  });

  it('push() and cut() keep the kind of the last event too', () => {
    const b = new EventBoundary('json-lines');
    b.push(Buffer.from(added + bookmark));
    assert.equal(b.lastWasBookmark, true);
    b.push(Buffer.from(added.slice(0, 5)));
    assert.equal(b.cut(Buffer.from(added.slice(5) + bookmark)), added.length - 5);
    assert.equal(b.lastWasBookmark, false);
    assert.equal(b.events, 3);
  });
});
