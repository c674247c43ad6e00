import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { itemViews } from '../../../src/apimachinery/list-items.ts';
import { everythingFields, parseLabelSelector } from '../../../src/apimachinery/selectors.ts';
import { ALL, drain, names, pod, seeded, statusCode, summary } from '../../support/watch-cache-fixtures.ts';

describe('WatchCache intervals', () => {
  it('serves resourceVersionMatch=Exact inside the window as the snapshot at that RV', () => {
    const { cache } = seeded();
    cache.add(pod('a', 'p4', 11));
    cache.update(pod('a', 'p1', 12, { labels: { app: 'db' } }));
    cache.delete(pod('a', 'p2', 13));
    cache.update(pod('a', 'p1', 14, { labels: { app: 'x' } }));
    const at = (rv: bigint) => {
      const r = cache.list({ ...ALL, exactRV: rv });
      return `${r.resourceVersion}: ${itemViews(r.items)
        .map((b) => JSON.parse(String(b)).metadata)
        .map((m: { name: string; resourceVersion: string }) => `${m.name}@${m.resourceVersion}`)
        .join(' ')}`;
    };
    assert.equal(at(10n), '10: p1@5 p2@7 p3@8');
    assert.equal(at(11n), '11: p1@5 p2@7 p4@11 p3@8');
    assert.equal(at(12n), '12: p1@12 p2@7 p4@11 p3@8');
    assert.equal(at(13n), '13: p1@12 p4@11 p3@8');
    assert.equal(at(14n), '14: p1@14 p4@11 p3@8');
    const web = cache.list({
      labelSelector: parseLabelSelector('app=web'),
      fieldSelector: everythingFields,
      exactRV: 11n,
    });
    assert.deepEqual(names(web.items), ['a/p1', 'b/p3']);
    assert.equal(
      statusCode(() => cache.list({ ...ALL, exactRV: 9n })),
      410,
    );
    assert.equal(
      statusCode(() => cache.list({ ...ALL, exactRV: 15n })),
      410,
    );
  });

  it('RV=N resumes strictly after N, each RV once, in order; exact wire bytes', () => {
    const { cache } = seeded();
    const p4 = pod('a', 'p4', 11);
    cache.add(p4);
    cache.update(pod('a', 'p4', 12, { phase: 'Running' }));
    cache.delete(pod('a', 'p4', 13, { phase: 'Running' }));
    const w = cache.watch({ ...ALL, resourceVersion: 11n });
    const lines = drain(w);
    assert.deepEqual(summary(lines), ['MODIFIED p4@12', 'DELETED p4@13']);
    assert.equal(
      lines[0],
      '{"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p4","namespace":"a","resourceVersion":"12"},"spec":{},"status":{"phase":"Running"}}}\n',
    );
    const fromStart = cache.watch({ ...ALL, resourceVersion: 10n });
    assert.deepEqual(summary(drain(fromStart)), ['ADDED p4@11', 'MODIFIED p4@12', 'DELETED p4@13']);
    cache.add(pod('a', 'p5', 14));
    assert.deepEqual(summary(drain(w)), ['ADDED p5@14']);
    assert.deepEqual(summary(drain(fromStart)), ['ADDED p5@14']);
  });

  it('sendInitialEvents=true: ADDED, the initial-events-end BOOKMARK, then live', () => {
    const { cache } = seeded();
    const w = cache.watch({
      ...ALL,
      namespace: 'b',
      sendInitialEvents: true,
      allowWatchBookmarks: true,
      resourceVersion: 0n,
    });
    const lines = drain(w);
    assert.deepEqual(summary(lines), ['ADDED p3@8', 'BOOKMARK @10']);
    assert.equal(
      lines[1],
      '{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"10","annotations":{"k8s.io/initial-events-end":"true"}},"spec":{"containers":null},"status":{}}}\n',
    );
    cache.add(pod('b', 'p9', 11));
    assert.deepEqual(summary(drain(w)), ['ADDED p9@11']);
  });

  it('issue 11 item 1: sendInitialEvents=true without allowWatchBookmarks: ADDED, no BOOKMARK, then live', () => {
    // cacher.go setInitialEventsEndBookmarkIfRequested: the bookmark needs both.
    const { cache } = seeded();
    const w = cache.watch({ ...ALL, namespace: 'b', sendInitialEvents: true, resourceVersion: 0n });
    assert.deepEqual(summary(drain(w)), ['ADDED p3@8']);
    cache.add(pod('b', 'p9', 11));
    assert.deepEqual(summary(drain(w)), ['ADDED p9@11']);
  });

  it('a resuming watcher keeps its interval even if the ring evicts it meanwhile', () => {
    const { cache } = seeded({ historyMaxEvents: 2 });
    cache.add(pod('a', 'e1', 11));
    cache.add(pod('a', 'e2', 12));
    const w = cache.watch({ ...ALL, resourceVersion: 10n });
    cache.add(pod('a', 'e3', 13));
    cache.add(pod('a', 'e4', 14));
    assert.deepEqual(summary(drain(w)), ['ADDED e1@11', 'ADDED e2@12', 'ADDED e3@13', 'ADDED e4@14']);
  });
});
