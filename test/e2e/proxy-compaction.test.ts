/**
 * Reads at a revision etcd has compacted, through the proxy and directly, against a private
 * apiserver compacting every 20 s (`--etcd-compaction-interval`): the upstream e2e spec
 * `test/e2e/apimachinery/chunking.go` "should support continue listing from the last key if the
 * original version has been compacted away, though the list is inconsistent", side by side. A
 * paginated list's first page, writes, compaction; then its continue token gets 410 Expired with
 * an "inconsistent" continue token (`{"rv":-1,"start":…}`), the list continued with that token
 * equals the apiserver's, and an Exact read at the compacted RV gets the apiserver's 410. Before
 * the compaction floor (cache/compaction-floor.ts) the proxy answered the continue token and the
 * Exact read from its window with 200 for as long as the RV stayed in it.
 *
 * The apiserver itself serves a compacted RV for up to 15 s (its watch cache polls etcd's
 * compacted revision every 15 s), the proxy's floor trails it by up to one poll more: the waits
 * allow for both.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { type Fixture, startFixture } from '../fixture/index.ts';
import { eventually } from '../support/eventually.ts';
import { type InProcessProxy, startProxy } from '../support/proxy.ts';

interface ListBody {
  kind: string;
  metadata: { resourceVersion?: string; continue?: string };
  items?: { metadata: { name: string } }[];
  code?: number;
  reason?: string;
  message?: string;
}

interface Answer {
  status: number;
  /** The apiserver sets `Audit-Id`; the cache does not. */
  fromCache: boolean;
  body: ListBody;
}

/** The inconsistent-continue message of `k8s.io/apiserver` `pkg/storage/etcd3/errors.go`. */
const INCONSISTENT =
  'The provided continue parameter is too old to display a consistent list result. You can start a ' +
  'new list without the continue parameter, or use the continue token in this response to retrieve ' +
  'the remainder of the results. Continuing with the provided token results in an inconsistent list ' +
  '- objects that were created, modified, or deleted between the time the first chunk was returned ' +
  'and now may show up in the list.';

const decodeToken = (t: string): unknown => JSON.parse(Buffer.from(t, 'base64url').toString('utf8'));

describe('reads at a compacted revision: proxy vs apiserver (chunking.go compaction spec)', () => {
  let f: Fixture;
  let p: InProcessProxy;
  let direct: Agent;
  let ns: string;

  before(async () => {
    f = await startFixture({ apiserverFlags: ['--etcd-compaction-interval=20s'] });
    direct = new Agent({ connect: { ca: f.caPem } });
    ns = await f.newNamespace('compaction');
    const items = Array.from({ length: 20 }, (_, i) => ({
      apiVersion: 'v1',
      kind: 'PodTemplate',
      metadata: { name: `tpl-${String(i).padStart(2, '0')}` },
      template: { spec: { containers: [{ name: 'c', image: 'busybox' }] } },
    }));
    const r = await f.kubectl(['apply', '-n', ns, '-f', '-'], {
      input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items }),
    });
    assert.equal(r.code, 0, r.stderr);
    p = await startProxy(f, { resources: 'podtemplates' });
  });
  after(async () => {
    await p?.stop();
    await direct?.close();
    await f?.stop();
  });

  const get = async (viaProxy: boolean, query: string): Promise<Answer> => {
    const base = viaProxy ? p.url : f.server;
    const res = await request(`${base}/api/v1/namespaces/${ns}/podtemplates?${query}`, {
      headers: { authorization: `Bearer ${f.tokens.admin}`, accept: 'application/json' },
      ...(viaProxy ? {} : { dispatcher: direct }),
    });
    const body = (await res.body.json()) as ListBody;
    return { status: res.statusCode, fromCache: res.headers['audit-id'] === undefined, body };
  };
  const names = (b: ListBody) => (b.items ?? []).map((i) => i.metadata.name);
  /** Every page from `first` on, following continue tokens; the names and each page's RV. */
  const walk = async (viaProxy: boolean, first: string) => {
    const all: string[] = [];
    const rvs: string[] = [];
    let cont = first;
    for (let i = 0; cont !== '' && i < 20; i++) {
      const r = await get(viaProxy, `limit=5&continue=${encodeURIComponent(cont)}`);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      all.push(...names(r.body));
      rvs.push(r.body.metadata.resourceVersion ?? '');
      cont = r.body.metadata.continue ?? '';
    }
    return { all, rvs };
  };

  test('the continue token of a compacted page: 410 with the inconsistent token, then the same list; an Exact read: 410', async (t) => {
    // The first page of each side (the proxy's from its cache, at its current RV).
    const t0 = Date.now();
    const first = { proxy: await get(true, 'limit=5'), direct: await get(false, 'limit=5') };
    assert.equal(first.proxy.fromCache, true, 'the first page comes from the cache');
    for (const side of [first.proxy, first.direct]) {
      assert.equal(side.status, 200);
      assert.deepEqual(names(side.body), ['tpl-00', 'tpl-01', 'tpl-02', 'tpl-03', 'tpl-04']);
      assert.ok(side.body.metadata.continue);
    }
    const token = {
      proxy: first.proxy.body.metadata.continue!,
      direct: first.direct.body.metadata.continue!,
    };
    const firstRV = first.proxy.body.metadata.resourceVersion!;
    // Before compaction the proxy's token is served from the cache.
    const early = await get(true, `limit=5&continue=${encodeURIComponent(token.proxy)}`);
    assert.equal(early.status, 200);
    assert.equal(early.fromCache, true);
    assert.deepEqual(names(early.body), ['tpl-05', 'tpl-06', 'tpl-07', 'tpl-08', 'tpl-09']);

    // Writes after the first page: the inconsistent list shows them.
    const w = await f.kubectl(['-n', ns, 'delete', 'podtemplate', 'tpl-07', 'tpl-12']);
    assert.equal(w.code, 0, w.stderr);
    const added = await f.kubectl(['-n', ns, 'create', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'v1',
        kind: 'PodTemplate',
        metadata: { name: 'tpl-10a' },
        template: { spec: { containers: [{ name: 'c', image: 'busybox' }] } },
      }),
    });
    assert.equal(added.code, 0, added.stderr);

    // Compaction: the apiserver answers the continue token 410 (within its 15 s poll), the
    // proxy too (within one more poll). Each side's own token, then the proxy with the
    // apiserver's token too (tokens are interchangeable).
    const expired = async (viaProxy: boolean, tok: string) => {
      const r = await eventually(
        `${viaProxy ? 'proxy' : 'apiserver'}: continue at ${firstRV} gets 410`,
        150_000,
        async () => {
          const r = await get(viaProxy, `limit=5&continue=${encodeURIComponent(tok)}`);
          return r.status === 410 ? r : undefined;
        },
      );
      t.diagnostic(`${viaProxy ? 'proxy' : 'apiserver'}: 410 ${Date.now() - t0} ms after the first page`);
      return r;
    };
    const [direct410, proxy410] = await Promise.all([
      expired(false, token.direct),
      expired(true, token.proxy),
    ]);
    const gone = { direct: direct410, proxy: proxy410 };
    const crossed = await expired(true, token.direct);
    for (const r of [gone.direct, gone.proxy, crossed]) {
      assert.equal(r.fromCache, false, 'the 410 is the apiserver’s');
      assert.deepEqual(
        { kind: r.body.kind, code: r.body.code, reason: r.body.reason, message: r.body.message },
        { kind: 'Status', code: 410, reason: 'Expired', message: INCONSISTENT },
      );
      assert.deepEqual(decodeToken(r.body.metadata.continue ?? ''), {
        v: 'meta.k8s.io/v1',
        rv: -1,
        // The apiserver's inconsistent token carries the key without its leading slash.
        start: 'tpl-04\u0000',
      });
    }
    assert.deepEqual(gone.proxy.body, gone.direct.body);

    // The inconsistent list: the remainder at the latest state, the same both ways.
    const inconsistent = gone.proxy.body.metadata.continue!;
    const rest = { proxy: await walk(true, inconsistent), direct: await walk(false, inconsistent) };
    const want = ['05', '06', '08', '09', '10', '10a', '11', '13', '14', '15', '16', '17', '18', '19'];
    assert.deepEqual(
      rest.direct.all,
      want.map((n) => `tpl-${n}`),
    );
    assert.deepEqual(rest.proxy.all, rest.direct.all);
    assert.notEqual(rest.proxy.rvs[0], firstRV);

    // An Exact read at the compacted RV: the apiserver's 410, both ways.
    const exact = `resourceVersion=${firstRV}&resourceVersionMatch=Exact`;
    const exactDirect = await get(false, exact);
    const exactProxy = await get(true, exact);
    assert.equal(exactProxy.fromCache, false);
    for (const r of [exactDirect, exactProxy])
      assert.deepEqual(
        { status: r.status, reason: r.body.reason, message: r.body.message },
        { status: 410, reason: 'Expired', message: 'The resourceVersion for the provided list is too old.' },
      );
    // The legacy exact read (`limit` with an RV): the same.
    const legacy = await get(true, `resourceVersion=${firstRV}&limit=5`);
    assert.equal(legacy.status, 410);
    assert.equal(legacy.fromCache, false);

    // The proxy counted them as `compacted`.
    const metrics = await (await request(`${p.ops}/metrics`)).body.text();
    const compacted = metrics
      .split('\n')
      .filter((l) => l.startsWith('kube_cache_proxy_requests_total{') && l.includes('reason="compacted"'));
    assert.ok(compacted.length > 0, 'requests counted with reason="compacted"');
  });
});
