import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeContinue } from '../../../src/apimachinery/continue-token.ts';
import { itemsBodyChunks, itemView } from '../../../src/apimachinery/list-items.ts';
import {
  everythingFields,
  everythingLabels,
  LabelSelector,
  parseFieldSelector,
  parseLabelSelector,
} from '../../../src/apimachinery/selectors.ts';
import { parseShardSelector } from '../../../src/apimachinery/shard-selector.ts';
import { encodeList } from '../../../src/cache/encoding.ts';
import {
  ALL,
  drain,
  names,
  newCache,
  PODS,
  pod,
  seeded,
  summary,
} from '../../support/watch-cache-fixtures.ts';

describe('WatchCache list/get', () => {
  it('lists in key order, without kind/apiVersion, filtered by namespace and selectors', () => {
    const { cache } = seeded();
    const all = cache.list(ALL);
    assert.equal(all.resourceVersion, '10');
    assert.deepEqual(names(all.items), ['a/p1', 'a/p2', 'b/p3']);
    assert.equal(
      String(itemView(all.items, 0)),
      '{"metadata":{"name":"p1","namespace":"a","resourceVersion":"5","labels":{"app":"web"}},"spec":{"nodeName":"n1"},"status":{}}',
    );
    // never copied: every LIST addresses the same stored memory
    const again = itemView(cache.list(ALL).items, 0);
    assert.equal(again.buffer, itemView(all.items, 0).buffer);
    assert.equal(again.byteOffset, itemView(all.items, 0).byteOffset);
    assert.deepEqual(names(cache.list({ ...ALL, namespace: 'a' }).items), ['a/p1', 'a/p2']);
    assert.deepEqual(names(cache.list({ ...ALL, namespace: 'zz' }).items), []);
    const web = { labelSelector: parseLabelSelector('app=web'), fieldSelector: everythingFields };
    assert.deepEqual(names(cache.list(web).items), ['a/p1', 'b/p3']);
    const onN2 = {
      labelSelector: everythingLabels,
      fieldSelector: parseFieldSelector('spec.nodeName=n2', PODS)!,
    };
    assert.deepEqual(names(cache.list(onN2).items), ['b/p3']);
    const unscheduled = {
      labelSelector: everythingLabels,
      fieldSelector: parseFieldSelector('spec.nodeName=', PODS)!,
    };
    assert.deepEqual(names(cache.list(unscheduled).items), ['a/p2']);
    const byName = { ...ALL, namespace: 'a', fieldSelector: parseFieldSelector('metadata.name=p2', PODS)! };
    assert.deepEqual(names(cache.list(byName).items), ['a/p2']);
    const notOnN1 = { ...ALL, fieldSelector: parseFieldSelector('spec.nodeName!=n1', PODS)! };
    assert.deepEqual(names(cache.list(notOnN1).items), ['a/p2', 'b/p3']);
  });

  it('gets one object with its verbatim bytes', () => {
    const { cache } = seeded();
    const p = pod('a', 'p1', 5, { labels: { app: 'web' }, nodeName: 'n1' });
    assert.deepEqual(cache.get('a', 'p1')?.raw, p.raw);
    assert.equal(cache.get('a', 'nope'), undefined);
    assert.equal(cache.get('b', 'p1'), undefined);
  });

  it('encodes a LIST body like the apiserver', () => {
    const { cache } = seeded();
    const body = Buffer.concat(
      itemsBodyChunks(encodeList(PODS, cache.list({ ...ALL, namespace: 'b' }))),
    ).toString();
    assert.equal(
      body,
      '{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"10"},"items":[{"metadata":{"name":"p3","namespace":"b","resourceVersion":"8","labels":{"app":"web"}},"spec":{"nodeName":"n2"},"status":{}}]}\n',
    );
    const empty = Buffer.concat(
      itemsBodyChunks(encodeList(PODS, cache.list({ ...ALL, namespace: 'zz' }))),
    ).toString();
    assert.equal(
      empty,
      '{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"10"},"items":[]}\n',
    );
  });
});

describe('WatchCache watch', () => {
  it('RV unset: synthetic ADDED for the filtered snapshot in key order, then live events', () => {
    const { cache } = seeded();
    const w = cache.watch({ ...ALL, labelSelector: parseLabelSelector('app=web') });
    assert.deepEqual(summary(drain(w)), ['ADDED p1@5', 'ADDED p3@8']);
    cache.add(pod('a', 'p4', 11, { labels: { app: 'web' } }));
    cache.add(pod('a', 'p5', 12, { labels: { app: 'db' } }));
    assert.deepEqual(summary(drain(w)), ['ADDED p4@11']);
    assert.equal(cache.stats().watchers, 1);
    w.close();
    assert.equal(w.closed, true);
    assert.equal(w.closeReason, 'client');
    assert.equal(cache.stats().watchers, 0);
  });

  it('sendInitialEvents=false with RV unset starts from now without initial events', () => {
    const { cache } = seeded();
    const w = cache.watch({ ...ALL, sendInitialEvents: false });
    assert.deepEqual(drain(w), []);
    cache.delete(pod('a', 'p1', 11, { labels: { app: 'web' } }));
    assert.deepEqual(summary(drain(w)), ['DELETED p1@11']);
  });

  it('shares one encoded line between watchers', () => {
    const { cache } = seeded();
    const w1 = cache.watch({ ...ALL, resourceVersion: 10n });
    const w2 = cache.watch({ ...ALL, resourceVersion: 10n, namespace: 'a' });
    cache.add(pod('a', 'p4', 11));
    const [c1] = [w1.stream.read() as Buffer];
    const [c2] = [w2.stream.read() as Buffer];
    assert.equal(c1, c2);
  });

  it('RV below the window: one ERROR event with Status 410 Expired, then the stream ends', async () => {
    const { cache } = seeded();
    const w = cache.watch({ ...ALL, resourceVersion: 9n });
    assert.equal(w.closed, true);
    assert.equal(w.closeReason, 'expired');
    assert.deepEqual(drain(w), [
      '{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 9 (10)","reason":"Expired","code":410}}\n',
    ]);
    await new Promise((r) => setImmediate(r));
    assert.equal(w.stream.readableEnded, true);
    assert.equal(cache.stats().watchers, 0);
  });

  it('RV above the current one: accepted, only events after it', () => {
    const { cache } = seeded();
    const w = cache.watch({ ...ALL, resourceVersion: 12n });
    cache.add(pod('a', 'p4', 11));
    cache.add(pod('a', 'p5', 12));
    cache.add(pod('a', 'p6', 13));
    assert.deepEqual(summary(drain(w)), ['ADDED p6@13']);
  });

  it('label selector transitions: into the selector → ADDED, out of it → DELETED with the previous object at the new RV', () => {
    const { cache } = seeded();
    const w = cache.watch({ ...ALL, labelSelector: parseLabelSelector('app=web'), resourceVersion: 10n });
    cache.update(pod('a', 'p2', 11, { labels: { app: 'web' } }));
    cache.update(pod('a', 'p2', 12, { labels: { app: 'web', v: '2' } }));
    cache.update(pod('a', 'p2', 13, { labels: { app: 'db' } }));
    cache.update(pod('a', 'p2', 14, { labels: { app: 'db', v: '3' } }));
    cache.delete(pod('a', 'p1', 15, { labels: { app: 'web' }, nodeName: 'n1' }));
    const lines = drain(w);
    assert.deepEqual(summary(lines), ['ADDED p2@11', 'MODIFIED p2@12', 'DELETED p2@13', 'DELETED p1@15']);
    assert.equal(
      lines[2],
      '{"type":"DELETED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p2","namespace":"a","resourceVersion":"13","labels":{"app":"web","v":"2"}},"spec":{},"status":{}}}\n',
    );
    // The same transitions replayed from history.
    const replay = cache.watch({
      ...ALL,
      labelSelector: parseLabelSelector('app=web'),
      resourceVersion: 10n,
    });
    assert.deepEqual(drain(replay), lines);
  });

  it('field selector transitions on spec.nodeName', () => {
    const { cache } = seeded();
    const w = cache.watch({
      ...ALL,
      fieldSelector: parseFieldSelector('spec.nodeName=n1', PODS)!,
      resourceVersion: 10n,
    });
    cache.update(pod('a', 'p2', 11, { nodeName: 'n1' }));
    cache.update(pod('a', 'p1', 12, { labels: { app: 'web' }, nodeName: 'n3' }));
    assert.deepEqual(summary(drain(w)), ['ADDED p2@11', 'DELETED p1@12']);
  });
});

describe('WatchCache watcher registry', () => {
  it('the client destroying its stream unregisters the watcher', async () => {
    const { cache } = seeded();
    const w = cache.watch(ALL);
    w.stream.destroy();
    await new Promise((r) => setImmediate(r));
    assert.equal(w.closed, true);
    assert.equal(cache.stats().watchers, 0);
  });
});

/** Selects what `requirements` select, counting its evaluations. */
class CountingLabels extends LabelSelector {
  calls = 0;
  override matches(labels: Readonly<Record<string, string>> | undefined): boolean {
    this.calls++;
    return super.matches(labels);
  }
}

describe('issue 11 item 15: no per-watcher or per-page rework', () => {
  it('issue 11 item 15 / issue 12: initial-snapshot events are views of the stored bytes, never encoded or kept', () => {
    const { cache } = seeded();
    const read = (w: { stream: { read(): unknown } }) => {
      const out: (readonly Buffer[])[] = [];
      for (let c = w.stream.read(); c !== null; c = w.stream.read()) out.push(c as readonly Buffer[]);
      return out;
    };
    const bytes = cache.stats().bytes;
    const a = read(cache.watch(ALL));
    const b = read(cache.watch({ ...ALL, namespace: 'a' }));
    const c = read(cache.watch({ ...ALL, sendInitialEvents: true }));
    assert.equal(a.length, 3);
    // Every watcher's line of an object: the shared prefix, then a view of the same stored memory.
    for (const other of [b[0]!, c[0]!]) {
      assert.equal(other[0], a[0]![0]);
      assert.equal(other[1]!.buffer, a[0]![1]!.buffer);
      assert.equal(other[1]!.byteOffset, a[0]![1]!.byteOffset);
    }
    assert.equal(cache.stats().bytes, bytes, 'nothing built and kept per entry');
    const p1 = cache.get('a', 'p1')!;
    assert.equal(a[0]![1]!.buffer, p1.listItem.buffer);
    assert.equal(a[0]![1]!.byteOffset, p1.listItem.byteOffset + 1);
    assert.equal(String(Buffer.concat(a[0]!)), `{"type":"ADDED","object":${String(p1.raw)}}\n`);
  });

  it('issue 11 item 15: continue pages at a moved RV do not re-sort the snapshot per page', () => {
    const { cache } = newCache();
    const n = 20_000;
    const objs = Array.from({ length: n }, (_, i) => pod(`ns${i % 7}`, `p${(i * 7919) % n}`, 5));
    cache.replace(objs, '10');
    cache.update(pod('ns0', 'p0', 11, { labels: { moved: 'yes' } }));
    cache.add(pod('ns0', 'p-new', 12));
    // Everything selected, and every evaluation of the selector counted: rebuilding the selection
    // per page evaluates all 20 000 objects on each of the 1 000 pages (20 M), and sorts them.
    // Timing of the same walk: bench/tools/hot-paths.ts.
    const counting = new CountingLabels([]);
    const seen: string[] = [];
    let pages = 0;
    let q: Parameters<typeof cache.list>[0] = { ...ALL, labelSelector: counting, exactRV: 10n, limit: 20 };
    for (;;) {
      const r = cache.list(q);
      pages++;
      assert.equal(r.resourceVersion, '10');
      seen.push(...names(r.items));
      if (!r.continue) break;
      assert.equal(r.remainingItemCount, n - seen.length);
      q = { ...ALL, labelSelector: counting, limit: 20, continueFrom: decodeContinue(r.continue)! };
    }
    assert.equal(pages, n / 20);
    assert.equal(seen.length, n);
    assert.deepEqual(seen, [...seen].sort());
    assert.equal(seen.includes('ns0/p-new'), false);
    // One selection for all 1 000 pages: each object at RV 10 evaluated once.
    assert.equal(counting.calls, n, `${counting.calls} selector evaluations for ${pages} pages`);
    // One namespace, with and without a selector, at the moved RV.
    const ns3 = cache.list({ ...ALL, namespace: 'ns3', exactRV: 10n, limit: 10 });
    assert.equal(ns3.items.length, 10);
    assert.equal(ns3.remainingItemCount, Math.floor(n / 7) - 10 + (3 < n % 7 ? 1 : 0));
    assert.deepEqual(names(ns3.items), seen.filter((k) => k.startsWith('ns3/')).slice(0, 10));
    const moved = cache.list({
      ...ALL,
      labelSelector: parseLabelSelector('moved=yes'),
      exactRV: 11n,
      limit: 1,
    });
    assert.deepEqual(names(moved.items), ['ns0/p0']);
    assert.equal(moved.continue, undefined);
    // A kept selection belongs to its snapshot: after a relist, the same RV is read anew.
    const first = cache.list({ ...ALL, namespace: 'ns3', exactRV: 10n, limit: 10 });
    cache.replace([pod('ns3', 'zzz', 9)], '10');
    const next = cache.list({
      ...ALL,
      namespace: 'ns3',
      limit: 10,
      continueFrom: decodeContinue(first.continue!)!,
    });
    assert.deepEqual(names(next.items), ['ns3/zzz']);
  });
});

describe('WatchCache sharded list (shardSelector)', () => {
  // FNV-1a 64 of "a" is 0xaf63dc4c8601ec8c: this range holds namespace a only.
  const parsed = parseShardSelector(
    "shardRange(object.metadata.namespace, '0xaf63dc4c8601ec8c', '0xaf63dc4c8601ec8d')",
  );
  assert.ok(parsed && 'selector' in parsed);
  const shard = { ...ALL, shardSelector: parsed.selector };

  it('keeps the shard, echoes shardInfo, counts no remaining items', () => {
    const { cache } = seeded();
    const all = cache.list(shard);
    assert.deepEqual(names(all.items), ['a/p1', 'a/p2']);
    assert.equal(all.shardInfo, parsed.selector.string);
    const page = cache.list({ ...shard, limit: 1 });
    assert.deepEqual(names(page.items), ['a/p1']);
    assert.ok(page.continue);
    assert.equal(page.remainingItemCount, undefined);
    assert.match(
      Buffer.concat(itemsBodyChunks(encodeList(PODS, all))).toString(),
      /"metadata":\{"resourceVersion":"10","shardInfo":\{"selector":"shardRange\(object.metadata.namespace, '0xaf63dc4c8601ec8c', '0xaf63dc4c8601ec8d'\)"\}\}/,
    );
  });

  it('a page filled exactly continues when unselected objects follow (the apiserver cacher), then ends empty', () => {
    const { cache } = seeded();
    const page = cache.list({ ...shard, limit: 2 });
    assert.deepEqual(names(page.items), ['a/p1', 'a/p2']);
    assert.ok(page.continue, 'b/p3 follows');
    const next = cache.list({ ...shard, limit: 2, continueFrom: decodeContinue(page.continue)! });
    assert.deepEqual(names(next.items), []);
    assert.equal(next.continue, undefined);
    // Nothing after the last: no token (one namespace).
    const inA = cache.list({ ...shard, namespace: 'a', limit: 2 });
    assert.equal(inA.continue, undefined);
  });
});
