/**
 * The real Reflector filling a WatchCache from the fixture apiserver: the cache then answers a
 * LIST at its RV and a watch resumed from that RV with the apiserver's exact bytes, and a
 * watch started before the changes sees each of them once, in RV order.
 */

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { itemsBodyChunks } from '../../src/apimachinery/list-items.ts';
import { everythingFields, everythingLabels } from '../../src/apimachinery/selectors.ts';
import { encodeList } from '../../src/cache/encoding.ts';
import { WatchCache } from '../../src/cache/watch-cache.ts';
import { ResourceSet } from '../../src/resources/resource-set.ts';
import { createUpstream, type Upstream } from '../../src/upstream/index.ts';
import { type Fixture, sharedFixture } from '../fixture/index.ts';
import { drain } from '../support/watch-drain.ts';

describe('reflector → watch cache against the real apiserver', () => {
  let f: Fixture;
  let agent: Agent;
  let upstream: Upstream;
  let set: ResourceSet;
  let cache: WatchCache | undefined;
  let ns: string;

  const get = async (path: string) => {
    const res = await request(`${f.server}${path}`, {
      dispatcher: agent,
      headers: { authorization: `Bearer ${f.tokens.admin}`, accept: 'application/json' },
    });
    assert.equal(res.statusCode, 200, path);
    return Buffer.from(await res.body.arrayBuffer()).toString();
  };

  /** Lines of a direct watch, up to `n`. */
  const directWatch = async (path: string, n: number): Promise<string[]> => {
    const ac = new AbortController();
    const res = await request(`${f.server}${path}`, {
      dispatcher: agent,
      signal: ac.signal,
      headers: { authorization: `Bearer ${f.tokens.admin}`, accept: 'application/json' },
    });
    let buf = '';
    const lines: string[] = [];
    try {
      for await (const chunk of res.body) {
        buf += String(chunk);
        for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
          lines.push(buf.slice(0, i + 1));
          buf = buf.slice(i + 1);
        }
        if (lines.length >= n) break;
      }
    } finally {
      ac.abort();
    }
    return lines.slice(0, n);
  };

  const apply = async (name: string, v: string) => {
    const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { v } };
    const r = await f.kubectl(['apply', '-n', ns, '-o', 'jsonpath={.metadata.resourceVersion}', '-f', '-'], {
      input: JSON.stringify(cm),
    });
    assert.equal(r.code, 0, r.stderr);
    return BigInt(r.stdout);
  };

  before(async () => {
    f = await sharedFixture();
    agent = new Agent({ connect: { ca: f.caPem } });
    ns = await f.newNamespace('cache-refl');
    upstream = await createUpstream({ kubeconfig: f.kubeconfigs.adminToken });
    set = new ResourceSet({
      upstream,
      resources: ['configmaps'],
      sinkFor: (info) => {
        cache = new WatchCache({ resource: info });
        return cache;
      },
    });
    set.start();
    for (let i = 0; i < 100 && !cache; i++) await new Promise((r) => setTimeout(r, 100));
    assert.ok(cache, 'discovery gave the reflector a sink');
    assert.equal(await cache.waitSynced(30_000), true);
  });

  after(async () => {
    await set?.close();
    await upstream?.close();
    await agent?.close();
  });

  test('LIST, resumed watch and a live watcher equal the apiserver', async () => {
    const c = cache!;
    const rv1 = await apply('a', '1');
    assert.equal(await c.waitUntilFresh(rv1, 60_000), true);
    const live = c.watch({
      namespace: ns,
      labelSelector: everythingLabels,
      fieldSelector: everythingFields,
      resourceVersion: rv1,
    });
    const from = c.resourceVersion();
    await apply('b', '1');
    await apply('a', '2');
    const del = await f.kubectl(['delete', '-n', ns, 'configmap', 'b']);
    assert.equal(del.code, 0, del.stderr);
    const rv2 = await apply('c', '1');
    assert.equal(await c.waitUntilFresh(rv2, 60_000), true);

    const base = `/api/v1/namespaces/${ns}/configmaps`;
    const at = c.resourceVersion();
    const mine = Buffer.concat(
      itemsBodyChunks(
        encodeList(
          c.resource,
          c.list({ namespace: ns, labelSelector: everythingLabels, fieldSelector: everythingFields }),
        ),
      ),
    ).toString();
    assert.equal(mine, await get(`${base}?resourceVersion=${at}&resourceVersionMatch=Exact`));

    const theirs = await directWatch(`${base}?watch=1&resourceVersion=${from}`, 4);
    const resumed = c.watch({
      namespace: ns,
      labelSelector: everythingLabels,
      fieldSelector: everythingFields,
      resourceVersion: from,
    });
    assert.deepEqual(drain(resumed), theirs);
    assert.deepEqual(
      theirs.map((l) => (JSON.parse(l) as { type: string }).type),
      ['ADDED', 'MODIFIED', 'DELETED', 'ADDED'],
    );
    assert.deepEqual(drain(live), theirs);
    live.close();
    resumed.close();
  });
});
