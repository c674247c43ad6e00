import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { MockAgent } from 'undici';
import { buildServer } from '../../../src/server/app.ts';
import { acceptsGzip, GZIP_THRESHOLD_BYTES } from '../../../src/server/compress.ts';
import { silentLogger } from '../../../src/util/logger.ts';
import { FakeCache, fakeCodec, pod } from '../../support/fake-cache.ts';
import { gzipMembers } from '../../support/gzip-members.ts';

function setup(responseCompression: 'none' | 'gzip', pods: number, random = false, maxInflight?: number) {
  const agent = new MockAgent();
  agent.disableNetConnect();
  const cache = new FakeCache();
  // ~1.1 KB per pod: 200 pods ≈ 220 KB, above the 128 KiB threshold; 50 pods below it.
  cache.objects = Array.from({ length: pods }, (_, i) =>
    pod('a', `p${String(i).padStart(4, '0')}`, i + 1, {
      filler: random ? randomBytes(750).toString('base64') : 'x'.repeat(1000),
    }),
  );
  return buildServer({
    upstream: {
      server: new URL('https://apiserver.test:6443'),
      dispatcher: agent,
      longRunningDispatcher: agent,
      authorization: () => 'Bearer t',
    },
    caches: [cache],
    codec: fakeCodec,
    consistentReads: 'cache',
    responseCompression,
    logger: silentLogger,
    ...(maxInflight !== undefined ? { maxInflight } : {}),
  }).app;
}

describe('acceptsGzip (apiserver compression.go ContentEncodingSupported)', () => {
  it('a comma-separated token equal to gzip after trimming; no q-values, case-sensitive', () => {
    for (const h of ['gzip', 'gzip, deflate, br', 'br,gzip', ' deflate , gzip ', ['br', 'gzip']])
      assert.equal(acceptsGzip(h), true, String(h));
    for (const h of [undefined, '', 'identity', 'deflate', 'gzip;q=1', 'GZIP', 'x-gzip', '*'])
      assert.equal(acceptsGzip(h), false, String(h));
  });
});

describe('--response-compression=gzip', () => {
  const url = '/api/v1/namespaces/a/pods?resourceVersion=0';

  it('a LIST above 128 KiB goes out as ONE gzip member with Vary, decoding to the identity body', async () => {
    const app = setup('gzip', 200);
    const plain = await app.inject({ method: 'GET', url });
    assert.equal(plain.headers['content-encoding'], undefined);
    assert.ok(plain.rawPayload.length > GZIP_THRESHOLD_BYTES);
    const gz = await app.inject({ method: 'GET', url, headers: { 'accept-encoding': 'gzip, deflate' } });
    assert.equal(gz.statusCode, 200);
    assert.equal(gz.headers['content-encoding'], 'gzip');
    assert.equal(gz.headers.vary, 'Accept-Encoding');
    assert.equal(gz.headers['content-length'], undefined);
    assert.equal(gz.headers['content-type'], 'application/json');
    assert.equal(gzipMembers(gz.rawPayload), 1);
    assert.ok(gz.rawPayload.length < plain.rawPayload.length / 10, `${gz.rawPayload.length} bytes`);
    assert.deepEqual(gunzipSync(gz.rawPayload), plain.rawPayload);
  });

  it('identity at or below 128 KiB, for clients without gzip, and with the flag off (the default)', async () => {
    const small = await setup('gzip', 50).inject({
      method: 'GET',
      url,
      headers: { 'accept-encoding': 'gzip' },
    });
    assert.equal(small.headers['content-encoding'], undefined);
    assert.ok(small.rawPayload.length < GZIP_THRESHOLD_BYTES);
    assert.equal(Number(small.headers['content-length']), small.rawPayload.length);
    const q = await setup('gzip', 200).inject({
      method: 'GET',
      url,
      headers: { 'accept-encoding': 'gzip;q=1' },
    });
    assert.equal(q.headers['content-encoding'], undefined);
    const off = await setup('none', 200).inject({
      method: 'GET',
      url,
      headers: { 'accept-encoding': 'gzip' },
    });
    assert.equal(off.headers['content-encoding'], undefined);
    assert.equal(Number(off.headers['content-length']), off.rawPayload.length);
  });
});

describe('attack: a slow client of a gzip answer', () => {
  const url = '/api/v1/namespaces/a/pods?resourceVersion=0';
  it('holds its --max-inflight slot until the answer is written or it leaves (was: released at once)', async () => {
    // ~10 MB of incompressible pods: more than the loopback socket buffers take in.
    const app = setup('gzip', 10000, true, 1);
    await app.listen({ host: '127.0.0.1', port: 0 });
    let slow: ReturnType<typeof connect> | undefined;
    try {
      const port = (app.server.address() as AddressInfo).port;
      const status = (headers: Record<string, string> = {}) =>
        new Promise<number>((resolve, reject) => {
          const req = request({ host: '127.0.0.1', port, path: url, headers, agent: false }, (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          });
          req.on('error', reject);
          req.end();
        });
      slow = connect(port, '127.0.0.1');
      slow.on('error', () => {});
      slow.write(`GET ${url} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept-Encoding: gzip\r\n\r\n`);
      slow.pause();
      await new Promise((r) => setTimeout(r, 300));
      // The slow client's zlib stream still runs: its slot is taken, as the apiserver's seat.
      assert.equal(await status(), 429);
      slow.destroy();
      await new Promise((r) => setTimeout(r, 100));
      assert.equal(await status({ 'accept-encoding': 'gzip' }), 200);
      assert.equal(await status(), 200);
    } finally {
      slow?.destroy();
      await app.close();
    }
  });
});
