import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { Agent } from 'undici';
import type { Upstream } from '../../../src/upstream/connection.ts';
import { readLines, upstreamGet, upstreamGetBuffer } from '../../../src/upstream/request.ts';
import { ConnectionRefusedError, UpstreamError } from '../../../src/util/errors.ts';

/** Runs `fn` against a loopback server answering with `handler`; closes both afterwards. */
async function withServer(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  fn: (up: Upstream) => Promise<void>,
): Promise<void> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const dispatcher = new Agent();
  const { port } = server.address() as AddressInfo;
  const up = { baseUrl: `http://127.0.0.1:${port}`, dispatcher, authorization: async () => undefined };
  try {
    await fn(up as unknown as Upstream);
  } finally {
    await dispatcher.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

const event = (i: number) => `{"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"cm-${i}"}}}\n`;

async function collect(chunks: string[]): Promise<string[]> {
  async function* src() {
    for (const c of chunks) yield Buffer.from(c);
  }
  const out: string[] = [];
  for await (const l of readLines(src())) out.push(l.toString());
  return out;
}

describe('readLines', () => {
  it('splits lines across arbitrary chunk boundaries without losing bytes', async () => {
    assert.deepEqual(await collect(['{"a":1}\n{"b"', ':2}\n\n{"c":', '3', '}\n{"d":4}']), [
      '{"a":1}',
      '{"b":2}',
      '{"c":3}',
      '{"d":4}',
    ]);
    assert.deepEqual(await collect(['ü\n', 'x']), ['ü', 'x']);
  });
});

describe('upstreamGet', () => {
  it("a refused connection is a ConnectionRefusedError with undici's message and error as cause", async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const dispatcher = new Agent();
    const up = { baseUrl: `http://127.0.0.1:${port}`, dispatcher, authorization: async () => undefined };
    try {
      await assert.rejects(upstreamGet(up as unknown as Upstream, '/api'), (err: unknown) => {
        assert.ok(err instanceof ConnectionRefusedError);
        assert.equal(err.code, 'KCP_ERR_CONNECTION_REFUSED');
        assert.equal(err.message, (err.cause as Error).message);
        assert.match(err.message, /ECONNREFUSED/);
        return true;
      });
    } finally {
      await dispatcher.close();
    }
  });
});

describe('upstreamGet with gzip (issue 12: the apiserver gzips LISTs and, since 1.37, watch streams)', () => {
  it('asks for gzip and reads a multi-member body (one member per flush) line by line as it arrives', async () => {
    let release!: () => void;
    const secondSent = new Promise<void>((r) => {
      release = r;
    });
    let acceptEncoding: string | undefined;
    await withServer(
      (req, res) => {
        acceptEncoding = req.headers['accept-encoding'];
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
        // Two events in the first member, the third in a second member written only after the
        // client has read the first two: a decoder that waits for the whole body would hang here.
        res.write(gzipSync(event(1) + event(2)));
        void secondSent.then(() => {
          res.write(gzipSync(event(3)));
          res.end(gzipSync(event(4)));
        });
      },
      async (up) => {
        const r = await upstreamGet(up, '/api/v1/configmaps', { watch: 1 });
        const lines = readLines(r.body);
        const got: string[] = [];
        for await (const l of lines) {
          got.push(l.toString());
          if (got.length === 2) release();
        }
        assert.equal(acceptEncoding, 'gzip');
        assert.deepEqual(
          got,
          [1, 2, 3, 4].map((i) => event(i).trimEnd()),
        );
      },
    );
  });

  it('a gzip LIST answer is gunzipped whole; an identity answer passes unchanged', async () => {
    const list = JSON.stringify({
      kind: 'ConfigMapList',
      items: Array.from({ length: 500 }, (_, i) => ({ i })),
    });
    await withServer(
      (req, res) => {
        const gzip = req.url?.includes('gz');
        res.writeHead(200, gzip ? { 'content-encoding': 'gzip' } : {});
        res.end(gzip ? gzipSync(list) : list);
      },
      async (up) => {
        assert.equal(String(await upstreamGetBuffer(up, '/gz')), list);
        assert.equal(String(await upstreamGetBuffer(up, '/plain')), list);
      },
    );
  });

  it('a gzip error answer becomes an UpstreamError with the Status message; a truncated body rejects', async () => {
    const status = {
      kind: 'Status',
      apiVersion: 'v1',
      status: 'Failure',
      message: 'pods is forbidden',
      reason: 'Forbidden',
      code: 403,
    };
    await withServer(
      (req, res) => {
        if (req.url === '/forbidden') {
          res.writeHead(403, { 'content-encoding': 'gzip' });
          res.end(gzipSync(JSON.stringify(status)));
          return;
        }
        res.writeHead(200, { 'content-encoding': 'gzip' });
        const z = gzipSync(event(1).repeat(50));
        res.end(z.subarray(0, z.length - 10));
      },
      async (up) => {
        await assert.rejects(upstreamGet(up, '/forbidden'), (err: unknown) => {
          assert.ok(err instanceof UpstreamError);
          assert.equal(err.statusCode, 403);
          assert.equal(err.reason, 'Forbidden');
          assert.equal(err.message, 'GET /forbidden: 403 pods is forbidden');
          return true;
        });
        await assert.rejects(upstreamGetBuffer(up, '/truncated'), /unexpected end of file/);
      },
    );
  });

  it('an encoding it did not ask for is refused', async () => {
    await withServer(
      (_req, res) => {
        res.writeHead(200, { 'content-encoding': 'br' });
        res.end('x');
      },
      async (up) => {
        await assert.rejects(upstreamGet(up, '/x'), /GET \/x: unexpected Content-Encoding "br"/);
      },
    );
  });
});
