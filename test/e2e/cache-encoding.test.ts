/**
 * The watch cache's wire bytes against the real apiserver: a WatchCache filled from a direct
 * watch-list stream must answer LIST, the watch-list burst (ADDED + initial-events-end
 * BOOKMARK) and resumed watches (including selector transitions) with exactly the bytes the
 * apiserver sends for the same request; and selector errors must carry the same messages.
 */

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { decodeContinue } from '../../src/apimachinery/continue-token.ts';
import type { ResourceInfo } from '../../src/apimachinery/gvr.ts';
import { itemsBodyChunks } from '../../src/apimachinery/list-items.ts';
import type { KubeObject, UpstreamObject } from '../../src/apimachinery/object.ts';
import {
  everythingFields,
  everythingLabels,
  parseFieldSelector,
  parseLabelSelector,
} from '../../src/apimachinery/selectors.ts';
import { StatusError } from '../../src/apimachinery/status.ts';
import { encodeList } from '../../src/cache/encoding.ts';
import { WatchCache } from '../../src/cache/watch-cache.ts';
import { type Fixture, sharedFixture } from '../fixture/index.ts';
import { drain } from '../support/watch-drain.ts';

const CONFIGMAPS: ResourceInfo = {
  gvr: { group: '', version: 'v1', resource: 'configmaps' },
  kind: 'ConfigMap',
  listKind: 'ConfigMapList',
  apiVersion: 'v1',
  namespaced: true,
  verbs: ['list', 'watch'],
  builtIn: true,
};
const PODS: ResourceInfo = {
  ...CONFIGMAPS,
  gvr: { group: '', version: 'v1', resource: 'pods' },
  kind: 'Pod',
  listKind: 'PodList',
};

/** Lines of a streaming response, one at a time. */
class Lines {
  #buf = '';
  #lines: string[] = [];
  #waiter: (() => void) | undefined;
  #ended = false;
  constructor(body: AsyncIterable<Buffer>) {
    void (async () => {
      try {
        for await (const chunk of body) {
          this.#buf += chunk.toString();
          let i = this.#buf.indexOf('\n');
          while (i >= 0) {
            this.#lines.push(this.#buf.slice(0, i + 1));
            this.#buf = this.#buf.slice(i + 1);
            i = this.#buf.indexOf('\n');
          }
          this.#waiter?.();
        }
      } catch {}
      this.#ended = true;
      this.#waiter?.();
    })();
  }
  async next(timeoutMs = 10_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    while (this.#lines.length === 0) {
      if (this.#ended) throw new Error('stream ended');
      if (Date.now() > deadline) throw new Error('no line within timeout');
      await new Promise<void>((r) => {
        this.#waiter = r;
        setTimeout(r, 100);
      });
    }
    return this.#lines.shift()!;
  }
}

function objectOf(line: string): { type: string; raw: Buffer; object: KubeObject } {
  const m = /^\{"type":"([A-Z]+)","object":/.exec(line);
  assert.ok(m, line);
  const raw = Buffer.from(line.slice(m[0].length, line.trimEnd().length - 1));
  return { type: m[1]!, raw, object: JSON.parse(String(raw)) as KubeObject };
}

describe('watch cache bytes equal the apiserver', () => {
  let f: Fixture;
  let agent: Agent;
  let ns: string;
  const aborts: AbortController[] = [];

  const get = async (path: string) => {
    const res = await request(`${f.server}${path}`, {
      dispatcher: agent,
      headers: { authorization: `Bearer ${f.tokens.admin}`, accept: 'application/json' },
    });
    return { status: res.statusCode, body: Buffer.from(await res.body.arrayBuffer()) };
  };

  const watch = async (path: string): Promise<Lines> => {
    const ac = new AbortController();
    aborts.push(ac);
    const res = await request(`${f.server}${path}`, {
      dispatcher: agent,
      signal: ac.signal,
      headers: { authorization: `Bearer ${f.tokens.admin}`, accept: 'application/json' },
    });
    assert.equal(res.statusCode, 200);
    return new Lines(res.body);
  };

  const kubectl = async (args: string[], input?: string) => {
    const r = await f.kubectl(args, input === undefined ? {} : { input });
    assert.equal(r.code, 0, r.stderr);
    return r.stdout;
  };

  /** Fills a WatchCache from a direct watch-list on `path`; returns it and the burst's lines. */
  const fill = async (resource: ResourceInfo, path: string) => {
    const cache = new WatchCache({ resource });
    const lines = await watch(
      `${path}?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan`,
    );
    const burst: string[] = [];
    const initial: UpstreamObject[] = [];
    for (;;) {
      const line = await lines.next();
      burst.push(line);
      const e = objectOf(line);
      if (e.type === 'BOOKMARK') {
        cache.replace(initial, e.object.metadata.resourceVersion);
        break;
      }
      initial.push({ raw: e.raw, object: e.object });
    }
    void (async () => {
      for (;;) {
        let e: ReturnType<typeof objectOf>;
        try {
          e = objectOf(await lines.next(600_000));
        } catch {
          return;
        }
        const o = { raw: e.raw, object: e.object };
        if (e.type === 'ADDED') cache.add(o);
        else if (e.type === 'MODIFIED') cache.update(o);
        else if (e.type === 'DELETED') cache.delete(o);
        else if (e.type === 'BOOKMARK') cache.bookmark(e.object.metadata.resourceVersion);
      }
    })();
    return { cache, burst };
  };

  const cm = (name: string, app: string, data = 'x') =>
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, labels: { app } },
      data: { k: data },
    });

  before(async () => {
    f = await sharedFixture();
    agent = new Agent({ connect: { ca: f.caPem } });
    ns = await f.newNamespace('cache-enc');
    // Created out of key order: the apiserver answers in key order, and so must the cache.
    for (const [name, app] of [
      ['c-c', 'db'],
      ['c-a', 'web'],
      ['c-b', 'web'],
    ] as const) {
      await kubectl(['apply', '-n', ns, '-f', '-'], cm(name, app));
    }
  });

  after(async () => {
    for (const ac of aborts) ac.abort();
    await agent.close();
  });

  test('configmaps: watch-list burst, LIST, resumed watch and selector transitions', async () => {
    const base = `/api/v1/namespaces/${ns}/configmaps`;
    const { cache, burst } = await fill(CONFIGMAPS, base);
    const rv = cache.resourceVersion();

    const ours = cache.watch({
      namespace: ns,
      labelSelector: everythingLabels,
      fieldSelector: everythingFields,
      sendInitialEvents: true,
      allowWatchBookmarks: true,
    });
    assert.deepEqual(drain(ours), burst);
    ours.close();

    const list = await get(`${base}?resourceVersion=${rv}&resourceVersionMatch=Exact`);
    assert.equal(list.status, 200);
    const mine = Buffer.concat(
      itemsBodyChunks(
        encodeList(
          CONFIGMAPS,
          cache.list({ namespace: ns, labelSelector: everythingLabels, fieldSelector: everythingFields }),
        ),
      ),
    );
    assert.equal(String(mine), String(list.body));

    const webList = await get(
      `${base}?resourceVersion=${rv}&resourceVersionMatch=Exact&labelSelector=app%3Dweb`,
    );
    const web = parseLabelSelector('app=web');
    const mineWeb = Buffer.concat(
      itemsBodyChunks(
        encodeList(
          CONFIGMAPS,
          cache.list({ namespace: ns, labelSelector: web, fieldSelector: everythingFields }),
        ),
      ),
    );
    assert.equal(String(mineWeb), String(webList.body));

    // Pages: the first at the cache's RV, then each continue token on both sides.
    let directPage = await get(`${base}?limit=2&resourceVersion=${rv}&resourceVersionMatch=Exact`);
    let myPage = cache.list({
      namespace: ns,
      labelSelector: everythingLabels,
      fieldSelector: everythingFields,
      limit: 2,
    });
    for (let i = 0; ; i++) {
      assert.equal(
        String(Buffer.concat(itemsBodyChunks(encodeList(CONFIGMAPS, myPage)))),
        String(directPage.body),
        `page ${i}`,
      );
      if (!myPage.continue) break;
      const token = decodeContinue(myPage.continue);
      assert.ok(token);
      directPage = await get(`${base}?limit=2&continue=${myPage.continue}`);
      myPage = cache.list({
        namespace: ns,
        labelSelector: everythingLabels,
        fieldSelector: everythingFields,
        limit: 2,
        continueFrom: token,
      });
    }

    // Changes: c-d appears (web), c-a leaves app=web, c-b is deleted.
    await kubectl(['apply', '-n', ns, '-f', '-'], cm('c-d', 'web'));
    await kubectl(['apply', '-n', ns, '-f', '-'], cm('c-a', 'db', 'y'));
    await kubectl(['delete', '-n', ns, 'configmap', 'c-b']);
    const now = JSON.parse(String((await get(base)).body)) as { metadata: { resourceVersion: string } };
    assert.equal(await cache.waitUntilFresh(BigInt(now.metadata.resourceVersion), 60_000), true);

    for (const selector of ['', 'app=web']) {
      const q = selector ? `&labelSelector=${encodeURIComponent(selector)}` : '';
      const direct = await watch(`${base}?watch=1&resourceVersion=${rv}${q}`);
      const theirs = [await direct.next(), await direct.next(), await direct.next()];
      const w = cache.watch({
        namespace: ns,
        labelSelector: parseLabelSelector(selector),
        fieldSelector: everythingFields,
        resourceVersion: rv,
      });
      assert.deepEqual(drain(w), theirs, `selector ${JSON.stringify(selector)}`);
      w.close();
    }
  });

  test('pods: the initial-events-end bookmark of a kind with required fields, and field selectors', async () => {
    await kubectl(['create', '-n', ns, 'serviceaccount', 'default']);
    await kubectl(['run', '-n', ns, 'p1', '--image=nginx', '--labels=app=web']);
    await kubectl(['run', '-n', ns, 'p2', '--image=nginx', '--labels=app=db']);
    const base = `/api/v1/namespaces/${ns}/pods`;
    const { cache, burst } = await fill(PODS, base);
    const w = cache.watch({
      namespace: ns,
      labelSelector: everythingLabels,
      fieldSelector: everythingFields,
      sendInitialEvents: true,
      allowWatchBookmarks: true,
    });
    assert.deepEqual(drain(w), burst);
    w.close();
    const rv = cache.resourceVersion();
    for (const sel of [
      'spec.nodeName=',
      'status.phase=Pending,metadata.name!=p1',
      'spec.restartPolicy=Always',
    ]) {
      const direct = await get(
        `${base}?resourceVersion=${rv}&resourceVersionMatch=Exact&fieldSelector=${encodeURIComponent(sel)}`,
      );
      const fieldSelector = parseFieldSelector(sel, PODS);
      assert.ok(fieldSelector, sel);
      const mine = encodeList(
        PODS,
        cache.list({ namespace: ns, labelSelector: everythingLabels, fieldSelector }),
      );
      assert.equal(String(Buffer.concat(itemsBodyChunks(mine))), String(direct.body), sel);
    }
  });

  test('custom resources: items keep kind/apiVersion, unstructured list and bookmark shapes', async () => {
    const group = `${ns}.example.com`;
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `widgets.${group}` },
      spec: {
        group,
        names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
        scope: 'Namespaced',
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
          },
        ],
      },
    };
    await kubectl(['apply', '-f', '-'], JSON.stringify(crd));
    await kubectl(['wait', '--for=condition=Established', `crd/widgets.${group}`, '--timeout=30s']);
    const widget = (name: string) =>
      JSON.stringify({
        apiVersion: `${group}/v1`,
        kind: 'Widget',
        metadata: { name },
        spec: { n: 1, '10': 'x', a: [1] },
      });
    // Discovery of a new group can lag the Established condition by a moment.
    for (let i = 0; ; i++) {
      const r = await f.kubectl(['apply', '-n', ns, '-f', '-'], { input: widget('w1') });
      if (r.code === 0) break;
      if (i > 20) assert.fail(r.stderr);
      await new Promise((res) => setTimeout(res, 250));
    }
    await kubectl(['apply', '-n', ns, '-f', '-'], widget('w2'));
    const WIDGETS: ResourceInfo = {
      gvr: { group, version: 'v1', resource: 'widgets' },
      kind: 'Widget',
      listKind: 'WidgetList',
      apiVersion: `${group}/v1`,
      namespaced: true,
      verbs: ['list', 'watch'],
      builtIn: false,
    };
    const base = `/apis/${group}/v1/namespaces/${ns}/widgets`;
    const { cache, burst } = await fill(WIDGETS, base);
    const w = cache.watch({
      namespace: ns,
      labelSelector: everythingLabels,
      fieldSelector: everythingFields,
      sendInitialEvents: true,
      allowWatchBookmarks: true,
    });
    assert.deepEqual(drain(w), burst);
    w.close();
    const rv = cache.resourceVersion();
    const direct = await get(`${base}?resourceVersion=${rv}&resourceVersionMatch=Exact`);
    const mine = encodeList(
      WIDGETS,
      cache.list({ namespace: ns, labelSelector: everythingLabels, fieldSelector: everythingFields }),
    );
    assert.equal(String(Buffer.concat(itemsBodyChunks(mine))), String(direct.body));

    // The CRD's watch cache starts at its creation: RV 1 is below its window. The apiserver
    // answers HTTP 200, one ERROR event, end; a cache whose window starts at the same RV must
    // send the same line.
    const tooOld = await watch(`/apis/${group}/v1/widgets?watch=1&resourceVersion=1`);
    const errorLine = await tooOld.next();
    const m = /too old resource version: 1 \((\d+)\)/.exec(errorLine);
    assert.ok(m, errorLine);
    const expired = new WatchCache({ resource: WIDGETS });
    expired.replace([], m[1]!);
    const ew = expired.watch({
      labelSelector: everythingLabels,
      fieldSelector: everythingFields,
      resourceVersion: 1n,
    });
    assert.deepEqual(drain(ew), [errorLine]);
    assert.equal(ew.closed, true);
    await kubectl(['delete', 'crd', `widgets.${group}`, '--wait=false']);
  });

  test('selector syntax errors carry the apiserver messages', async () => {
    const labelCases = [
      'a b',
      'a=b$',
      '-a',
      'a in b',
      'a=b,',
      ',a',
      'a>b',
      'Example.com/a',
      'a/b/c',
      'k'.repeat(64),
      `a=${'v'.repeat(64)}`,
      `${'p'.repeat(254)}/a`,
    ];
    for (const s of labelCases) {
      const res = await get(`/api/v1/namespaces/${ns}/pods?labelSelector=${encodeURIComponent(s)}`);
      assert.equal(res.status, 400, s);
      const status = JSON.parse(String(res.body)) as { message: string };
      assert.throws(
        () => parseLabelSelector(s),
        (e: unknown) => e instanceof StatusError && e.message === status.message,
        `labelSelector ${s}: ${status.message}`,
      );
    }
    const fieldCases = ['metadata.name', 'metadata.name=a=b', 'metadata.name=a\\x', 'a=b,c'];
    for (const s of fieldCases) {
      const res = await get(`/api/v1/namespaces/${ns}/pods?fieldSelector=${encodeURIComponent(s)}`);
      assert.equal(res.status, 400, s);
      const status = JSON.parse(String(res.body)) as { message: string };
      assert.throws(
        () => parseFieldSelector(s, PODS),
        (e: unknown) => e instanceof StatusError && e.message === status.message,
        `fieldSelector ${s}: ${status.message}`,
      );
    }
  });
});
