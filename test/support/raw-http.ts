/**
 * Raw HTTP/1.1 over a plain or TLS socket, for requests an HTTP client library will not send (an
 * asterisk-form target `OPTIONS *`) and for connections that send nothing at all.
 */
import net from 'node:net';
import tls from 'node:tls';

/** Where to connect: `http://host:port` or `https://host:port` (with `ca`, PEM, for https). */
export interface RawTarget {
  url: string;
  ca?: string | Buffer;
}

/** A parsed HTTP/1.1 answer: status code, headers (names lower-cased, in order), body. */
export interface RawAnswer {
  status: number;
  headers: [string, string][];
  body: string;
}

/** Opens a socket to `target` (TLS for `https:`, offering only `http/1.1`); resolves once connected. */
export function rawConnect(target: RawTarget): Promise<net.Socket> {
  const u = new URL(target.url);
  const port = Number(u.port);
  const host = u.hostname.replace(/^\[|\]$/g, '');
  return new Promise((resolve, reject) => {
    const s =
      u.protocol === 'https:'
        ? tls.connect({ host, port, ca: target.ca, ALPNProtocols: ['http/1.1'] }, () => resolve(s))
        : net.connect({ host, port }, () => resolve(s));
    s.once('error', reject);
  });
}

/**
 * Sends `head` (the request line and headers, `\r\n`-separated, WITHOUT the final empty line)
 * and `body`, with `Connection: close`, and reads the answer to the end of the connection.
 */
export async function rawRequest(target: RawTarget, head: string, body = ''): Promise<RawAnswer> {
  const s = await rawConnect(target);
  const chunks: Buffer[] = [];
  s.on('data', (c: Buffer) => chunks.push(c));
  const closed = new Promise<void>((resolve) => s.once('close', () => resolve()));
  const len = body === '' ? '' : `Content-Length: ${Buffer.byteLength(body)}\r\n`;
  s.write(`${head}\r\n${len}Connection: close\r\n\r\n${body}`);
  await closed;
  return parseAnswer(Buffer.concat(chunks).toString('latin1'));
}

/** Parses one HTTP/1.1 answer (no chunked decoding: the body is what follows the head). */
export function parseAnswer(raw: string): RawAnswer {
  const end = raw.indexOf('\r\n\r\n');
  const head = end < 0 ? raw : raw.slice(0, end);
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers = lines.map((l): [string, string] => {
    const i = l.indexOf(':');
    return [l.slice(0, i).trim().toLowerCase(), l.slice(i + 1).trim()];
  });
  return { status: Number(statusLine.split(' ')[1]), headers, body: end < 0 ? '' : raw.slice(end + 4) };
}

/**
 * Opens a connection that never sends a byte and resolves with the ms until the server closed it
 * (by FIN, reset or TLS alert), and what it sent before (latin1); rejects after `maxMs`.
 * For https targets the socket is raw TCP: no TLS handshake is started either.
 */
export function silentConnection(
  url: string,
  maxMs: number,
): Promise<{ closedAfterMs: number; sent: string }> {
  const u = new URL(url);
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    let sent = '';
    const s = net.connect({ host: u.hostname.replace(/^\[|\]$/g, ''), port: Number(u.port) });
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error(`${url}: still open after ${maxMs} ms`));
    }, maxMs);
    s.on('data', (c: Buffer) => {
      sent += c.toString('latin1');
    });
    s.on('error', () => {});
    s.once('close', () => {
      clearTimeout(timer);
      resolve({ closedAfterMs: performance.now() - t0, sent });
    });
  });
}
