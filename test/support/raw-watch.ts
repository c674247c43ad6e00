/**
 * A watch client on a raw socket, for tests of clients that stop reading: the request is written
 * by hand and the socket paused, so nothing is read until the test resumes it (an HTTP client
 * library would keep draining the socket into its own buffers). The one reader of such a
 * chunked watch answer for test/ and bench/.
 */
import { connect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { ByteBuffer } from './byte-buffer.ts';

/** One watch event as received: its type and object. */
export interface RawWatchEvent {
  type: string;
  object: { metadata: { name?: string; resourceVersion?: string }; code?: number; message?: string };
}

/** A raw watch answered with another status than 200 (`status`: its code, `line`: its status line). */
export class RawWatchStatusError extends Error {
  readonly status: number;
  readonly line: string;
  constructor(line: string) {
    super(`watch answered ${line}`);
    this.line = line;
    this.status = Number(line.split(' ')[1]);
  }
}

/**
 * Opens an HTTP/1.1 watch `path` on `base` (`http://host:port`, or `https://…` with `ca`, the
 * server name `localhost` as the fixture's certificate has it) with `headers`, the socket paused
 * before anything is read.
 */
export function openPausedWatch(
  base: string,
  path: string,
  headers: Record<string, string> = {},
  ca?: string | Buffer,
): Socket {
  const url = new URL(base);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const port = Number(url.port);
  const sock =
    url.protocol === 'https:'
      ? tlsConnect({ host, port, ca, servername: 'localhost' })
      : connect({ host, port });
  sock.pause();
  const extra = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  sock.write(`GET ${path} HTTP/1.1\r\nHost: ${url.host}\r\n${extra}\r\n`);
  return sock;
}

/**
 * The events of the chunked watch answer on `sock` (read from its status line), as they arrive,
 * until the answer's last chunk or the socket's end; resumes the socket. Every byte is copied a
 * bounded number of times however the events are split into chunks and reads (`ByteBuffer`).
 * @throws RawWatchStatusError when the status is not 200; the socket's error when it fails.
 */
export async function* rawWatchEvents(sock: Socket): AsyncGenerator<RawWatchEvent, void> {
  const raw = new ByteBuffer();
  const body = new ByteBuffer();
  let headersDone = false;
  /** Where the next newline search in `body` starts (what is before has none). */
  let scanned = 0;
  for await (const c of sock) {
    raw.push(c as Buffer);
    if (!headersDone) {
      const h = raw.indexOf('\r\n\r\n');
      if (h < 0) continue;
      const head = raw.take(h + 4).toString('latin1');
      const status = head.slice(0, head.indexOf('\r\n'));
      if (!/^HTTP\/1\.1 200 /.test(status)) throw new RawWatchStatusError(status);
      headersDone = true;
    }
    // De-chunk what is complete.
    let last = false;
    for (;;) {
      const crlf = raw.indexOf('\r\n');
      if (crlf < 0) break;
      const size = Number.parseInt(raw.view().subarray(0, crlf).toString('latin1'), 16);
      if (raw.length < crlf + 2 + size + 2) break;
      raw.skip(crlf + 2);
      body.push(raw.view().subarray(0, size));
      raw.skip(size + 2);
      if (size === 0) {
        last = true;
        break;
      }
    }
    for (let i = body.indexOf(10, scanned); i >= 0; i = body.indexOf(10)) {
      yield JSON.parse(body.take(i + 1).toString('utf8')) as RawWatchEvent;
    }
    scanned = body.length;
    if (last) return;
  }
}

/**
 * Reads the chunked watch answer on `sock` until `n` events arrived or the stream ended; resumes
 * the socket.
 * @throws RawWatchStatusError when the status is not 200.
 */
export async function readWatchEvents(sock: Socket, n: number): Promise<RawWatchEvent[]> {
  const out: RawWatchEvent[] = [];
  if (n <= 0) return out;
  for await (const e of rawWatchEvents(sock)) {
    out.push(e);
    if (out.length === n) break;
  }
  return out;
}
