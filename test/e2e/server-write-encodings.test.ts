/**
 * Read-your-writes when the apiserver's write answer is not plain JSON (issue 11 item 3): a
 * protobuf answer (`Accept: application/vnd.kubernetes.protobuf`, client-go's default for
 * built-in kinds) and a gzip answer (over 128 KiB, for a client that accepts gzip, as Go clients
 * do implicitly). Each write is made through the proxy and read back through it at once; the
 * RV the proxy read from the answer is checked against the apiserver's own JSON answer.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { Agent, request } from 'undici';
import { decodeProtobufMeta } from '../../src/apimachinery/protobuf-meta.ts';
import { type Fixture, sharedFixture } from '../fixture/index.ts';
import { type InProcessProxy, startProxy } from '../support/proxy.ts';

describe('issue 11 item 3: read-your-writes with protobuf and gzip write answers', () => {
  let f: Fixture;
  let proxy: InProcessProxy;
  let ns: string;
  let auth: Record<string, string>;
  let direct: Agent;

  before(async () => {
    f = await sharedFixture();
    ns = await f.newNamespace('wenc');
    auth = { authorization: `Bearer ${f.tokens.admin}`, 'user-agent': 'e2e' };
    direct = new Agent({ connect: { ca: f.caPem } });
    proxy = await startProxy(f, { resources: 'configmaps' });
  });
  after(async () => {
    await proxy?.stop();
    await direct?.close();
  });

  /** GET through the proxy right after the write, and directly from the apiserver. */
  const readBack = async (name: string) => {
    const path = `/api/v1/namespaces/${ns}/configmaps/${name}`;
    const viaProxy = await request(`${proxy.url}${path}`, { headers: auth });
    const body = await viaProxy.body.text();
    assert.equal(
      viaProxy.statusCode,
      200,
      `${name} not visible through the proxy right after its write: ${body}`,
    );
    const d = await request(`${f.server}${path}`, { headers: auth, dispatcher: direct });
    const fromApiserver = (await d.body.json()) as { metadata: { resourceVersion: string } };
    return {
      proxyRV: (JSON.parse(body) as { metadata: { resourceVersion: string } }).metadata.resourceVersion,
      apiserverRV: fromApiserver.metadata.resourceVersion,
    };
  };

  test('protobuf answers: the RV read from the envelope is the object RV; GET at once sees the write', async () => {
    for (let i = 0; i < 10; i++) {
      const name = `pb-${i}`;
      const c = await request(`${proxy.url}/api/v1/namespaces/${ns}/configmaps`, {
        method: 'POST',
        headers: {
          ...auth,
          'content-type': 'application/json',
          accept: 'application/vnd.kubernetes.protobuf',
        },
        body: JSON.stringify({ metadata: { name }, data: { i: String(i) } }),
      });
      assert.equal(c.statusCode, 201);
      assert.equal(c.headers['content-type'], 'application/vnd.kubernetes.protobuf');
      const meta = decodeProtobufMeta(Buffer.from(await c.body.arrayBuffer()));
      const { proxyRV, apiserverRV } = await readBack(name);
      // Side by side: what the reader got from the apiserver's protobuf bytes is its JSON RV.
      assert.equal(meta?.kind, 'ConfigMap');
      assert.equal(meta?.metadata?.name, name);
      assert.equal(meta?.metadata?.resourceVersion, apiserverRV);
      assert.equal(proxyRV, apiserverRV);
    }
  });

  test('gzip answers (an object over 128 KiB): GET at once sees the write', async () => {
    for (let i = 0; i < 5; i++) {
      const name = `gz-${i}`;
      const c = await request(`${proxy.url}/api/v1/namespaces/${ns}/configmaps`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json', 'accept-encoding': 'gzip' },
        body: JSON.stringify({ metadata: { name }, data: { big: 'x'.repeat(200 * 1024) } }),
      });
      assert.equal(c.statusCode, 201);
      // The apiserver gzips answers over 128 KiB for clients that accept it.
      assert.equal(c.headers['content-encoding'], 'gzip');
      const created = JSON.parse(gunzipSync(Buffer.from(await c.body.arrayBuffer())).toString()) as {
        metadata: { resourceVersion: string };
      };
      const { proxyRV, apiserverRV } = await readBack(name);
      assert.equal(created.metadata.resourceVersion, apiserverRV);
      assert.equal(proxyRV, apiserverRV);
    }
  });
});
