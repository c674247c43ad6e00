import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, createServer } from 'node:net';
import { describe, it } from 'node:test';
import { startByteRelay } from '../../../../bench/support/byte-relay.ts';

describe('bench/support/byte-relay', () => {
  it('relays both directions unchanged and counts the bytes of each', async () => {
    // Upstream: answers every chunk with twice its bytes.
    const upstream = createServer((s) => s.on('data', (d: Buffer) => s.write(Buffer.concat([d, d]))));
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const port = (upstream.address() as { port: number }).port;
    const relay = await startByteRelay('127.0.0.1', port);
    try {
      const c = connect({ host: '127.0.0.1', port: relay.port });
      await once(c, 'connect');
      let got = Buffer.alloc(0);
      const done = new Promise<void>((resolve) =>
        c.on('data', (d: Buffer) => {
          got = Buffer.concat([got, d]);
          if (got.length >= 2000) resolve();
        }),
      );
      c.write(Buffer.alloc(1000, 0x61));
      await done;
      assert.equal(got.toString(), 'a'.repeat(2000));
      assert.deepEqual(relay.bytes(), { down: 2000, up: 1000 });
      assert.equal(relay.connections(), 1);
      c.destroy();
    } finally {
      await relay.close();
      upstream.close();
    }
  });
});
