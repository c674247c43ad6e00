import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { openPausedWatch, RawWatchStatusError, readWatchEvents } from '../../support/raw-watch.ts';

const event = (name: string, filler = '') =>
  `${JSON.stringify({ type: 'ADDED', object: { metadata: { name, resourceVersion: '1' }, filler } })}\n`;

describe('raw watch reader', () => {
  let server: Server;
  let base: string;
  const big = 'y'.repeat(1024 * 1024);
  before(async () => {
    server = createServer((req, res) => {
      if (req.url === '/gone') {
        res.writeHead(410, { 'content-type': 'application/json' });
        res.end('{}');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      // An event split across HTTP chunks (and so across reads), another whole, a 1 MiB one in
      // 256-byte chunks, then the end of the answer.
      const a = event('a');
      res.write(a.slice(0, 7));
      res.write(a.slice(7));
      res.write(event('b'));
      const c = event('c', big);
      for (let i = 0; i < c.length; i += 256) res.write(c.slice(i, i + 256));
      res.end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => server.close());

  it('reads every event, whole, until the answer ends', async () => {
    const got = await readWatchEvents(openPausedWatch(base, '/w'), 10);
    assert.deepEqual(
      got.map((e) => e.object.metadata.name),
      ['a', 'b', 'c'],
    );
    assert.equal((got[2]!.object as { filler?: string }).filler, big);
  });

  it('stops at n events', async () => {
    const got = await readWatchEvents(openPausedWatch(base, '/w', { 'x-test': '1' }), 2);
    assert.deepEqual(
      got.map((e) => e.object.metadata.name),
      ['a', 'b'],
    );
  });

  it('another status: RawWatchStatusError with its code', async () => {
    await assert.rejects(readWatchEvents(openPausedWatch(base, '/gone'), 1), (e: unknown) => {
      assert.ok(e instanceof RawWatchStatusError);
      assert.equal(e.status, 410);
      return true;
    });
  });
});
