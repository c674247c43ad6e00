/**
 * Where one watch event ends in a watch answer's bytes, so that a proxy may end a stream between
 * two events instead of inside one. The framings are the apiserver's
 * (`k8s.io/apiserver/pkg/endpoints/handlers/watch.go` sets the media type,
 * `k8s.io/apimachinery/pkg/runtime/serializer`'s framers write the frames):
 *
 * - `json-lines`: `application/json` (no `;stream=watch` suffix for JSON): each event is one
 *   compact JSON object followed by `\n` (`json.Encoder`; a raw newline never occurs inside
 *   compact JSON, strings escape it);
 * - `length-prefixed`: `application/vnd.kubernetes.protobuf;stream=watch`: each event is a
 *   4-byte big-endian unsigned length, then that many bytes (`framer.NewLengthDelimitedFrameWriter`).
 *
 * Any other media type (`application/cbor-seq`, `application/yaml;stream=watch`, …) or a
 * compressed body has no framing here: {@link watchFraming} answers undefined.
 */

/** How events are delimited in a watch answer's body. */
export type WatchFraming = 'json-lines' | 'length-prefixed';

/**
 * The framing of a watch answer from its `Content-Type` and `Content-Encoding` headers;
 * undefined when unknown, or when the body is encoded (anything but absent/`identity`), since
 * its bytes are then not the frames.
 */
export function watchFraming(
  contentType: string | undefined,
  contentEncoding: string | undefined,
): WatchFraming | undefined {
  if (contentEncoding !== undefined && contentEncoding.trim().toLowerCase() !== 'identity') return undefined;
  if (contentType === undefined) return undefined;
  const [essence = '', ...params] = contentType.toLowerCase().split(';');
  const type = essence.trim();
  if (type === 'application/json') return 'json-lines';
  if (type === 'application/vnd.kubernetes.protobuf' && params.some((p) => p.trim() === 'stream=watch'))
    return 'length-prefixed';
  return undefined;
}

/**
 * The first bytes of a BOOKMARK event in each framing, as the apiserver writes it
 * (`metav1.WatchEvent{Type, Object}`): JSON `{"type":"BOOKMARK",…` (`json.Encoder`, compact,
 * struct field order: `type` first); protobuf, the frame's payload is the raw (no `k8s\0`
 * envelope: the stream serializer) WatchEvent message, field 1 `type` first: tag `0x0a`,
 * length `0x08`, then `BOOKMARK`.
 */
const BOOKMARK_PREFIX: Record<WatchFraming, Uint8Array> = {
  'json-lines': Buffer.from('{"type":"BOOKMARK"'),
  'length-prefixed': Buffer.concat([Buffer.from([0x0a, 0x08]), Buffer.from('BOOKMARK')]),
};

/**
 * Follows the bytes of one watch answer body (fed in order, as they are written to the client)
 * and tells whether they end on an event boundary, and whether the last complete event was a
 * BOOKMARK (from its first bytes only: {@link BOOKMARK_PREFIX}; no decoding). Work per chunk:
 * one native newline search per JSON event, O(frames) for protobuf, at most ~18 bytes compared
 * per event; nothing is copied or kept.
 */
export class EventBoundary {
  readonly framing: WatchFraming;
  readonly #prefix: Uint8Array;
  /** Whether bytes of an incomplete event were seen (false before any byte and between events). */
  #inEvent = false;
  /** Bytes of the current event matched against the bookmark prefix so far. */
  #matched = 0;
  /** The current event's kind, once its first bytes tell: undefined while they may still match. */
  #bookmark: boolean | undefined;
  /** length-prefixed: bytes of the current frame's 4-byte length header seen (0–3; 0 between frames). */
  #headerBytes = 0;
  /** length-prefixed: the length being assembled from the header bytes. */
  #length = 0;
  /** length-prefixed: bytes of the current frame's payload still to come (with the header done). */
  #remaining = 0;
  /** length-prefixed: whether the current frame's header is complete. */
  #inPayload = false;
  /** Whether the last complete event was a BOOKMARK (false before any). */
  lastWasBookmark = false;
  /** Complete events seen (BOOKMARKs included). */
  events = 0;

  constructor(framing: WatchFraming) {
    this.framing = framing;
    this.#prefix = BOOKMARK_PREFIX[framing];
  }

  /** Whether every byte seen so far belongs to a complete event (true before any byte). */
  get atBoundary(): boolean {
    return !this.#inEvent;
  }

  /** All of `chunk` is written: follows it. */
  push(chunk: Uint8Array): void {
    let off = 0;
    while (off < chunk.length) {
      const n = this.next(off === 0 ? chunk : chunk.subarray(off));
      if (n < 0) return;
      off += n;
    }
  }

  /**
   * How many bytes of `chunk` complete the event in flight: the prefix to write before ending
   * the stream on a boundary. 0 when already on a boundary; -1 when the event does not end in
   * this chunk (all of it was followed, write it whole and look at the next). The bytes
   * counted (or all, for -1) are followed as if pushed.
   */
  cut(chunk: Uint8Array): number {
    if (this.atBoundary) return 0;
    return this.next(chunk);
  }

  /**
   * Follows `chunk` up to the end of the next event that ends in it and answers how many bytes
   * that took (then {@link events} and {@link lastWasBookmark} describe that event); -1 when
   * no event ends in it (all of it was followed).
   */
  next(chunk: Uint8Array): number {
    return this.framing === 'json-lines' ? this.#nextLine(chunk) : this.#nextFrame(chunk);
  }

  /** json-lines: one event per `\n`-terminated line. */
  #nextLine(chunk: Uint8Array): number {
    if (chunk.length === 0) return -1;
    if (!this.#inEvent) this.#begin();
    const i = this.#match(chunk, 0, chunk.length);
    const nl = chunk.indexOf(0x0a, i);
    if (nl < 0) return -1;
    this.#complete();
    return nl + 1;
  }

  /** length-prefixed: a 4-byte big-endian length, then that many payload bytes. */
  #nextFrame(chunk: Uint8Array): number {
    let i = 0;
    while (i < chunk.length || (this.#inPayload && this.#remaining === 0)) {
      if (this.#inPayload) {
        const take = Math.min(this.#remaining, chunk.length - i);
        this.#match(chunk, i, i + take);
        this.#remaining -= take;
        i += take;
        if (this.#remaining === 0) {
          this.#inPayload = false;
          this.#complete();
          return i;
        }
      } else {
        if (!this.#inEvent) this.#begin();
        // A header byte (big-endian): the length is complete after the 4th.
        this.#length = this.#length * 256 + chunk[i]!;
        i++;
        this.#headerBytes++;
        if (this.#headerBytes < 4) continue;
        this.#headerBytes = 0;
        this.#remaining = this.#length;
        this.#length = 0;
        this.#inPayload = true;
      }
    }
    return -1;
  }

  #begin(): void {
    this.#inEvent = true;
    this.#matched = 0;
    this.#bookmark = undefined;
  }

  /** Compares the event's bytes in `chunk[from, to)` with the bookmark prefix while undecided; answers where it stopped. */
  #match(chunk: Uint8Array, from: number, to: number): number {
    let i = from;
    const p = this.#prefix;
    while (this.#bookmark === undefined && i < to) {
      if (chunk[i] !== p[this.#matched]) {
        this.#bookmark = false;
        return i;
      }
      i++;
      this.#matched++;
      if (this.#matched === p.length) this.#bookmark = true;
    }
    return i;
  }

  #complete(): void {
    this.#inEvent = false;
    this.lastWasBookmark = this.#bookmark === true;
    this.events++;
  }
}
