/**
 * Kept protobuf bytes sharing their long strings with the stored JSON
 * (src/apimachinery/protobuf/spliced.ts): the pieces put back together are the message's bytes,
 * whatever range is copied, and only strings whose exact bytes are in the JSON are left out.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { itemMessage, keepListItem } from '../../../../src/apimachinery/protobuf/envelope.ts';
import {
  copyKept,
  copyWholeKept,
  copyWholeKeptAt,
  keptLength,
  keptLengthAt,
  keptMessage,
  MAX_DICTIONARY_SEARCH,
  MIN_DICTIONARY_BYTES,
  MIN_SPAN_BYTES,
  splice,
} from '../../../../src/apimachinery/protobuf/spliced.ts';
import { BackwardWriter } from '../../../../src/apimachinery/protobuf/writer.ts';

const POD = 'api/core/v1.Pod';
const EMPTY = Buffer.alloc(0);
const filler = 'lorem-12 ipsum-7 '.repeat(180); // 3,060 bytes, no escapes
const quoted = `say "hi" ${'x'.repeat(200)}`; // its JSON has \" : not the protobuf bytes
const fieldsV1 = {
  'f:metadata': { 'f:annotations': { '.': {}, 'f:a': {}, 'f:q': {} }, 'f:labels': { 'f:app': {} } },
};
const podObject = {
  kind: 'Pod',
  apiVersion: 'v1',
  metadata: {
    name: 'p1',
    namespace: 'ns',
    uid: '0b8f3a54-8a3d-4c5e-9d1f-2f1a3b4c5d6e',
    resourceVersion: '12',
    labels: { app: 'web' },
    annotations: { a: filler, q: quoted },
    managedFields: [
      {
        manager: 'kubectl',
        operation: 'Update',
        apiVersion: 'v1',
        time: '2026-12-06T20:00:00Z',
        fieldsType: 'FieldsV1',
        fieldsV1,
      },
    ],
  },
  spec: { containers: [{ name: 'main', image: 'registry.example/bench/app:1.0' }] },
  status: {},
};
const podJSON = Buffer.from(JSON.stringify(podObject));
/** The stored LIST item: without kind and apiVersion (what `StoreEntry.listItem` is). */
const listItem = Buffer.from(
  JSON.stringify({ metadata: podObject.metadata, spec: podObject.spec, status: podObject.status }),
);

describe('BackwardWriter string spans', () => {
  it('notes strings of at least the minimum, first in the message first; a rewind forgets later ones', () => {
    const w = new BackwardWriter(16);
    w.recordStrings(40);
    w.string('b'.repeat(50));
    const mark = w.written;
    w.string('short');
    w.string('c'.repeat(40));
    w.rewind(mark);
    w.string('a'.repeat(45));
    const view = w.view();
    const spans = w.stringSpans();
    assert.deepEqual(spans, [1, 45, 47, 50]);
    assert.equal(view.toString('latin1', spans[0], spans[0]! + spans[1]!), 'a'.repeat(45));
    assert.equal(view.toString('latin1', spans[2], spans[2]! + spans[3]!), 'b'.repeat(50));
    w.reset();
    w.string('d'.repeat(60));
    assert.deepEqual(w.stringSpans(), [], 'reset stops noting');
  });
});

/** The spans of kept bytes: `[at, source, length]` triples (source ≥ 2^31: the dictionary's). */
function allSpansOf(k: Buffer): number[] {
  const n = k.readUInt32LE(k.length - 4);
  const out: number[] = [];
  for (let p = k.length - 4 - n * 12; p < k.length - 4; p += 4) out.push(k.readUInt32LE(p));
  return out;
}

/** The spans of kept bytes read from the JSON: `[at, jsonStart, length]` triples. */
function spansOf(k: Buffer): number[] {
  const all = allSpansOf(k);
  const out: number[] = [];
  for (let i = 0; i < all.length; i += 3) if (all[i + 1]! < 2 ** 31) out.push(...all.slice(i, i + 3));
  return out;
}

/** The spans of kept bytes read from the dictionary: `[at, dictionaryStart, length]` triples. */
function dictionarySpansOf(k: Buffer): number[] {
  const all = allSpansOf(k);
  const out: number[] = [];
  for (let i = 0; i < all.length; i += 3)
    if (all[i + 1]! >= 2 ** 31) out.push(all[i]!, all[i + 1]! - 2 ** 31, all[i + 2]!);
  return out;
}

describe('splice', () => {
  const whole = itemMessage(
    keptMessage(Buffer.from(keepListItem(POD, podJSON.toString(), undefined)), EMPTY),
  );
  const kept = Buffer.from(keepListItem(POD, podJSON.toString(), listItem));
  const message = itemMessage(keptMessage(kept, listItem));
  it('the annotation and the FieldsV1 are read from the JSON; the escaped string is kept', () => {
    const spans = spansOf(kept);
    assert.equal(spans.length, 6, 'two spans: the filler and the FieldsV1 raw JSON');
    const [, at0, len0, , at1, len1] = spans;
    assert.equal(listItem.toString('utf8', at0, at0! + len0!), filler);
    assert.equal(listItem.toString('utf8', at1, at1! + len1!), JSON.stringify(fieldsV1));
    assert.ok(
      message.includes(Buffer.from(quoted)),
      'a string whose JSON has escapes is not read from the JSON',
    );
    assert.ok(kept.length < whole.length - filler.length, `${kept.length} of ${whole.length}`);
  });
  it('put back together: the whole message, for every range', () => {
    assert.deepEqual(message, whole);
    const item = keptMessage(kept, listItem);
    const n = keptLength(kept);
    assert.equal(n, item.length);
    const cuts = [0, 1, 2, 100, 101, 3000, 3200, n - 5, n - 1, n];
    for (const from of cuts)
      for (const to of cuts) {
        if (to < from) continue;
        const out = Buffer.alloc(to - from + 3, 0xee);
        const end = copyKept(kept, listItem, from, to, out, 3);
        assert.equal(end, 3 + to - from);
        assert.deepEqual(out.subarray(3), item.subarray(from, to), `[${from}, ${to})`);
      }
  });
  it("read in place (a LIST's fast path): the same length and bytes from inside a bigger buffer, as a slab holds them", () => {
    const item = keptMessage(kept, listItem);
    // The kept bytes 5 bytes into a "slab", other bytes around them.
    const slab = Buffer.concat([Buffer.from('other'), kept, Buffer.from('after')]);
    const [start, end] = [5, 5 + kept.length];
    assert.equal(keptLengthAt(slab, start, end), item.length);
    assert.equal(keptLength(kept), item.length);
    const out = Buffer.alloc(item.length + 4, 0xee);
    assert.equal(copyWholeKeptAt(slab, start, end, listItem, out, 2), 2 + item.length);
    assert.deepEqual(out.subarray(2, 2 + item.length), item);
    assert.deepEqual([out[0], out[1], out[out.length - 2], out[out.length - 1]], [0xee, 0xee, 0xee, 0xee]);
    const again = Buffer.alloc(item.length);
    assert.equal(copyWholeKept(kept, listItem, again, 0), item.length);
    assert.deepEqual(again, item);
    // No spans: the own bytes whole, from inside a slab too.
    const plain = Buffer.concat([Buffer.from('abc'), Buffer.from('hello'), Buffer.alloc(4)]);
    assert.equal(keptLengthAt(plain, 3, plain.length), 5);
    const o = Buffer.alloc(5);
    assert.equal(copyWholeKeptAt(plain, 3, plain.length, EMPTY, o, 0), 5);
    assert.equal(o.toString(), 'hello');
  });
  it('a short string or one not in the JSON is never a span; no spans: the bytes and a count of 0', () => {
    const b = Buffer.from(`xx${'y'.repeat(MIN_SPAN_BYTES - 1)}zz${'w'.repeat(100)}`);
    const short = Buffer.from(
      splice(b, [2, MIN_SPAN_BYTES - 1], Buffer.from(`"${'y'.repeat(MIN_SPAN_BYTES)}"`)),
    );
    assert.deepEqual(short, Buffer.concat([b, Buffer.alloc(4)]));
    assert.deepEqual(keptMessage(short, EMPTY), b);
    const missing = Buffer.from(splice(b, [MIN_SPAN_BYTES + 3, 100], Buffer.from('{"a":"w"}')));
    assert.deepEqual(spansOf(missing), []);
    const json = Buffer.from(`{"a":"${'w'.repeat(120)}"}`);
    const found = Buffer.from(splice(b, [MIN_SPAN_BYTES + 3, 100], json));
    assert.deepEqual(spansOf(found), [MIN_SPAN_BYTES + 3, 6, 100]);
    assert.equal(found.length, b.length - 100 + 12 + 4);
    assert.deepEqual(keptMessage(found, json), b);
  });
  it("a later object's own bytes found in the first one's (the type's dictionary) are spans of it; the item prefix never is", () => {
    const other = {
      ...podObject,
      metadata: {
        ...podObject.metadata,
        name: 'p2',
        uid: '1c9f3a54-8a3d-4c5e-9d1f-2f1a3b4c5d6f',
        resourceVersion: '13',
      },
    };
    const json2 = Buffer.from(
      JSON.stringify({ metadata: other.metadata, spec: other.spec, status: other.status }),
    );
    const plain = keepListItem(POD, JSON.stringify(other), undefined);
    const whole2 = Buffer.from(plain.subarray(0, plain.length - 4));
    const kept2 = Buffer.from(keepListItem(POD, JSON.stringify(other), json2));
    const runs = dictionarySpansOf(kept2);
    assert.ok(runs.length >= 3, `dictionary spans: ${runs}`);
    for (let i = 0; i < runs.length; i += 3) {
      assert.ok(runs[i + 2]! >= MIN_DICTIONARY_BYTES, `run ${runs[i + 2]} bytes`);
      assert.ok(runs[i]! >= 2, 'after the field tag and length');
    }
    assert.equal(spansOf(kept2).length, 6, 'the two strings are still read from the JSON');
    assert.deepEqual(keptMessage(kept2, json2), whole2);
    const n = keptLength(kept2);
    assert.equal(n, whole2.length);
    for (const [from, to] of [
      [0, n],
      [1, 40],
      [30, 90],
      [n - 20, n],
      [2, n - 1],
    ] as const) {
      const out = Buffer.alloc(to - from);
      copyKept(kept2, json2, from, to, out, 0);
      assert.deepEqual(out, whole2.subarray(from, to), `[${from}, ${to})`);
    }
    const slab = Buffer.concat([Buffer.from('xy'), kept2]);
    const out = Buffer.alloc(n);
    assert.equal(copyWholeKeptAt(slab, 2, slab.length, json2, out, 0), n);
    assert.deepEqual(out, whole2);
    const stringBytes = filler.length + JSON.stringify(fieldsV1).length;
    const ownWithout = whole2.length - stringBytes + 2 * 12 + 4; // the kept form without a dictionary
    assert.ok(kept2.length < ownWithout / 2, `${kept2.length} against ${ownWithout}`);
  });
  it('seeded fuzz: messages with strings from the JSON and runs from the dictionary put back together exactly', () => {
    let seed = 7;
    const rnd = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed % n;
    };
    const template = Buffer.from(Array.from({ length: 300 }, () => rnd(256)));
    for (let round = 0; round < 200; round++) {
      // A list item field: tag, a one-byte length, then pieces of the template (the type's
      // common bytes), random bytes and long strings that are in the JSON.
      const parts: Buffer[] = [];
      const strings: number[] = [];
      const jsonParts: string[] = ['{"x":"'];
      let len = 0;
      for (let k = 0; k < 8; k++) {
        const what = rnd(3);
        let piece: Buffer;
        if (what === 0) {
          const from = rnd(200);
          piece = template.subarray(from, from + 20 + rnd(80));
        } else if (what === 1) piece = Buffer.from(Array.from({ length: 1 + rnd(30) }, () => rnd(256)));
        else {
          const str = `s${round}-${k}-${'abcdefgh'.repeat(8 + rnd(10))}`;
          piece = Buffer.from(str);
          strings.push(2 + len, piece.length);
          jsonParts.push(str, '","y":"');
        }
        parts.push(piece);
        len += piece.length;
      }
      const body = Buffer.concat(parts).subarray(0, 127);
      const okStrings: number[] = [];
      for (let i = 0; i < strings.length; i += 2)
        if (strings[i]! + strings[i + 1]! <= 2 + body.length) okStrings.push(strings[i]!, strings[i + 1]!);
      const message = Buffer.concat([Buffer.from([0x12, body.length]), body]);
      const json = Buffer.from(`${jsonParts.join('')}"}`);
      const kept = Buffer.from(splice(message, okStrings, json, `fuzz.${round % 3}`));
      assert.deepEqual(keptMessage(kept, json), message, `round ${round}`);
      assert.equal(keptLength(kept), message.length);
      const from = rnd(message.length);
      const to = from + rnd(message.length - from + 1);
      const out = Buffer.alloc(to - from);
      copyKept(kept, json, from, to, out, 0);
      assert.deepEqual(out, message.subarray(from, to), `round ${round} [${from}, ${to})`);
      assert.deepEqual(kept.subarray(0, 2), message.subarray(0, 2), 'the field prefix stays own');
    }
  });
  it('attack: dictionary runs are searched in the first 64 KiB of own bytes only (a 900 KB message took 80–110 ms)', () => {
    // A type's first message: 200 bytes of a pattern. A later one of ~70 KB of own bytes has the
    // pattern near its start and past 64 KiB: only the first is a dictionary span (the second
    // was too, the search running over all the own bytes at up to 8 × 23 compares each).
    let seed = 3;
    const rnd = () => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed >>> 24;
    };
    const pattern = Buffer.from(Array.from({ length: 200 }, rnd));
    const item = (body: Buffer) => {
      const len: number[] = [];
      for (let n = body.length; ; n >>>= 7) {
        if (n < 0x80) {
          len.push(n);
          break;
        }
        len.push((n & 0x7f) | 0x80);
      }
      return Buffer.concat([Buffer.from([0x12, ...len]), body]);
    };
    splice(item(pattern), [], EMPTY, 'attack.search');
    const noise = (n: number) => Buffer.from(Array.from({ length: n }, rnd));
    const body = Buffer.concat([noise(100), pattern, noise(MAX_DICTIONARY_SEARCH), pattern, noise(50)]);
    const message = item(body);
    const kept = Buffer.from(splice(message, [], EMPTY, 'attack.search'));
    assert.deepEqual(keptMessage(kept, EMPTY), message);
    const runs = dictionarySpansOf(kept);
    assert.deepEqual(
      runs.map((v, i) => (i % 3 === 1 ? 0 : v)),
      [4 + 100, 0, 200],
      'one run of the pattern, at its first place (after the 4-byte field prefix)',
    );
  });
});
