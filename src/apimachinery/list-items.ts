/**
 * A LIST's items addressed where they are stored (issue 32's memory goal): a reader asks for
 * item `i` and gets its bytes as a buffer and a range, no Buffer view of its own. A LIST of
 * 100,000 items made one view per item and LIST (104 heap bytes each) and several 100,000-slot
 * arrays, ~15 MiB of old-space garbage per LIST that lived until a major GC; the store's entries
 * answer `locate` from their own fields (`cache/entry-items.ts`), a page of Buffers (tests, fakes)
 * from {@link bufferItems}.
 */

/**
 * Where bytes are, without a view of them: `buf[start, end)` (a store slab's buffer, or a Buffer
 * of their own). Filled by `StoreEntry.listItemAt`, `metadataAt` and `keptAt` and read by a
 * LIST's body; callers reuse one (a LIST is set up and each batch filled synchronously).
 */
export interface ByteRef {
  buf: Buffer;
  start: number;
  end: number;
}

/** A LIST's items in order: `length` of them, item `i`'s bytes set into `ref` by `locate(i, ref)`. */
export interface ListItems {
  readonly length: number;
  locate(i: number, ref: ByteRef): void;
}

/**
 * A LIST answer's body around its items: `head`, then each item as `open` + its bytes + `close`,
 * separated by commas, then `tail` (a JSON LIST: `open` and `close` empty; a
 * PartialObjectMetadataList: each item's `metadata` value wrapped). Written by copying the
 * items' bytes where they are (`server/filled-body.ts` `itemsBody`).
 */
export interface ItemsBody {
  readonly head: Buffer;
  readonly items: ListItems;
  readonly open: Buffer;
  readonly close: Buffer;
  readonly tail: Buffer;
}

/** {@link ListItems} of Buffers (each item its whole Buffer). */
export function bufferItems(bufs: readonly Buffer[]): ListItems {
  return {
    length: bufs.length,
    locate(i: number, ref: ByteRef): void {
      const b = bufs[i]!;
      ref.buf = b;
      ref.start = 0;
      ref.end = b.length;
    },
  };
}

/** A view of item `i`'s bytes (slow paths and tests: a LIST body reads them with `at`). */
export function itemView(items: ListItems, i: number): Buffer {
  const ref: ByteRef = { buf: EMPTY, start: 0, end: 0 };
  items.locate(i, ref);
  return ref.buf.subarray(ref.start, ref.end);
}

/** A view of each item (tests and slow paths). */
export function itemViews(items: ListItems): Buffer[] {
  return Array.from({ length: items.length }, (_, i) => itemView(items, i));
}

const EMPTY = Buffer.alloc(0);

/**
 * The body as chunks to write in order: its head, a view of each item between `open` and
 * `close` (when not empty), commas between, its tail (a few items are written corked, and tests
 * read a body whole; a LIST of many is copied from where its items are: `server/filled-body.ts`
 * `itemsBody`).
 */
export function itemsBodyChunks(body: ItemsBody): Buffer[] {
  const { head, items, open, close, tail } = body;
  const chunks: Buffer[] = [head];
  for (let i = 0; i < items.length; i++) {
    if (i > 0) chunks.push(COMMA);
    if (open.length > 0) chunks.push(open);
    chunks.push(itemView(items, i));
    if (close.length > 0) chunks.push(close);
  }
  chunks.push(tail);
  return chunks;
}

const COMMA = Buffer.from(',');
