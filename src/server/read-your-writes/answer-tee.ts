/**
 * The answer tee of read-your-writes as an undici dispatch interceptor (as
 * `ops/upstream-observer.ts` observes every upstream request): a request dispatched with an
 * {@link AnswerTee} (`TeeDispatchOptions.answerTee`) has its successful (2xx) answer's first
 * bytes held back and handed to the tee BEFORE the handler below sees any of them, so what the
 * tee records (a write's RV, the RV a read showed its client) holds when the client reads on.
 * Whether the answer is wanted at all is asked when its status line arrives
 * ({@link AnswerTee.wanted}), not when the request was sent: a cache may start serving the
 * resource in between. Requests without a tee, and answers not wanted, pass untouched; a tee
 * that throws fails the request (the handler sees the error as `onResponseError`).
 */
import type { Dispatcher } from 'undici';
import type { AnswerHeaders } from './answer-meta.ts';

/** Largest write answer buffered for read-your-writes (bytes); bigger ones stream after their first 8 MiB. */
export const MAX_TEE_BYTES = 8 * 1024 * 1024;

/** Bytes of a read's answer held back until its RV is recorded (metadata comes first). */
export const READ_PREFIX_BYTES = 64 * 1024;

/** Reads a successful answer's first bytes BEFORE the client sees any of them. */
export interface AnswerTee {
  /** How many bytes to hold back at most. */
  maxBytes: number;
  /**
   * Asked when a 2xx answer's status line arrives (the upstream has done the request by then):
   * false lets the answer pass untouched, nothing held and {@link onAnswer} not called. The first
   * answer holds for the request (the handler below may ask again). Absent: always wanted.
   */
  wanted?(): boolean;
  /** `complete`: `body` is the whole answer (else its first `maxBytes` or more). May throw. */
  onAnswer(body: Buffer, complete: boolean, headers: AnswerHeaders): void;
}

/** Dispatch options that may carry the tee of one request. */
export type TeeDispatchOptions = Dispatcher.DispatchOptions & { answerTee?: AnswerTee };

/** Dispatchers that carry the tee interceptor ({@link teeAnswers}). */
const TEE_CAPABLE = new WeakSet<Dispatcher>();

/** `dispatcher` with the tee interceptor (see the module comment); closing it closes `dispatcher`. */
export function teeAnswers(dispatcher: Dispatcher): Dispatcher {
  const d = dispatcher.compose(
    (dispatch) => (opts, handler) =>
      (opts as TeeDispatchOptions).answerTee
        ? dispatch(opts, new TeeHandler((opts as TeeDispatchOptions).answerTee!, handler))
        : dispatch(opts, handler),
  );
  TEE_CAPABLE.add(d);
  return d;
}

/**
 * Dispatches `opts` with `tee` on `dispatcher`: through its interceptor when it carries one,
 * else with the tee handler wrapped here, so read-your-writes never depends on how a pool was built.
 */
export function dispatchTeed(
  dispatcher: Dispatcher,
  opts: Dispatcher.DispatchOptions,
  tee: AnswerTee,
  handler: Dispatcher.DispatchHandler,
): boolean {
  if (TEE_CAPABLE.has(dispatcher))
    return dispatcher.dispatch({ ...opts, answerTee: tee } as TeeDispatchOptions, handler);
  return dispatcher.dispatch(opts, new TeeHandler(tee, handler));
}

/** Holds a 2xx answer's first `tee.maxBytes` bytes (or all of a shorter one) until the tee read them. */
class TeeHandler implements Dispatcher.DispatchHandler {
  readonly #tee: AnswerTee;
  readonly #next: Dispatcher.DispatchHandler;
  #headers: AnswerHeaders = { contentType: undefined, contentEncoding: undefined };
  #holding = false;
  #held: Buffer[] = [];
  #bytes = 0;
  #failed = false;

  constructor(tee: AnswerTee, next: Dispatcher.DispatchHandler) {
    this.#tee = tee;
    this.#next = next;
  }

  onRequestStart(c: Dispatcher.DispatchController, ctx: unknown): void {
    this.#next.onRequestStart?.(c, ctx);
  }

  onRequestUpgrade(
    c: Dispatcher.DispatchController,
    status: number,
    headers: Parameters<NonNullable<Dispatcher.DispatchHandler['onRequestUpgrade']>>[2],
    socket: Parameters<NonNullable<Dispatcher.DispatchHandler['onRequestUpgrade']>>[3],
  ): void {
    this.#next.onRequestUpgrade?.(c, status, headers, socket);
  }

  onResponseStart(
    c: Dispatcher.DispatchController,
    status: number,
    headers: Record<string, string | string[] | undefined>,
    message: string,
  ): void {
    // Interim 1xx answers are not the response.
    if (status >= 200 && status < 300 && (this.#tee.wanted?.() ?? true)) {
      this.#holding = true;
      this.#headers = {
        contentType: headerValue(headers['content-type']),
        contentEncoding: headerValue(headers['content-encoding']),
      };
    }
    this.#next.onResponseStart?.(c, status, headers as Record<string, string | string[]>, message);
  }

  onResponseData(c: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#failed) return;
    if (!this.#holding) {
      this.#next.onResponseData?.(c, chunk);
      return;
    }
    this.#held.push(chunk);
    this.#bytes += chunk.length;
    if (this.#bytes <= this.#tee.maxBytes) return;
    const first = this.#release();
    if (this.#read(c, first, false)) this.#next.onResponseData?.(c, first);
  }

  onResponseEnd(c: Dispatcher.DispatchController, trailers: Record<string, string | string[]>): void {
    if (this.#failed) return;
    if (this.#holding) {
      const body = this.#release();
      if (!this.#read(c, body, true)) return;
      if (body.length > 0) this.#next.onResponseData?.(c, body);
    }
    this.#next.onResponseEnd?.(c, trailers);
  }

  onResponseError(c: Dispatcher.DispatchController, err: Error): void {
    if (this.#failed) return;
    this.#next.onResponseError?.(c, err);
  }

  #release(): Buffer {
    const body = this.#held.length === 1 ? this.#held[0]! : Buffer.concat(this.#held, this.#bytes);
    this.#holding = false;
    this.#held = [];
    return body;
  }

  /** Hands `body` to the tee; false (the request failed, the upstream request aborted) when it threw. */
  #read(c: Dispatcher.DispatchController, body: Buffer, complete: boolean): boolean {
    try {
      this.#tee.onAnswer(body, complete, this.#headers);
      return true;
    } catch (err) {
      this.#next.onResponseError?.(c, err as Error);
      this.#failed = true;
      c.abort(err as Error);
      return false;
    }
  }
}

function headerValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v.join(', ') : v;
}
