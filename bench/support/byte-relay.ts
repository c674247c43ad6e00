/**
 * A counting TCP relay in front of the apiserver for the node-local rows (bench/scenarios/node-local.ts):
 * every upstream client of a row (agents in the direct row, node proxies or the pool proxy
 * otherwise) connects to the relay, which pipes the bytes to the apiserver unchanged (TLS passes
 * through: the apiserver's certificate names 127.0.0.1) and counts them per direction. Counts
 * wire bytes (TLS records, HTTP framing, gzip as negotiated), which the apiserver's
 * `apiserver_response_sizes` histogram would only report when a watch ends.
 */
import { connect, createServer, type Socket } from 'node:net';

/** A running relay. */
export interface ByteRelay {
  /** Port on 127.0.0.1. */
  port: number;
  /** Bytes apiserver → clients and clients → apiserver so far. */
  bytes(): { down: number; up: number };
  /** Connections accepted so far. */
  connections(): number;
  /** Closes the listener and every relayed connection. */
  close(): Promise<void>;
}

/** Starts a relay to `host:port` on an ephemeral loopback port. */
export async function startByteRelay(host: string, port: number): Promise<ByteRelay> {
  let down = 0;
  let up = 0;
  let accepted = 0;
  const open = new Set<Socket>();
  const server = createServer((client) => {
    accepted++;
    const upstream = connect({ host, port });
    open.add(client).add(upstream);
    client.on('data', (d: Buffer) => {
      up += d.length;
    });
    upstream.on('data', (d: Buffer) => {
      down += d.length;
    });
    client.pipe(upstream);
    upstream.pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  if (addr === null || typeof addr === 'string') throw new Error('relay: no address');
  return {
    port: addr.port,
    bytes: () => ({ down, up }),
    connections: () => accepted,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of open) s.destroy();
        server.close(() => resolve());
      }),
  };
}
