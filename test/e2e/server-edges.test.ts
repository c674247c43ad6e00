/**
 * Edges of the HTTP server, each request sent to the fixture apiserver and to the proxy, the
 * answers compared: `OPTIONS *` (answered by Go's net/http itself), `OPTIONS /` and `/api`,
 * names Go's `%q` escapes (controls, right-to-left marks, invalid UTF-8) in a cache 404, and how
 * long a connection that never sends a byte stays open.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { type Fixture, sharedFixture } from '../fixture/index.ts';
import { type InProcessProxy, startProxy } from '../support/proxy.ts';
import { type RawAnswer, rawRequest } from '../support/raw-http.ts';

/** Headers that are the connection's, not the answer's: Node adds keep-alive ones Go omits. */
const FRAMING = new Set(['date', 'keep-alive']);

/** An answer without its framing headers (`Connection: close` is kept: Go sends it on purpose). */
function comparable(a: RawAnswer) {
  return {
    status: a.status,
    headers: a.headers.filter(
      ([k, v]) => !FRAMING.has(k) && !(k === 'connection' && v.toLowerCase() === 'keep-alive'),
    ),
    body: a.body,
  };
}

describe('server edges: proxy answer = apiserver answer', () => {
  let f: Fixture;
  let proxy: InProcessProxy;
  let agent: Agent;
  let ns: string;

  before(async () => {
    f = await sharedFixture();
    agent = new Agent({ connect: { ca: f.caPem } });
    ns = await f.newNamespace('edges');
    proxy = await startProxy(f, { resources: 'configmaps' });
  });
  after(async () => {
    await proxy?.stop();
    await agent?.close();
  });

  const direct = { url: '', ca: '' as string | Buffer };
  const both = async (head: string, body = '') => {
    direct.url = f.server;
    direct.ca = f.caPem;
    const d = await rawRequest(direct, head, body);
    const p = await rawRequest({ url: proxy.url }, head, body);
    return { d, p };
  };

  test('OPTIONS * is 200 with Content-Length: 0 and nothing else, without credentials', async () => {
    const { d, p } = await both('OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1');
    assert.equal(d.status, 200);
    assert.deepEqual(comparable(p), comparable(d));
  });

  test('OPTIONS * with a body: up to 4 KiB read, a longer one closes the connection', async () => {
    for (const n of [1, 4096, 4097, 10_000]) {
      const { d, p } = await both('OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1', 'a'.repeat(n));
      assert.deepEqual(comparable(p), comparable(d), `${n} bytes`);
    }
  });

  test('OPTIONS / and OPTIONS /api: the apiserver answers them, through the proxy too', async () => {
    for (const path of ['/', '/api']) {
      const auth = `Authorization: Bearer ${f.tokens.admin}`;
      const { d, p } = await both(
        `OPTIONS ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}\r\nUser-Agent: e2e`,
      );
      assert.equal(p.status, d.status, path);
      const type = (a: RawAnswer) => a.headers.find(([k]) => k === 'content-type')?.[1];
      assert.equal(type(p), type(d), path);
      // Both answer chunked or by length as each likes: compare the decoded JSON.
      const json = (a: RawAnswer) =>
        JSON.parse(a.body.slice(a.body.indexOf('{'), a.body.lastIndexOf('}') + 1));
      assert.deepEqual(json(p), json(d), path);
    }
  });

  test("a cache 404 quotes the name as Go's %q (controls, RTL marks, invalid UTF-8)", async () => {
    const names = [
      'a%01b', // \x01
      'a%E2%80%AEb', // U+202E RIGHT-TO-LEFT OVERRIDE: \u202e
      'a%7Fb', // DEL: \x7f
      'a%C2%A0b', // NO-BREAK SPACE: \u00a0
      'a%F3%A0%80%81b', // U+E0001 LANGUAGE TAG: \U000e0001
      'a%09b', // \t
      'a%22b%5Cc', // " and \
      'a%C3%A9b', // é: printable, as it is
      'a%FFb', // invalid UTF-8: \xff (passed upstream: fastify's router refused it with its own 400)
    ];
    const headers = { authorization: `Bearer ${f.tokens.admin}`, 'user-agent': 'e2e' };
    for (const name of names) {
      const path = `/api/v1/namespaces/${ns}/configmaps/${name}?resourceVersion=0`;
      const d = await request(`${f.server}${path}`, { dispatcher: agent, headers });
      const p = await request(`${proxy.url}${path}`, { headers });
      const [db, pb] = [await d.body.text(), await p.body.text()];
      assert.equal(p.statusCode, d.statusCode, name);
      assert.equal(d.statusCode, 404, name);
      assert.deepEqual(JSON.parse(pb), JSON.parse(db), name);
      if (name !== 'a%FFb')
        assert.equal(p.headers['audit-id'], undefined, `${name}: answered from the cache`);
    }
  });
});
