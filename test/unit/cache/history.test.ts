import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { History, HistoryEvent, withResourceVersion } from '../../../src/cache/history.ts';
import { BUFFER_OVERHEAD, EVENT_OVERHEAD } from '../../../src/cache/memory-size.ts';
import { Store } from '../../../src/cache/store.ts';
import { ALL, drain, PODS, pod, seeded, summary } from '../../support/watch-cache-fixtures.ts';

describe('WatchCache history window', () => {
  it('keeps events younger than historyMinAgeMs, evicts older ones beyond historyMinEvents', async () => {
    const { cache, clock } = seeded({ historyMinAgeMs: 75_000, historyMinEvents: 2 });
    cache.add(pod('a', 'e1', 11));
    await clock.step(10_000);
    cache.add(pod('a', 'e2', 12));
    cache.add(pod('a', 'e3', 13));
    assert.equal(cache.stats().historyEvents, 3);
    assert.equal(cache.stats().oldestRV, '10');
    await clock.step(70_000);
    // e1 is now 80 s old and there are more than 2 events: it goes; the window starts at 12-1.
    cache.add(pod('a', 'e4', 14));
    assert.equal(cache.stats().historyEvents, 3);
    assert.equal(cache.stats().oldestRV, '11');
    assert.equal(cache.stats().oldestEventAgeMs, 70_000);
    assert.deepEqual(summary(drain(cache.watch({ ...ALL, resourceVersion: 11n }))), [
      'ADDED e2@12',
      'ADDED e3@13',
      'ADDED e4@14',
    ]);
    assert.match(
      drain(cache.watch({ ...ALL, resourceVersion: 10n }))[0]!,
      /too old resource version: 10 \(11\)/,
    );
  });

  it('caps events and bytes even when they are fresh', () => {
    const { cache } = seeded({ historyMaxEvents: 3 });
    for (let i = 0; i < 6; i++) cache.add(pod('a', `e${i}`, 11 + i));
    assert.equal(cache.stats().historyEvents, 3);
    assert.equal(cache.stats().oldestRV, '13');
    // An ADDED event holds itself and its own line (issue 12: the stored entry keeps no ADDED
    // line); a MODIFIED also the replaced entry.
    const addedBytes = (i: number) =>
      EVENT_OVERHEAD +
      '{"type":"ADDED","object":'.length +
      pod('a', `e${i}`, 11 + i).raw.length +
      2 +
      BUFFER_OVERHEAD;
    const small = seeded({ historyMaxBytes: addedBytes(3) + addedBytes(4) }).cache;
    for (let i = 0; i < 5; i++) small.add(pod('a', `e${i}`, 11 + i));
    assert.equal(small.stats().historyEvents, 2);
    assert.equal(small.stats().historyBytes, addedBytes(3) + addedBytes(4));
    const { cache: c } = seeded();
    const before = c.stats();
    const p1 = new Store(PODS).entry(pod('a', 'p1', 5, { labels: { app: 'web' }, nodeName: 'n1' }));
    const next = pod('a', 'p1', 11);
    c.update(next);
    const line = '{"type":"MODIFIED","object":'.length + next.raw.length + 2 + BUFFER_OVERHEAD;
    assert.equal(c.stats().historyBytes, EVENT_OVERHEAD + line + p1.size);
    assert.equal(c.stats().bytes, before.bytes - p1.size + new Store(PODS).entry(next).size);
  });
});

describe('History.after', () => {
  it('gives the oldest buffered event above an RV, one at a time, without copying', () => {
    const store = new Store(PODS);
    const h = new History({ minAgeMs: 0, minEvents: 0, maxEvents: 3, maxBytes: 1 << 30 });
    h.reset(10n);
    for (const rv of [12, 15, 17, 20])
      h.append(new HistoryEvent('ADDED', store.entry(pod('a', `e${rv}`, rv)), undefined, 0), 0);
    // 12 was evicted (3 events at most): the window starts at 14.
    assert.equal(h.start, 14n);
    assert.equal(h.after(14n)?.rv, 15n);
    assert.equal(h.after(15n)?.rv, 17n);
    assert.equal(h.after(16n)?.rv, 17n);
    assert.equal(h.after(19n)?.rv, 20n);
    assert.equal(h.after(20n), undefined);
    assert.equal(h.after(99n), undefined);
  });
});

describe('HistoryEvent', () => {
  it('rewrites the object RV only in metadata', () => {
    const raw = Buffer.from(
      '{"kind":"Event","apiVersion":"v1","metadata":{"name":"e","resourceVersion":"5"},"involvedObject":{"resourceVersion":"5"}}',
    );
    assert.equal(
      String(withResourceVersion(raw, 5n, 8n)),
      '{"kind":"Event","apiVersion":"v1","metadata":{"name":"e","resourceVersion":"8"},"involvedObject":{"resourceVersion":"5"}}',
    );
  });
});
