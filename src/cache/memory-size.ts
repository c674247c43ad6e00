/**
 * What the cache really holds, in bytes, for its memory caps (`historyMaxBytes`) and the
 * `bytes`/`historyBytes` statistics: not only the upstream's raw bytes but the parsed metadata
 * and fields kept next to them, the history's event lines, and the bookkeeping. Stored bytes
 * live in shared slabs (`slab.ts`) and count their length only; a slab's free space (bounded by
 * compaction) is not counted.
 *
 * A parsed structure is estimated per kept structure, walking it once when it is stored, with the
 * sizes of V8's heap layout on 64-bit Node without pointer compression (Node's default): a
 * string is a 16-byte header plus one byte per Latin-1 character (two otherwise), rounded up to
 * 8; an object a 24-byte header plus 8 bytes per property (JSON.parse gives every object its own
 * fast properties; key strings are internalized and shared); an array a 32-byte JSArray plus a
 * 16-byte backing store plus 8 bytes per element; a number that is not a small integer a 16-byte
 * HeapNumber. Checked against `process.memoryUsage().heapUsed` for Pods and ConfigMaps
 * (`test/unit/cache/memory-size.test.ts`).
 */

/**
 * Bytes of bookkeeping per stored entry besides its bytes, name, labels and fields: the
 * StoreEntry (11 fields), its RV BigInt, its namespace-bucket slot and sorted-array slot
 * (issue 12: 100,000 ConfigMaps measured ~210 heap bytes per entry with the name, by
 * `bench/tools/store-memory.ts`).
 */
export const ENTRY_OVERHEAD = 200;

/** Bytes of bookkeeping per buffered history event (the event object and its ring slot). */
export const EVENT_OVERHEAD = 96;

/** Bytes of a Buffer's own object (JSUint8Array + its ArrayBuffer), besides its contents. */
export const BUFFER_OVERHEAD = 160;

/**
 * Where the growth of an accounted structure goes (a copy built on first use): the store or the
 * history that holds it now; unset while nobody accounts for it.
 */
export type Meter = (bytes: number) => void;

/**
 * `b` when it spans its own ArrayBuffer, else a copy that does. Node allocates Buffers under
 * half of `Buffer.poolSize` (64 KiB on Node 24) out of shared slabs, and one kept slice pins its
 * whole slab: kept bytes must own their memory for the accounting to hold (and for the memory to
 * be freed when they are).
 */
export function ownedBytes(b: Buffer): Buffer {
  if (b.byteOffset === 0 && b.buffer.byteLength === b.length) return b;
  const out = Buffer.allocUnsafeSlow(b.length);
  b.copy(out);
  return out;
}

/** Bytes a Buffer holds: its contents plus its own objects. */
export function bufferBytes(b: Buffer): number {
  return b.length + BUFFER_OVERHEAD;
}

/** Estimated V8 heap bytes of a JSON value as `JSON.parse` builds it (see the module doc). */
export function parsedBytes(value: unknown): number {
  switch (typeof value) {
    case 'string':
      return stringBytes(value);
    case 'number':
      return Number.isInteger(value) && value >= -0x8000_0000 && value < 0x8000_0000 ? 0 : 16;
    case 'object': {
      if (value === null) return 0;
      if (Array.isArray(value)) {
        let n = 48 + 8 * value.length;
        for (const v of value) n += parsedBytes(v);
        return n;
      }
      let n = 24;
      for (const k in value as Record<string, unknown>)
        n += 8 + parsedBytes((value as Record<string, unknown>)[k]);
      return n;
    }
    default:
      return 0;
  }
}

function stringBytes(s: string): number {
  return (16 + s.length * (isLatin1(s) ? 1 : 2) + 7) & ~7;
}

/** Whether V8 can store `s` one byte per character (stops at the first wider one). */
function isLatin1(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0xff) return false;
  return true;
}
