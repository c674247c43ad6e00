/**
 * Byte-level decoding of apiserver JSON answers that keeps object bytes verbatim.
 * Exports {@link decodeWatchLine} (one `watchjson` line to a {@link WatchEvent}),
 * {@link decodeList} (a LIST body to its items, `kind`/`apiVersion` restored) and {@link itemSpans}.
 */
import type { KubeObject, UpstreamObject } from '../apimachinery/object.ts';

/** The event types of a Kubernetes watch stream (`watch.EventType`). */
export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

/** One decoded watch event; for ERROR the object is a `metav1.Status`. */
export interface WatchEvent {
  type: WatchEventType;
  object: UpstreamObject;
}

const TYPES: ReadonlySet<string> = new Set(['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK', 'ERROR']);
const PREFIX = Buffer.from('{"type":"');
const OBJECT_KEY = Buffer.from(',"object":');

/**
 * Decodes one watch line `{"type":"X","object":{…}}` (apiserver `watchjson` framing, one event
 * per line). The object's bytes are SLICED from the line (copied out so the socket chunk is not
 * retained) and kept verbatim; only when the line has another shape (key order, spacing, extra
 * fields) is the object re-serialized with JSON.stringify. Throws SyntaxError on invalid JSON
 * or an unknown event type.
 */
export function decodeWatchLine(line: Buffer): WatchEvent {
  let end = line.length;
  while (end > 0 && isWs(line[end - 1]!)) end--;
  if (line.subarray(0, PREFIX.length).equals(PREFIX)) {
    const q = line.indexOf(0x22, PREFIX.length);
    const objStart = q + 1 + OBJECT_KEY.length;
    if (
      q > 0 &&
      line.subarray(q + 1, objStart).equals(OBJECT_KEY) &&
      line[objStart] === 0x7b &&
      line[end - 1] === 0x7d
    ) {
      const type = line.toString('latin1', PREFIX.length, q);
      const raw = Buffer.from(line.subarray(objStart, end - 1));
      if (TYPES.has(type)) {
        try {
          const object = JSON.parse(raw.toString('utf8')) as KubeObject;
          if (object && typeof object === 'object' && !Array.isArray(object)) {
            return { type: type as WatchEventType, object: { raw, object } };
          }
        } catch {
          // not the simple shape after all: fall back below
        }
      }
    }
  }
  const ev = JSON.parse(line.toString('utf8')) as { type?: unknown; object?: unknown };
  if (typeof ev.type !== 'string' || !TYPES.has(ev.type) || !ev.object || typeof ev.object !== 'object') {
    throw new SyntaxError(`not a watch event: ${line.subarray(0, 100).toString('utf8')}`);
  }
  const object = ev.object as KubeObject;
  return { type: ev.type as WatchEventType, object: { raw: Buffer.from(JSON.stringify(object)), object } };
}

/** A decoded LIST answer. */
export interface DecodedList {
  /** The list's own `kind` (e.g. a CRD's `spec.names.listKind`); "" or undefined when absent. */
  kind?: string;
  /** `metadata.resourceVersion` of the list ("" when absent). */
  resourceVersion: string;
  /** `metadata.continue` ("" when the list is complete). */
  continue: string;
  /** Items, each with `kind`/`apiVersion` (put back when the list omitted them). */
  items: UpstreamObject[];
}

/**
 * Decodes a LIST body, keeping each item's bytes verbatim (located by a byte scanner; JSON
 * structure bytes never occur inside UTF-8 multi-byte sequences). Items of built-in types come
 * without `kind`/`apiVersion` (the apiserver omits them in lists); they are put back in front,
 * in the order the apiserver writes them on GET and in watch events: `{"kind":…,"apiVersion":…,`.
 * Throws SyntaxError on invalid JSON.
 */
export function decodeList(body: Buffer, kind: string, apiVersion: string): DecodedList {
  const list = JSON.parse(body.toString('utf8')) as {
    kind?: string;
    metadata?: { resourceVersion?: string; continue?: string };
    items?: KubeObject[] | null;
  };
  const parsed = list.items ?? [];
  const spans = itemSpans(body);
  const exact = spans !== undefined && spans.length === parsed.length;
  const typeMeta = Buffer.from(`{"kind":${JSON.stringify(kind)},"apiVersion":${JSON.stringify(apiVersion)}`);
  const items: UpstreamObject[] = new Array(parsed.length);
  for (let i = 0; i < parsed.length; i++) {
    let object = parsed[i]!;
    let raw: Buffer = exact
      ? Buffer.from(body.subarray(spans[i]![0], spans[i]![1]))
      : Buffer.from(JSON.stringify(object));
    if (object.kind === undefined && object.apiVersion === undefined) {
      object = { kind, apiVersion, ...object };
      const rest = raw.subarray(1);
      const empty = rest[0] === 0x7d;
      raw = Buffer.concat([typeMeta, empty ? rest : Buffer.from(','), empty ? Buffer.alloc(0) : rest]);
    }
    items[i] = { raw, object };
  }
  return {
    kind: typeof list.kind === 'string' ? list.kind : '',
    resourceVersion: list.metadata?.resourceVersion ?? '',
    continue: list.metadata?.continue ?? '',
    items,
  };
}

function isWs(b: number): boolean {
  return b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;
}

function skipWs(buf: Buffer, i: number): number {
  while (i < buf.length && isWs(buf[i]!)) i++;
  return i;
}

/** Index of the quote closing the string opening at `i`. */
function stringEnd(buf: Buffer, i: number): number {
  let j = i + 1;
  for (;;) {
    const q = buf.indexOf(0x22, j);
    if (q < 0) return buf.length;
    let bs = 0;
    while (buf[q - 1 - bs] === 0x5c) bs++;
    if (bs % 2 === 0) return q;
    j = q + 1;
  }
}

/** [start, end) of each element of the top-level `"items"` array, or undefined if not found. */
export function itemSpans(buf: Buffer): Array<[number, number]> | undefined {
  let depth = 0;
  let i = 0;
  while (i < buf.length) {
    const c = buf[i]!;
    if (c === 0x22) {
      const end = stringEnd(buf, i);
      if (depth === 1 && end - i === 6 && buf.toString('latin1', i + 1, end) === 'items') {
        let j = skipWs(buf, end + 1);
        if (buf[j] === 0x3a) {
          j = skipWs(buf, j + 1);
          if (buf[j] === 0x5b) return arrayElements(buf, j);
          return buf.subarray(j, j + 4).toString() === 'null' ? [] : undefined;
        }
      }
      i = end + 1;
      continue;
    }
    if (c === 0x7b || c === 0x5b) depth++;
    else if (c === 0x7d || c === 0x5d) depth--;
    i++;
  }
  return undefined;
}

function arrayElements(buf: Buffer, open: number): Array<[number, number]> | undefined {
  const spans: Array<[number, number]> = [];
  let i = open + 1;
  for (;;) {
    i = skipWs(buf, i);
    const c = buf[i];
    if (c === undefined) return undefined;
    if (c === 0x5d) return spans;
    if (c === 0x2c) {
      i++;
      continue;
    }
    if (c !== 0x7b) return undefined;
    const start = i;
    let d = 0;
    for (; i < buf.length; i++) {
      const b = buf[i]!;
      if (b === 0x22) i = stringEnd(buf, i);
      else if (b === 0x7b || b === 0x5b) d++;
      else if (b === 0x7d || b === 0x5d) {
        d--;
        if (d === 0) break;
      }
    }
    if (i >= buf.length) return undefined;
    spans.push([start, i + 1]);
    i++;
  }
}
