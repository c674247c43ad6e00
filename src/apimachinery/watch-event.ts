/**
 * One watch event on the wire: apimachinery `pkg/watch/watch.go` (`EventType`) and
 * `pkg/apis/meta/v1/watch.go` (`WatchEvent`: `{"type":…,"object":…}`), written as the
 * apiserver's JSON serializer frames a watch stream (one `Encode` per event, so each line ends
 * with `\n`).
 */
import type { MetadataVersion } from './accept.ts';

/** Watch event types as on the wire. */
export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

const PREFIX: Record<WatchEventType, Buffer> = {
  ADDED: Buffer.from('{"type":"ADDED","object":'),
  MODIFIED: Buffer.from('{"type":"MODIFIED","object":'),
  DELETED: Buffer.from('{"type":"DELETED","object":'),
  BOOKMARK: Buffer.from('{"type":"BOOKMARK","object":'),
  ERROR: Buffer.from('{"type":"ERROR","object":'),
};
const LINE_END = Buffer.from('}\n');

/**
 * One watch event as written: one Buffer, or the chunks of one line to write in order (an
 * ADDED line of a stored object: a shared prefix, a view of the stored bytes and `}\n`).
 */
export type WireLine = Buffer | readonly Buffer[];

/**
 * Set on the chunk array of an initial ADDED line written from a stored object: that object's
 * cache entry (one per object version), so encoders that keep bytes per entry (protobuf
 * messages) can find them without parsing the line.
 */
export const LINE_SOURCE: unique symbol = Symbol('line source');

/** A stored object as a {@link LINE_SOURCE}: its JSON (with kind and apiVersion) and its PartialObjectMetadata. */
export interface LineSource {
  /** The object's bytes as chunks to write in order. */
  readonly wire: readonly Buffer[];
  /** The object as a LIST item (the same bytes for the same object version: kept messages point into them). */
  readonly listItem: Buffer;
  /** The object as a PartialObjectMetadata GET answer in `meta.k8s.io/<version>`, as chunks. */
  metadataWire(version: MetadataVersion): readonly Buffer[];
}

/** Chunks of a line, maybe with the stored object they were written from ({@link LINE_SOURCE}). */
export type SourcedChunks = readonly Buffer[] & { readonly [LINE_SOURCE]?: LineSource };

/** Live event lines (one Buffer each) whose object is a stored object's bytes as they are. */
const liveSources = new WeakMap<Buffer, LineSource>();

/**
 * Notes that the object of the live event line `line` (ADDED or MODIFIED, shared by every
 * watcher) is `source`'s bytes as they are, so encoders that keep bytes per stored object
 * (protobuf messages) encode it once for the watchers and the later LISTs and GETs alike.
 */
export function setLineSource(line: Buffer, source: LineSource): void {
  liveSources.set(line, source);
}

/**
 * The stored object `line` was written from and its event type: an initial ADDED line's
 * {@link LINE_SOURCE}, or a live line's {@link setLineSource}; undefined for any other line.
 */
export function lineSource(line: WireLine): { source: LineSource; type: WatchEventType } | undefined {
  if (!Buffer.isBuffer(line)) {
    const source = (line as SourcedChunks)[LINE_SOURCE];
    return source ? { source, type: 'ADDED' } : undefined;
  }
  const source = liveSources.get(line);
  if (!source) return undefined;
  // `{"type":"` then the type (eventLine's prefix).
  const end = line.indexOf(0x22, 9);
  return { source, type: line.toString('latin1', 9, end) as WatchEventType };
}

/** Bytes of a {@link WireLine}. */
export function lineBytes(line: WireLine): number {
  if (Buffer.isBuffer(line)) return line.length;
  let n = 0;
  for (const c of line) n += c.length;
  return n;
}

/**
 * `{"type":T,"object":` + `objectHead`, `objectRest` and `}\n` as chunks, without copying
 * `objectRest` (the prefix Buffer is built once per `objectHead`, see {@link linePrefix}).
 */
export function eventChunks(
  type: WatchEventType,
  objectHead: Buffer | undefined,
  objectRest: Buffer,
): Buffer[] {
  return [objectHead ? linePrefix(type, objectHead) : PREFIX[type], objectRest, LINE_END];
}

const prefixes = new Map<string, WeakMap<Buffer, Buffer>>();

/** `{"type":T,"object":` + `head`, one Buffer per (type, head Buffer). */
function linePrefix(type: WatchEventType, head: Buffer): Buffer {
  let m = prefixes.get(type);
  if (!m) {
    m = new WeakMap();
    prefixes.set(type, m);
  }
  let p = m.get(head);
  if (!p) {
    p = Buffer.concat([PREFIX[type], head]);
    m.set(head, p);
  }
  return p;
}

/**
 * `{"type":T,"object":<object>}\n`: one allocation, the object bytes (one Buffer, or chunks to
 * join in order) copied once. The line owns its memory (not a slice of Node's shared Buffer
 * pool): caches keep lines for long, and one kept slice would pin its whole pool slab (64 KiB
 * on Node 24).
 */
export function eventLine(type: WatchEventType, object: Buffer | readonly Buffer[]): Buffer {
  const prefix = PREFIX[type];
  const parts = Buffer.isBuffer(object) ? [object] : object;
  let len = prefix.length + LINE_END.length;
  for (const p of parts) len += p.length;
  const out = Buffer.allocUnsafeSlow(len);
  let at = prefix.copy(out, 0);
  for (const p of parts) at += p.copy(out, at);
  LINE_END.copy(out, at);
  return out;
}
