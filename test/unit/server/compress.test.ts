import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { MockAgent } from 'undici';
import { buildServer } from '../../../src/server/app.ts';
import { acceptsGzip, GZIP_THRESHOLD_BYTES } from '../../../src/server/compress.ts';
import { silentLogger } from '../../../src/util/logger.ts';
import { FakeCache, fakeCodec, pod } from '../../support/fake-cache.ts';
import { gzipMembers } from '../../support/gzip-members.ts';

function setup(responseCompression: 'none' | 'gzip', pods: number) {
  const agent = new MockAgent();
  agent.disableNetConnect();
  const cache = new FakeCache();
  // ~1.1 KB per pod: 200 pods ≈ 220 KB, above the 128 KiB threshold; 50 pods below it.
  cache.objects = Array.from({ length: pods }, (_, i) =>
    pod('a', `p${String(i).padStart(4, '0')}`, i + 1, { filler: 'x'.repeat(1000) }),
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
