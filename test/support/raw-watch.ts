/**
 * A watch client on a raw socket, for tests of clients that stop reading: the request is written
 * by hand and the socket paused, so nothing is read until the test resumes it (an HTTP client
 * library would keep draining the socket into its own buffers).
 */
import { connect, type Socket } from 'node:net';

/** One watch event as received: its type and object. */
export interface RawWatchEvent {
  type: string;
  object: { metadata: { name?: string; resourceVersion?: string }; code?: number; message?: string };
}

/**
 * Opens a plain-HTTP/1.1 watch `path` on `base` (`http://host:port`) with `headers`, the socket
 * paused before anything is read.
 */
export function openPausedWatch(base: string, path: string, headers: Record<string, string> = {}): Socket {
  const url = new URL(base);
  const sock = connect({ host: url.hostname, port: Number(url.port) });
  sock.pause();
  const extra = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  sock.write(`GET ${path} HTTP/1.1\r\nHost: ${url.host}\r\n${extra}\r\n`);
  return sock;
}

/**
 * Reads the chunked watch response on `sock` (from its status line) until `n` events arrived or
 * the stream ended; resumes the socket. Throws when the status is not 200.
 */
export async function readWatchEvents(sock: Socket, n: number): Promise<RawWatchEvent[]> {
  const out: RawWatchEvent[] = [];
  let raw = Buffer.alloc(0);
  let body = Buffer.alloc(0);
  let headersDone = false;
  for await (const c of sock) {
    raw = Buffer.concat([raw, c as Buffer]);
    if (!headersDone) {
      const h = raw.indexOf('\r\n\r\n');
      if (h < 0) continue;
      const status = raw.subarray(0, raw.indexOf('\r\n')).toString();
      if (!/^HTTP\/1\.1 200 /.test(status)) throw new Error(`watch answered ${status}`);
      headersDone = true;
      raw = raw.subarray(h + 4);
    }
    // De-chunk what is complete.
    for (;;) {
      const crlf = raw.indexOf('\r\n');
      if (crlf < 0) break;
      const size = Number.parseInt(raw.subarray(0, crlf).toString(), 16);
      if (raw.length < crlf + 2 + size + 2) break;
      body = Buffer.concat([body, raw.subarray(crlf + 2, crlf + 2 + size)]);
      raw = raw.subarray(crlf + 2 + size + 2);
      if (size === 0) return out;
    }
    let i = body.indexOf(10);
    while (i >= 0) {
      out.push(JSON.parse(body.subarray(0, i).toString()) as RawWatchEvent);
      body = body.subarray(i + 1);
      i = body.indexOf(10);
      if (out.length === n) return out;
    }
  }
  return out;
}
