import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { Agent } from 'undici';
import type { Upstream } from '../../../src/upstream/connection.ts';
import { readLines, upstreamGet } from '../../../src/upstream/request.ts';
import { ConnectionRefusedError } from '../../../src/util/errors.ts';

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
