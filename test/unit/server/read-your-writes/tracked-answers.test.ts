/**
 * Which answers passed upstream feed read-your-writes (`src/server/read-your-writes/tracked-answers.ts`),
 * decided as each answer arrives: a cache registered while a write was in flight (an on-demand
 * cache starting) must track that write.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CacheRegistry } from '../../../../src/server/cache-registry.ts';
import {
  answerTeeFor,
  type TrackedRequest,
} from '../../../../src/server/read-your-writes/tracked-answers.ts';
import { WriteTracker } from '../../../../src/server/read-your-writes/write-tracker.ts';
import { FakeCache } from '../../../support/fake-cache.ts';
import { FakeClock } from '../../../support/fake-clock.ts';
import { resourceInfo } from '../../../support/resource-info.ts';

const cms = resourceInfo('v1', 'configmaps', 'ConfigMap');
const JSON_HEADERS = { contentType: 'application/json', contentEncoding: undefined };

const request = (method: string, name?: string): TrackedRequest => ({
  info: { group: '', version: 'v1', resource: 'configmaps', namespace: 'ns', ...(name ? { name } : {}) },
  method,
  query: new URLSearchParams(),
  longRunning: false,
  reason: method === 'GET' ? 'not-cached' : 'not-get',
  started: 0,
});

const answer = (rv: number) =>
  Buffer.from(
    JSON.stringify({
      kind: 'ConfigMap',
      apiVersion: 'v1',
      metadata: { name: 'a', namespace: 'ns', uid: 'uid-a', resourceVersion: String(rv) },
    }),
  );

describe('answerTeeFor: the read-your-writes tee of a request passed upstream', () => {
  it('issue 28: a PATCH sent before the cache of its resource was registered and answered after it is tracked (the next read waits for its RV)', () => {
    const registry = new CacheRegistry([]);
    const writes = new WriteTracker();
    const tee = answerTeeFor(registry, writes, new FakeClock(), request('PATCH', 'a'));
    assert.ok(tee, 'a write to a resource path always gets a tee: a cache may start before its answer');
    // The on-demand cache is registered while the PATCH is in flight (before its reflector lists).
    registry.add(new FakeCache(cms));
    assert.equal(tee.wanted?.(), true);
    tee.onAnswer(answer(30), true, JSON_HEADERS);
    assert.equal(writes.required('configmaps.'), 30n);
  });

  it('an answer that arrives while no cache serves the resource records nothing for read-your-writes; a read only the RV it showed, for a watch from it', () => {
    const registry = new CacheRegistry([]);
    const writes = new WriteTracker();
    const patch = answerTeeFor(registry, writes, new FakeClock(), request('PATCH', 'a'));
    const get = answerTeeFor(registry, writes, new FakeClock(), request('GET', 'a'));
    assert.equal(patch?.wanted?.(), false);
    // The read that starts an on-demand cache (upstream e2e ResourceQuota status spec): its
    // client watches from the RV it showed next, below the new cache's first snapshot.
    assert.equal(get?.wanted?.(), true);
    get!.onAnswer(answer(258), true, JSON_HEADERS);
    assert.equal(writes.required('configmaps.'), 0n);
    assert.equal(writes.shownRV('configmaps.'), 0n, 'not a read-your-writes bound');
    assert.equal(writes.isBlind('configmaps.'), false);
    assert.equal(writes.shownRecently('configmaps.', 258n, 0), true);
    assert.equal(writes.shownRecently('configmaps.', 257n, 0), false);
  });

  it('the decision is taken once, at the status line: the pass-through asking again gets the same answer', () => {
    const registry = new CacheRegistry([]);
    const tee = answerTeeFor(registry, new WriteTracker(), new FakeClock(), request('PATCH', 'a'))!;
    assert.equal(tee.wanted?.(), false);
    registry.add(new FakeCache(cms));
    assert.equal(tee.wanted?.(), false, 'the answer already passed untouched');
  });

  it('issue 28: a GET passed upstream and answered once the cache is registered records the RV its client was shown', () => {
    const registry = new CacheRegistry([]);
    const writes = new WriteTracker();
    const tee = answerTeeFor(registry, writes, new FakeClock(), request('GET', 'a'));
    registry.add(new FakeCache(cms));
    assert.equal(tee?.wanted?.(), true);
    tee?.onAnswer(answer(31), true, JSON_HEADERS);
    assert.equal(writes.shownRV('configmaps.'), 31n);
  });

  it('no tee for what never feeds read-your-writes: a dry run, a subresource read, a watch, a non-resource path', () => {
    const registry = new CacheRegistry([new FakeCache(cms)]);
    const writes = new WriteTracker();
    const clock = new FakeClock();
    assert.equal(
      answerTeeFor(registry, writes, clock, {
        ...request('PATCH', 'a'),
        query: new URLSearchParams('dryRun=All'),
      }),
      undefined,
    );
    const status = request('GET', 'a');
    status.info = { ...status.info!, subresource: 'status' };
    assert.equal(answerTeeFor(registry, writes, clock, status), undefined);
    assert.equal(answerTeeFor(registry, writes, clock, { ...request('GET'), longRunning: true }), undefined);
    assert.equal(answerTeeFor(registry, writes, clock, { ...request('GET'), info: undefined }), undefined);
  });
});
