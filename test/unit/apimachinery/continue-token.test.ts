import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeContinue, encodeContinue } from '../../../src/apimachinery/continue-token.ts';
import {
  bufferItems,
  itemsBodyChunks,
  itemViews,
  type ListItems,
} from '../../../src/apimachinery/list-items.ts';
import {
  everythingFields,
  everythingLabels,
  parseLabelSelector,
} from '../../../src/apimachinery/selectors.ts';
import { StatusError } from '../../../src/apimachinery/status.ts';
import { encodeList } from '../../../src/cache/encoding.ts';
import { WatchCache } from '../../../src/cache/watch-cache.ts';
import { FakeClock } from '../../support/fake-clock.ts';
import { PODS, pod } from '../../support/watch-cache-fixtures.ts';

function status(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof StatusError);
    return `${e.code} ${e.message}`;
  }
  assert.fail('did not throw');
}

const b64 = (s: string) => Buffer.from(s).toString('base64url');

describe('continue tokens', () => {
  it('encodes like the apiserver (token captured from kube-apiserver v1.37.2)', () => {
    assert.equal(
      encodeContinue('c-a', 429n),
      'eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6NDI5LCJzdGFydCI6Ii9jLWFcdTAwMDAifQ',
    );
    assert.deepEqual(
      decodeContinue('eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6NDI5LCJzdGFydCI6Ii9jLWFcdTAwMDAifQ'),
      {
        rv: 429n,
        start: 'c-a\u0000',
      },
    );
  });

  it('rejects what the apiserver rejects with its words; defers undecodable tokens upstream', () => {
    assert.equal(
      status(() => decodeContinue(b64('{"v":"x/v1","rv":1,"start":"/a"}'))),
      '400 invalid continue token: continue key is not valid: server does not recognize this encoded version x/v1',
    );
    assert.equal(
      status(() => decodeContinue(b64('{"v":"meta.k8s.io/v1","rv":0,"start":"/a"}'))),
      '400 invalid continue token: continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)',
    );
    assert.equal(
      status(() => decodeContinue(b64('{"v":"meta.k8s.io/v1","rv":3,"start":""}'))),
      '400 invalid continue token: continue key is not valid: encoded start key empty (version meta.k8s.io/v1)',
    );
    assert.equal(
      status(() => decodeContinue(b64('{"v":"meta.k8s.io/v1","rv":3,"start":"/a/../../b"}'))),
      '400 invalid continue token: continue key is not valid: /a/../../b',
    );
    assert.equal(decodeContinue('garbage'), undefined);
    assert.equal(decodeContinue('!!'), undefined);
    assert.equal(decodeContinue(b64('[1]')), undefined);
  });
});

describe('paginated lists', () => {
  function cache() {
    const c = new WatchCache({ resource: PODS, clock: new FakeClock() });
    c.replace(
      ['p1', 'p2', 'p3', 'p4', 'p5'].map((n, i) =>
        pod(i < 3 ? 'a' : 'b', n, i + 1, { labels: { i: String(i % 2) } }),
      ),
      '10',
    );
    return c;
  }
  const ALL = { labelSelector: everythingLabels, fieldSelector: everythingFields };
  const names = (items: ListItems) =>
    itemViews(items).map((b) => JSON.parse(String(b)).metadata.name as string);

  it('pages across namespaces from the snapshot pinned at the first page', () => {
    const c = cache();
    const p1 = c.list({ ...ALL, limit: 2 });
    assert.deepEqual(names(p1.items), ['p1', 'p2']);
    assert.equal(p1.remainingItemCount, 3);
    assert.deepEqual(decodeContinue(p1.continue!), { rv: 10n, start: 'a/p2\u0000' });
    c.delete(pod('a', 'p3', 11));
    c.add(pod('a', 'p0', 12));
    const p2 = c.list({ ...ALL, limit: 2, continueFrom: decodeContinue(p1.continue!)! });
    assert.equal(p2.resourceVersion, '10');
    assert.deepEqual(names(p2.items), ['p3', 'p4']);
    const p3 = c.list({ ...ALL, limit: 2, continueFrom: decodeContinue(p2.continue!)! });
    assert.deepEqual(names(p3.items), ['p5']);
    assert.equal(p3.continue, undefined);
    assert.equal(p3.remainingItemCount, undefined);
  });

  it('uses names as keys within a namespace; no remainingItemCount with a selector', () => {
    const c = cache();
    const sel = { labelSelector: parseLabelSelector('i=0'), fieldSelector: everythingFields };
    const p1 = c.list({ ...sel, namespace: 'a', limit: 1 });
    assert.deepEqual(names(p1.items), ['p1']);
    assert.equal(p1.remainingItemCount, undefined);
    assert.deepEqual(decodeContinue(p1.continue!), { rv: 10n, start: 'p1\u0000' });
    assert.equal(
      Buffer.concat(itemsBodyChunks(encodeList(PODS, { ...p1, items: bufferItems([]) }))).toString(),
      `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"10","continue":"${p1.continue}"},"items":[]}\n`,
    );
    const p2 = c.list({ ...sel, namespace: 'a', limit: 1, continueFrom: decodeContinue(p1.continue!)! });
    assert.deepEqual(names(p2.items), ['p3']);
    assert.equal(p2.continue, undefined);
  });

  it('a token older than the window is 410 (the caller forwards it upstream)', () => {
    const c = cache();
    assert.equal(
      status(() => c.list({ ...ALL, limit: 1, continueFrom: { rv: 5n, start: 'a/p1\u0000' } })),
      '410 too old resource version: 5 (10)',
    );
  });
});
