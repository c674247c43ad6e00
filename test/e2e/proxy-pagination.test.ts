/**
 * Paginated LISTs (`limit` / `continue`) served from the cache, side by side with the real
 * apiserver: same pages, same `remainingItemCount`, and continue tokens interchangeable in both
 * directions (the cache writes the apiserver's own token format, pinned at a snapshot RV).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { type Fixture, sharedFixture } from '../fixture/index.ts';
import { type InProcessProxy, startProxy } from '../support/proxy.ts';

interface Page {
  metadata: { resourceVersion: string; continue?: string; remainingItemCount?: number };
  items: { metadata: { name: string } }[];
}

describe('paginated LIST from the cache vs the apiserver', () => {
  let f: Fixture;
  let p: InProcessProxy;
  let ns: string;
  let direct: Agent;
  const names = Array.from({ length: 25 }, (_, i) => `page-${String(i).padStart(2, '0')}`);

  before(async () => {
    f = await sharedFixture();
    direct = new Agent({ connect: { ca: f.caPem } });
    ns = await f.newNamespace('paging');
    const items = names.map((name) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name } }));
    const r = await f.kubectl(['apply', '-n', ns, '-f', '-'], {
      input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items }),
    });
    assert.equal(r.code, 0, r.stderr);
    p = await startProxy(f, { resources: 'configmaps' });
  });
  after(async () => {
    await p?.stop();
    await direct?.close();
  });

  const get = async (base: string, query: string, viaProxy: boolean) => {
    const res = await request(`${base}/api/v1/namespaces/${ns}/configmaps?${query}`, {
      headers: { authorization: `Bearer ${f.tokens.admin}`, accept: 'application/json' },
      ...(viaProxy ? {} : { dispatcher: direct }),
    });
    const body = (await res.body.json()) as Page;
    return { status: res.statusCode, fromCache: res.headers['audit-id'] === undefined, body };
  };
  const pageNames = (b: Page) => b.items.map((i) => i.metadata.name);

  test('limit=10 pages: same names, remainingItemCount and end, served from the cache', async () => {
    const walk = async (base: string, viaProxy: boolean) => {
      const pages: { names: string[]; remaining: number | undefined; cache: boolean }[] = [];
      let cont = '';
      do {
        const r = await get(base, `limit=10${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`, viaProxy);
        assert.equal(r.status, 200);
        pages.push({
          names: pageNames(r.body),
          remaining: r.body.metadata.remainingItemCount,
          cache: r.fromCache,
        });
        cont = r.body.metadata.continue ?? '';
      } while (cont && pages.length < 10);
      return pages;
    };
    const viaProxy = await walk(p.url, true);
    const viaApiserver = await walk(f.server, false);
    assert.deepEqual(
      viaProxy.map(({ names: n, remaining }) => ({ n, remaining })),
      viaApiserver.map(({ names: n, remaining }) => ({ n, remaining })),
    );
    assert.deepEqual(
      viaProxy.map((x) => x.names.length),
      [10, 10, 5],
    );
    assert.deepEqual(
      viaProxy.map((x) => x.remaining),
      [15, 5, undefined],
    );
    assert.ok(
      viaProxy.every((x) => x.cache),
      'every page answered by the cache',
    );
    assert.ok(viaApiserver.every((x) => !x.cache));
  });

  test("the proxy's continue token works on the apiserver, and the apiserver's on the proxy", async () => {
    const fromProxy = await get(p.url, 'limit=10', true);
    const tokP = fromProxy.body.metadata.continue!;
    const onApiserver = await get(f.server, `limit=10&continue=${encodeURIComponent(tokP)}`, false);
    assert.equal(onApiserver.status, 200);
    assert.deepEqual(pageNames(onApiserver.body), names.slice(10, 20));

    const fromApiserver = await get(f.server, 'limit=10', false);
    const tokA = fromApiserver.body.metadata.continue!;
    const onProxy = await get(p.url, `limit=10&continue=${encodeURIComponent(tokA)}`, true);
    assert.equal(onProxy.status, 200);
    assert.deepEqual(pageNames(onProxy.body), names.slice(10, 20));
    assert.equal(onProxy.body.metadata.resourceVersion, fromApiserver.body.metadata.resourceVersion);
  });

  test('a page keeps its snapshot: an object created between pages is not in the next page', async () => {
    const first = await get(p.url, 'limit=10', true);
    const created = await f.kubectl(['create', 'configmap', 'page-10a', '-n', ns]);
    assert.equal(created.code, 0, created.stderr);
    // Wait until the cache has the new object, then continue the old snapshot.
    for (let i = 0; i < 100; i++) {
      const all = await get(p.url, 'resourceVersion=0', true);
      if (pageNames(all.body).includes('page-10a')) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const next = await get(
      p.url,
      `limit=10&continue=${encodeURIComponent(first.body.metadata.continue!)}`,
      true,
    );
    assert.equal(next.status, 200);
    assert.deepEqual(pageNames(next.body), names.slice(10, 20));
    assert.equal(next.body.metadata.resourceVersion, first.body.metadata.resourceVersion);
  });
});
