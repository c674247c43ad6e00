/**
 * Issue 32 attack (ha4): a Table watch-list (`sendInitialEvents=true&resourceVersionMatch=NotOlderThan
 * &allowWatchBookmarks=true`) through the proxy, side by side with the fixture apiserver, for each
 * `includeObject` (None, Metadata, Object) and Table version: the initial ADDED rows and the
 * initial-events-end BOOKMARK's line equal the apiserver's (ages and resourceVersions masked: an
 * RV="" watch-list ends at the cache's RV, the apiserver's at etcd's, docs/design.md Consistency).
 * Under `Object` the apiserver prints the bookmark object itself (kind and apiVersion of the
 * resource), under None and Metadata a PartialObjectMetadata with the annotation.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { type Fixture, sharedFixture } from '../fixture/index.ts';
import { type InProcessProxy, startProxy } from '../support/proxy.ts';

const TABLE = (v: string) => `application/json;as=Table;v=${v};g=meta.k8s.io,application/json`;

/** The event lines but timed bookmarks, with ages and resourceVersions masked. */
function lines(body: string): string[] {
  return body
    .split('\n')
    .filter((l) => l !== '' && !(l.includes('"BOOKMARK"') && !l.includes('initial-events-end')))
    .map((l) =>
      l
        .replace(/"resourceVersion":"\d+"/g, '"resourceVersion":"RV"')
        .replace(/"creationTimestamp":"[^"]+"|"time":"[^"]+"/g, '"T"')
        .replace(/"\d+[smhdy][0-9smhd]*"/g, '"AGE"'),
    );
}

describe('attack: Table watch-list, each includeObject, equals the apiserver', () => {
  let f: Fixture;
  let agent: Agent;
  let proxy: InProcessProxy;
  let ns: string;
  const get = async (base: string, path: string, accept: string) => {
    const r = await request(`${base}${path}`, {
      ...(base.startsWith('https:') ? { dispatcher: agent } : {}),
      headers: { authorization: `Bearer ${f.tokens.admin}`, accept },
    });
    return { status: r.statusCode, headers: r.headers, body: await r.body.text() };
  };

  before(async () => {
    f = await sharedFixture();
    agent = new Agent({ connect: { ca: f.caPem } });
    ns = await f.newNamespace('table-wl');
    const post = async (path: string, body: unknown) => {
      const r = await request(`${f.server}${path}`, {
        dispatcher: agent,
        method: 'POST',
        headers: { authorization: `Bearer ${f.tokens.admin}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      assert.equal(r.statusCode, 201, await r.body.text());
      await r.body.dump();
    };
    await post(`/api/v1/namespaces/${ns}/configmaps`, {
      metadata: { name: 'a', labels: { t: 'x' } },
      data: { k: '1' },
    });
    // No controller manager in the fixture: the pod's service account is created here.
    await post(`/api/v1/namespaces/${ns}/serviceaccounts`, { metadata: { name: 'default' } });
    await post(`/api/v1/namespaces/${ns}/pods`, {
      metadata: { name: 'p', labels: { t: 'x' } },
      spec: { containers: [{ name: 'c', image: 'busybox' }] },
    });
    proxy = await startProxy(f, { resources: 'configmaps,pods' });
  });
  after(async () => {
    await proxy?.stop();
    await agent?.close();
  });

  for (const resource of ['configmaps', 'pods']) {
    for (const include of ['None', 'Metadata', 'Object']) {
      test(`${resource} includeObject=${include}`, async () => {
        for (const v of ['v1', 'v1beta1']) {
          for (const sel of ['', '&labelSelector=t%3Dnone']) {
            const path = `/api/v1/namespaces/${ns}/${resource}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1&includeObject=${include}${sel}`;
            const [a, d] = await Promise.all([get(proxy.url, path, TABLE(v)), get(f.server, path, TABLE(v))]);
            assert.equal(a.headers['audit-id'], undefined, `${path}: from the cache`);
            assert.equal(a.status, 200);
            assert.equal(a.headers['content-type'], d.headers['content-type']);
            const [la, ld] = [lines(a.body), lines(d.body)];
            assert.equal(
              la.filter((l) => l.includes('initial-events-end')).length,
              1,
              `${v}${sel}: one end bookmark`,
            );
            assert.deepEqual(la, ld, `${v}${sel}`);
          }
        }
      });
    }
  }
});
