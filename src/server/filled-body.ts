/**
 * A response body copied, in order, into a few reused batch buffers instead of handed to the
 * socket as one Buffer per piece (issue 32): a protobuf LIST's items are kept as pieces (own bytes
 * and spans of the stored JSON, `apimachinery/protobuf/spliced.ts`), several per item, and a
 * corked write per piece costs more CPU than copying them (Node's http write path is ~1–2 µs a
 * chunk; a memcpy of 46 MB a few ms). Two buffers of {@link BATCH_BYTES} per answer are filled
 * and refilled as the socket (or zlib) takes them, so a big answer allocates nothing per batch
 * and holds at most two batches besides what the kernel buffers. A JSON LIST's items are read
 * where the store keeps them as each batch is filled ({@link itemsBody}): nothing per item.
 */
import type { ServerResponse } from 'node:http';
import type { ByteRef, ItemsBody } from '../apimachinery/list-items.ts';

/** Bytes of each batch buffer (a body shorter than this gets buffers of its length). */
export const BATCH_BYTES = 256 * 1024;

/** A body produced into the caller's buffers. */
export interface FilledBody {
  /** Bytes in all. */
  readonly length: number;
  /**
   * Copies the next bytes into `into` from offset 0; returns how many: `into.length` unless the
   * body ends first, 0 once it has ended.
   */
  fill(into: Buffer): number;
}

/** A {@link FilledBody} of `chunks` in order (copied out of them, never modified). */
export function chunksBody(chunks: readonly Buffer[]): FilledBody {
  let length = 0;
  for (const c of chunks) length += c.length;
  let i = 0;
  let off = 0;
  return {
    length,
    fill(into: Buffer): number {
      let at = 0;
      while (at < into.length && i < chunks.length) {
        const c = chunks[i]!;
        const n = c.copy(into, at, off);
        at += n;
        off += n;
        if (off === c.length) {
          i++;
          off = 0;
        }
      }
      return at;
    },
  };
}

const COMMA = Buffer.from(',');

/**
 * A {@link FilledBody} of a LIST's `body` (`apimachinery/list-items.ts`): its head, each item
 * (`open`, its bytes, `close`, commas between) and its tail, each item's bytes copied from where
 * they are stored (`ListItems.locate`: no view per item; the total length is summed the same way)
 * when its batch is filled: a store entry's bytes stay the same for as long as the entry is held
 * (compaction copies them elsewhere; no slab space is reused).
 */
export function itemsBody(body: ItemsBody): FilledBody {
  const { head, items, open, close, tail } = body;
  const count = items.length;
  const ref: ByteRef = { buf: head, start: 0, end: 0 };
  let length = head.length + tail.length + count * (open.length + close.length) + Math.max(count - 1, 0);
  for (let i = 0; i < count; i++) {
    items.locate(i, ref);
    length += ref.end - ref.start;
  }
  // Position: piece `part` of item `i` (0 the comma, 1 `open`, 2 its bytes, 3 `close`; item -1
  // is the head, `count` the tail: their bytes are piece 2), `off` bytes into it.
  let i = -1;
  let part = 2;
  let off = 0;
  return {
    length,
    fill(into: Buffer): number {
      let at = 0;
      const room = into.length;
      while (at < room && i <= count) {
        let buf: Buffer;
        let start = 0;
        let end: number;
        if (part !== 2) {
          buf = part === 0 ? COMMA : part === 1 ? open : close;
          end = buf.length;
        } else if (i === -1 || i === count) {
          buf = i === -1 ? head : tail;
          end = buf.length;
        } else {
          items.locate(i, ref);
          buf = ref.buf;
          start = ref.start;
          end = ref.end;
        }
        const n = Math.min(end - start - off, room - at);
        if (n > 0) at += buf.copy(into, at, start + off, start + off + n);
        off += n;
        if (off < end - start) continue;
        // The piece is written: the next one (past the tail: i = count + 1, the end).
        off = 0;
        if (i === count) i++;
        else if (part < 3 && i !== -1) part++;
        else {
          i++;
          part = i === count ? 2 : i === 0 ? 1 : 0;
        }
      }
      return at;
    },
  };
}

/** The whole body in one Buffer (tests, small answers). */
export function bodyBytes(body: FilledBody): Buffer {
  const out = Buffer.allocUnsafe(body.length);
  const n = body.fill(out);
  if (n !== body.length) throw new Error(`body filled ${n} of ${body.length} bytes`);
  return out;
}

/**
 * Writes `body` through `write` (a stream's write: its callback once the chunk is consumed,
 * then the buffer is refilled) in batches of up to {@link BATCH_BYTES}, two buffers in turn,
 * then calls `end`. `stopped()` true (the destination closed) stops it. Returns at once.
 */
export function pumpBody(
  body: FilledBody,
  write: (chunk: Buffer, done: (err?: Error | null) => void) => void,
  end: () => void,
  stopped: () => boolean,
): void {
  const size = Math.max(1, Math.min(body.length, BATCH_BYTES));
  const free: Buffer[] = [];
  let made = 0;
  let ended = false;
  const pump = (): void => {
    while (!ended && !stopped()) {
      let buf = free.pop();
      if (buf === undefined) {
        if (made === 2) return; // both in flight: the next callback pumps again
        buf = Buffer.allocUnsafeSlow(size);
        made++;
      }
      const n = body.fill(buf);
      if (n === 0) {
        ended = true;
        end();
        return;
      }
      const b = buf;
      write(n === b.length ? b : b.subarray(0, n), (err) => {
        if (err) return;
        free.push(b);
        pump();
      });
    }
  };
  pump();
}

/**
 * A 200 answer of `body` with `headers` and its content-length. Resolves when the response
 * closed (written, or the client left): the caller holds its `--max-inflight` slot until then,
 * as for gzip (`compress.ts`).
 */
export function writeFilled(
  res: ServerResponse,
  headers: Record<string, string | number | string[]>,
  body: FilledBody,
): Promise<void> {
  res.writeHead(200, { ...headers, 'content-length': body.length });
  const closed = new Promise<void>((resolve) => res.once('close', () => resolve()));
  pumpBody(
    body,
    (chunk, done) => res.write(chunk, done),
    () => res.end(),
    () => res.destroyed,
  );
  return closed;
}
