/**
 * Edges of the HTTP server, each request sent to the fixture apiserver and to the proxy, the
 * answers compared: `OPTIONS *` (answered by Go's net/http itself), other methods with the
 * target `*` (the apiserver's 404 or 403: sent upstream as `/*`), `OPTIONS /` and `/api`, an
 * `Accept` with a `charset` (served from the cache),
 * names Go's `%q` escapes (controls, right-to-left marks, invalid UTF-8) in a cache 404, and how
 * long a connection that never sends a byte stays open.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { type Fixture, sharedFixture } from '../fixture/index.ts';
import { eventually } from '../support/eventually.ts';
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

  test("GET, POST, DELETE, HEAD * (asterisk target): the apiserver's 404 or 403 per identity", async () => {
    const ids = {
      admin: f.tokens.admin,
      limited: f.tokens.limited,
      nobody: f.tokens.none,
      invalid: 'not-a-valid-token',
    };
    const seen = new Set<number>();
    for (const method of ['GET', 'POST', 'DELETE', 'HEAD']) {
      for (const [who, token] of Object.entries(ids)) {
        const { d, p } = await both(
          `${method} * HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nUser-Agent: e2e`,
        );
        seen.add(d.status);
        const without = (a: RawAnswer) => {
          const c = comparable(a);
          return { ...c, headers: c.headers.filter(([k]) => k !== 'audit-id') };
        };
        assert.deepEqual(without(p), without(d), `${method} ${who}`);
      }
    }
    // The admin's 404 and the others' 403 (401 for the invalid token) were all met.
    assert.deepEqual([...seen].sort(), [401, 403, 404]);
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

  test('Accept: application/json with a charset: the apiserver ignores the parameter, the cache answers the same', async () => {
    const headers = { authorization: `Bearer ${f.tokens.admin}`, 'user-agent': 'e2e' };
    const made = await request(`${f.server}/api/v1/namespaces/${ns}/configmaps`, {
      dispatcher: agent,
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ metadata: { name: 'charset' }, data: { a: 'é' } }),
    });
    assert.equal(made.statusCode, 201, await made.body.text());
    for (const accept of ['application/json;charset=utf-8', 'application/json; charset=UTF-8']) {
      for (const path of [
        `/api/v1/namespaces/${ns}/configmaps?resourceVersion=0`,
        `/api/v1/namespaces/${ns}/configmaps/charset?resourceVersion=0`,
      ]) {
        // The cache must have the object first (RV=0 reads are answered from what it has).
        await eventually(`the cache has ${path}`, 10_000, async () => {
          const r = await request(`${proxy.url}${path}`, { headers });
          return (await r.body.text()).includes('"charset"') ? true : undefined;
        });
        const d = await request(`${f.server}${path}`, { dispatcher: agent, headers: { ...headers, accept } });
        const p = await request(`${proxy.url}${path}`, { headers: { ...headers, accept } });
        const [db, pb] = [await d.body.text(), await p.body.text()];
        assert.equal(p.statusCode, d.statusCode, `${accept} ${path}`);
        assert.equal(d.statusCode, 200);
        assert.equal(p.headers['content-type'], d.headers['content-type']);
        assert.equal(d.headers['content-type'], 'application/json');
        const shape = (b: string) => {
          const o = JSON.parse(b);
          if (o.metadata?.resourceVersion && o.items) delete o.metadata.resourceVersion;
          return o;
        };
        assert.deepEqual(shape(pb), shape(db), `${accept} ${path}`);
        assert.equal(p.headers['audit-id'], undefined, `${accept} ${path}: answered from the cache`);
      }
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
