/**
 * The per-resource knowledge of whether the upstream honours `shardSelector`: one probe per
 * cache, its answer kept, a failed probe retried only after RETRY_MS; and what a sharded
 * request's read is in each state.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ServedCache } from '../../../src/server/cache-api.ts';
import { collectionPath, RETRY_MS, ShardSupport, shardRead } from '../../../src/server/shard-support.ts';
import { FakeCache } from '../../support/fake-cache.ts';

const SHARD = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')";
const q = (s: string) => new URLSearchParams({ shardSelector: s });

describe('ShardSupport', () => {
  it('probes once per cache, at the request path, and keeps the answer', async () => {
    const paths: string[] = [];
    const support = new ShardSupport(async (p) => {
      paths.push(p);
      return 'honoured';
    });
    const cache = new FakeCache() as unknown as ServedCache;
    assert.equal(support.state(cache, '/api/v1/namespaces/a/pods'), undefined);
    assert.equal(support.state(cache, '/api/v1/namespaces/a/pods'), undefined, 'one probe in flight');
    await support.settled(cache);
    assert.equal(support.state(cache, '/api/v1/pods'), 'honoured');
    assert.deepEqual(paths, ['/api/v1/namespaces/a/pods']);
    const other = new FakeCache() as unknown as ServedCache;
    assert.equal(support.state(other, '/api/v1/pods'), undefined, 'another resource: its own probe');
  });

  it('a failed probe (unknown or thrown) is retried after RETRY_MS only', async () => {
    let now = 1_000;
    let calls = 0;
    const support = new ShardSupport(
      async () => {
        calls++;
        if (calls === 1) throw new Error('connection refused');
        return calls === 2 ? undefined : 'ignored';
      },
      () => now,
    );
    const cache = new FakeCache() as unknown as ServedCache;
    for (const wait of [0, RETRY_MS]) {
      now += wait;
      assert.equal(support.state(cache, '/p'), undefined);
      await support.settled(cache);
      assert.equal(support.state(cache, '/p'), undefined, 'not before RETRY_MS');
    }
    now += RETRY_MS;
    assert.equal(support.state(cache, '/p'), undefined);
    await support.settled(cache);
    assert.equal(support.state(cache, '/p'), 'ignored');
    assert.equal(calls, 3);
  });
});

describe('shardRead', () => {
  const cache = new FakeCache() as unknown as ServedCache;
  it('no parameter or an empty one: no shard, no probe', () => {
    const support = new ShardSupport(async () => assert.fail('no probe'));
    assert.deepEqual(shardRead(new URLSearchParams(), cache, 'a', support), {});
    assert.deepEqual(shardRead(q(''), cache, 'a', support), {});
  });
  it('unknown: upstream; ignored: no shard; honoured: the selector, or the 500, or unparsed', () => {
    const support = new ShardSupport(async () => undefined);
    assert.equal(shardRead(q(SHARD), cache, 'a', support), 'shard-support-unknown');
    assert.equal(shardRead(q(SHARD), cache, 'a', undefined), 'shard-support-unknown');
    support.learn(cache, 'ignored');
    assert.deepEqual(shardRead(q('x'), cache, 'a', support), {});
    support.learn(cache, 'honoured');
    const r = shardRead(q(SHARD), cache, 'a', support);
    assert.ok(typeof r !== 'string' && r.selector?.string === SHARD);
    assert.equal(shardRead(q(`${SHARD} && true`), cache, 'a', support), 'shard-selector-unparsed');
    assert.throws(
      () => shardRead(q('x'), cache, 'a', support),
      (e: { status: object }) => {
        assert.deepEqual(e.status, {
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Failure',
          message:
            'invalid shard selector: unexpected expression kind 3; expected shardRange() call or || operator',
          code: 500,
        });
        return true;
      },
    );
  });
  it('collectionPath: the request collection, namespaced or not', () => {
    assert.equal(collectionPath(cache, 'a'), '/api/v1/namespaces/a/pods');
    assert.equal(collectionPath(cache, undefined), '/api/v1/pods');
  });
});
