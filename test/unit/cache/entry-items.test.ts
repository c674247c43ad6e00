/**
 * A cache LIST's items addressed in the store's slabs (src/cache/entry-items.ts, issue 32): the
 * JSON, PartialObjectMetadataList and protobuf LIST bodies written from where each item is
 * (items after other bytes in their slab, in several slabs, moved by compaction) equal the
 * bodies made from copies of the items, filled in any batch sizes. A wrong offset (an item's or
 * the JSON its protobuf spans point into) shows as different bytes.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type ByteRef,
  bufferItems,
  type ItemsBody,
  itemsBodyChunks,
  itemViews,
} from '../../../src/apimachinery/list-items.ts';
import { encodeList, listItemBytes } from '../../../src/cache/encoding.ts';
import { EntryItems } from '../../../src/cache/entry-items.ts';
import { encodeMetadataList } from '../../../src/cache/metadata-view.ts';
import { Store, type StoreEntry } from '../../../src/cache/store.ts';
import { bodyBytes, itemsBody } from '../../../src/server/filled-body.ts';
import { protobufList } from '../../../src/server/protobuf-answers.ts';
import { filledIn } from '../../support/filled-in.ts';
import { resourceInfo } from '../../support/resource-info.ts';

const cms = resourceInfo('v1', 'configmaps', 'ConfigMap');

/** A ConfigMap of ~4 KB whose long values become spans of its protobuf message. */
function cm(i: number, rv: number, gen: number) {
  const object = {
    kind: 'ConfigMap',
    apiVersion: 'v1',
    metadata: {
      name: `c${i}`,
      namespace: 'ns',
      uid: `uid-${i}`,
      resourceVersion: String(rv),
      annotations: { note: `${gen}-${'annotation '.repeat(10)}${i}` },
    },
    data: { a: `${i}-${gen}-${'a'.repeat(2000 + (i % 7))}`, b: `b-${i}-${'b'.repeat(1800)}` },
  };
  return { object, raw: Buffer.from(JSON.stringify(object)) };
}

/** The same body with each item a copy of its own (no slab, offset 0). */
function copied(body: ItemsBody): ItemsBody {
  return { ...body, items: bufferItems(itemViews(body.items).map((b) => Buffer.from(b))) };
}

describe('EntryItems: LIST bodies from the store slabs', () => {
  const s = new Store(cms);
  const n = 2000;
  let rv = 1;
  const raws = new Map<string, Buffer>();
  const put = (i: number, gen: number) => {
    const o = cm(i, rv++, gen);
    raws.set(`ns/c${i}`, o.raw);
    s.put(s.entry(o))?.release();
  };
  for (let i = 0; i < n; i++) put(i, 0);
  const page = () => {
    const entries = [...s.values()];
    return { entries, page: { resourceVersion: String(rv), items: new EntryItems(entries, false), entries } };
  };
  const check = (what: string) => {
    const { entries, page: p } = page();
    // JSON: each item is the upstream's bytes as a LIST item.
    const want = Buffer.concat(
      itemsBodyChunks({
        ...encodeList(cms, p),
        items: bufferItems(entries.map((e) => listItemBytes(cms, raws.get(e.key)!))),
      }),
    );
    const json = encodeList(cms, p);
    assert.deepEqual(
      filledIn(itemsBody(json), (k) => (k * 7) % 1009),
      want,
      `JSON ${what}`,
    );
    assert.deepEqual(
      filledIn(itemsBody(json), () => 64 * 1024),
      want,
      `JSON ${what}, big buffers`,
    );
    // PartialObjectMetadataList: the `metadata` values.
    const meta = { ...p, items: new EntryItems(entries, true) };
    const metaWant = Buffer.concat(
      itemsBodyChunks({
        ...encodeMetadataList('v1', meta),
        items: bufferItems(
          entries.map((e) => Buffer.from(JSON.stringify(JSON.parse(raws.get(e.key)!.toString()).metadata))),
        ),
      }),
    );
    assert.deepEqual(
      filledIn(itemsBody(encodeMetadataList('v1', meta)), (k) => (k * 13) % 2003),
      metaWant,
    );
    // Protobuf: kept messages whose spans point into each item's JSON in its slab, against a
    // fresh encode of copies (no entries: nothing kept, no spans).
    const fresh = bodyBytes(protobufList(cms, { ...p, items: copied(json).items, entries: undefined }));
    assert.deepEqual(
      filledIn(protobufList(cms, p), (k) => (k * 7) % 1009),
      fresh,
      `protobuf ${what}`,
    );
    assert.deepEqual(bodyBytes(protobufList(cms, p)), fresh, `protobuf ${what}, again`);
    const metaFresh = bodyBytes(
      protobufList(
        cms,
        { ...meta, items: copied(encodeMetadataList('v1', meta)).items, entries: undefined },
        'v1',
      ),
    );
    assert.deepEqual(bodyBytes(protobufList(cms, meta, 'v1')), metaFresh, `protobuf metadata ${what}`);
  };

  it('items after other bytes and in several slabs', () => {
    const ref: ByteRef = { buf: Buffer.alloc(0), start: 0, end: 0 };
    const bufs = new Set<Buffer>();
    let inside = 0;
    for (const e of s.values()) {
      e.listItemAt(ref);
      bufs.add(ref.buf);
      if (ref.start > 0) inside++;
    }
    assert.ok(bufs.size >= 3 && inside > n / 2, `${bufs.size} slabs, ${inside} items not at 0`);
    check('as stored');
  });

  it('after compaction moved them (the kept messages with them)', () => {
    const ref: ByteRef = { buf: Buffer.alloc(0), start: 0, end: 0 };
    const where = new Map<StoreEntry, number>();
    for (const e of s.values()) {
      e.listItemAt(ref);
      where.set(e, ref.start);
    }
    for (let i = 0; i < n; i++) if (i % 3 !== 0) put(i, 5);
    let moved = 0;
    for (const [e, start] of where) {
      if (s.get(e.key) !== e) continue;
      e.listItemAt(ref);
      if (ref.start !== start) moved++;
    }
    assert.ok(moved > 0, `${moved} entries moved`);
    check('after compaction');
  });
});
