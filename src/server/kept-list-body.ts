/**
 * A protobuf LIST's body from its items' kept messages (issue 32), as a {@link FilledBody} the
 * writer copies into its batch buffers (`filled-body.ts`): the answer's head, each item's kept
 * pieces (own bytes and spans of its stored JSON, `apimachinery/protobuf/spliced.ts`) in order,
 * the tail. Items are addressed where the store keeps them (a slab's buffer and a range: no
 * Buffer view per item and LIST, `StoreEntry.keptAt`); an item that fits the rest of a batch is
 * copied piece by piece without range arithmetic, one cut by a batch's end by its range.
 */
import { copyKept, copyWholeKeptAt } from '../apimachinery/protobuf/spliced.ts';
import type { FilledBody } from './filled-body.ts';

/**
 * A LIST's kept items: item `i`'s kept bytes are `bufs[i][starts[i], ends[i])` (a slab's buffer,
 * or a Buffer of their own), the JSON its spans point into starts at `jsonStarts[i]` of
 * `jsonBufs[i]` (the entry's stored LIST item in its slab), its message is `lengths[i]` bytes
 * long. Offsets in typed arrays, buffers shared: no object per item.
 */
export interface KeptList {
  bufs: Buffer[];
  starts: Uint32Array;
  ends: Uint32Array;
  jsonBufs: Buffer[];
  jsonStarts: Uint32Array;
  lengths: Uint32Array;
}

/** A {@link KeptList} of `n` items, to be filled in. */
export function keptList(n: number): KeptList {
  return {
    bufs: new Array<Buffer>(n),
    starts: new Uint32Array(n),
    ends: new Uint32Array(n),
    jsonBufs: new Array<Buffer>(n),
    jsonStarts: new Uint32Array(n),
    lengths: new Uint32Array(n),
  };
}

/**
 * A LIST body: `head`, each kept item of `list` in order, `tail`; copied into the caller's
 * buffers, an item that fits whole piece by piece (`copyWholeKeptAt`), one cut by a buffer's
 * end by its range (`copyKept`).
 */
export function keptListBody(head: Buffer, list: KeptList, tail: Buffer): FilledBody {
  const { bufs, starts, ends, jsonBufs, jsonStarts, lengths } = list;
  const count = bufs.length;
  let length = head.length + tail.length;
  for (let i = 0; i < count; i++) length += lengths[i]!;
  // Position: item `i` (-1: the head, count: the tail), `off` bytes into it.
  let i = -1;
  let off = 0;
  return {
    length,
    fill(into: Buffer): number {
      let at = 0;
      const room = into.length;
      while (at < room) {
        if (i === -1 || i === count) {
          const b = i === -1 ? head : tail;
          if (i === count && off === b.length) break;
          const n = b.copy(into, at, off);
          at += n;
          off += n;
          if (off === b.length && i === -1) {
            i = 0;
            off = 0;
          }
          continue;
        }
        const len = lengths[i]!;
        if (off === 0 && room - at >= len) {
          at = copyWholeKeptAt(bufs[i]!, starts[i]!, ends[i]!, jsonBufs[i]!, into, at, jsonStarts[i]!);
          i++;
          continue;
        }
        const end = Math.min(len, off + room - at);
        at = copyKept(
          bufs[i]!.subarray(starts[i]!, ends[i]!),
          jsonBufs[i]!,
          off,
          end,
          into,
          at,
          jsonStarts[i]!,
        );
        off = end;
        if (off === len) {
          i++;
          off = 0;
        }
      }
      return at;
    },
  };
}
