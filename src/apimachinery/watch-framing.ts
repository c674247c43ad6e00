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
 * Follows the bytes of one watch answer body (fed in order, as they are written to the client)
 * and tells whether they end on an event boundary. Both framings are tracked in O(1) per chunk
 * for JSON and O(frames) for protobuf; nothing is copied or kept.
 */
export class EventBoundary {
  readonly framing: WatchFraming;
  /** json-lines: whether the last byte seen was `\n` (true before any byte). */
  #lineEnded = true;
  /** length-prefixed: bytes of the current frame's 4-byte length header seen (0–3; 0 between frames). */
  #headerBytes = 0;
  /** length-prefixed: the length being assembled from the header bytes. */
  #length = 0;
  /** length-prefixed: bytes of the current frame's payload still to come. */
  #remaining = 0;

  constructor(framing: WatchFraming) {
    this.framing = framing;
  }

  /** Whether every byte seen so far belongs to a complete event (true before any byte). */
  get atBoundary(): boolean {
    if (this.framing === 'json-lines') return this.#lineEnded;
    return this.#headerBytes === 0 && this.#remaining === 0;
  }

  /** All of `chunk` is written: follows it. */
  push(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    if (this.framing === 'json-lines') {
      this.#lineEnded = chunk[chunk.length - 1] === 0x0a;
      return;
    }
    this.#advance(chunk, false);
  }

  /**
   * How many bytes of `chunk` complete the event in flight: the prefix to write before ending
   * the stream on a boundary. 0 when already on a boundary; -1 when the event does not end in
   * this chunk (all of it was followed, write it whole and look at the next). The bytes
   * counted (or all, for -1) are followed as if pushed.
   */
  cut(chunk: Uint8Array): number {
    if (this.atBoundary) return 0;
    if (this.framing === 'json-lines') {
      const nl = chunk.indexOf(0x0a);
      if (nl < 0) {
        this.push(chunk);
        return -1;
      }
      this.#lineEnded = true;
      return nl + 1;
    }
    return this.#advance(chunk, true);
  }

  /**
   * length-prefixed: consumes `chunk`; with `stopAtBoundary`, stops at the first boundary
   * reached and answers how many bytes that took (-1 when none is reached).
   */
  #advance(chunk: Uint8Array, stopAtBoundary: boolean): number {
    let i = 0;
    while (i < chunk.length) {
      if (this.#remaining > 0) {
        const take = Math.min(this.#remaining, chunk.length - i);
        this.#remaining -= take;
        i += take;
      } else {
        // A header byte (big-endian): the length is complete after the 4th.
        this.#length = this.#length * 256 + chunk[i]!;
        i++;
        this.#headerBytes++;
        if (this.#headerBytes < 4) continue;
        this.#headerBytes = 0;
        this.#remaining = this.#length;
        this.#length = 0;
      }
      if (stopAtBoundary && this.atBoundary) return i;
    }
    return -1;
  }
}
