/**
 * Read-your-writes while an on-demand cache starts (`--resources=auto`), against the fixture
 * apiserver: the upstream e2e suite's MutatingAdmissionPolicy and Events specs PATCH an object
 * and GET it at once right after the first LIST of its resource, and once in about three runs the
 * GET through the proxy showed the object BEFORE the PATCH (the PATCH, sent while the new cache
 * was not yet registered, was never tracked; the cache's first snapshot was taken before it
 * committed). Each round starts a fresh proxy, LISTs configmaps through it (which starts the
 * cache) and has a writer PATCH and GET its own big ConfigMap through it, back to back,
 * until a few rounds after the cache synced: every GET must show its PATCH, as the apiserver
 * answers the same GET directly.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { type Fixture, sharedFixture } from '../fixture/index.ts';
import { type InProcessProxy, startProxy } from '../support/proxy.ts';

/** Fresh proxies: each has one window in which its configmaps cache starts. */
const ROUNDS = 10;
/**
 * PATCH-then-GET loops per round, one ConfigMap each. One: with several, the others' PATCHes
 * tracked once the cache is registered (higher RVs) made every GET wait past the untracked one,
 * hiding the bug (4 writers × 8 rounds never showed it on the old code; 1 writer × 20 rounds with
 * big objects showed it in 13 rounds).
 */
const WRITERS = 1;
/** Size of each ConfigMap's filler (bytes). */
const BIG_BYTES = 512 * 1024;
/** PATCH-then-GET pairs each writer still sends once the cache is synced. */
const AFTER_SYNC = 3;

interface Shown {
  resourceVersion: string;
  v: string | undefined;
}

describe('issue 28: read-your-writes while an on-demand cache starts (--resources=auto)', () => {
  let f: Fixture;
  let ns: string;
  let agent: Agent;
  const call = async (base: string, path: string, method: 'GET' | 'PATCH', body?: string): Promise<Shown> => {
    const r = await request(`${base}${path}`, {
      method,
      dispatcher: agent,
      headers: {
        accept: 'application/json',
        authorization: `Bearer ${f.tokens.admin}`,
        ...(body ? { 'content-type': 'application/merge-patch+json' } : {}),
      },
      ...(body ? { body } : {}),
    });
    const text = await r.body.text();
    assert.equal(r.statusCode, 200, `${method} ${path}: ${text}`);
    const o = JSON.parse(text) as { metadata: { resourceVersion: string }; data?: { v?: string } };
    return { resourceVersion: o.metadata.resourceVersion, v: o.data?.v };
  };

  before(async () => {
    f = await sharedFixture();
    agent = new Agent({ connect: { ca: f.caPem } });
    ns = await f.newNamespace('ryw-start');
    for (let w = 0; w < WRITERS; w++) {
      // Big, so that each PATCH is long in flight (the apiserver decodes, merges and stores it
      // all): the window in which a PATCH sent before the cache is registered commits after its
      // first snapshot is wider.
      const cm = {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: `w${w}` },
        data: { v: 'initial', filler: 'x'.repeat(BIG_BYTES) },
      };
      const c = await f.kubectl(['create', '-n', ns, '-f', '-'], { input: JSON.stringify(cm) });
      assert.equal(c.code, 0, c.stderr);
    }
  });
  after(async () => {
    await agent?.close();
  });

  test('PATCH then GET at once while the cache starts: every GET through the proxy shows its PATCH, equal to the direct GET', async () => {
    const stale: string[] = [];
    let beforeSync = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const p: InProcessProxy = await startProxy(f, { resources: 'auto' });
      try {
        const synced = () =>
          p.parts.statusSource.resources().some((r) => r.gvr.resource === 'configmaps' && r.synced);
        // The first LIST passes upstream and starts the cache (discovery, reviews, watch-list).
        await call(p.url, `/api/v1/namespaces/${ns}/configmaps`, 'GET');
        const deadline = Date.now() + 60_000;
        await Promise.all(
          Array.from({ length: WRITERS }, async (_, w) => {
            const path = `/api/v1/namespaces/${ns}/configmaps/w${w}`;
            for (let i = 0, left = AFTER_SYNC; left > 0; i++) {
              assert.ok(Date.now() < deadline, 'the on-demand cache of configmaps never synced');
              const wasSynced = synced();
              if (wasSynced) left--;
              else beforeSync++;
              const v = `${round}-${i}`;
              const patched = await call(p.url, path, 'PATCH', JSON.stringify({ data: { v } }));
              const got = await call(p.url, path, 'GET');
              if (got.v !== v || got.resourceVersion !== patched.resourceVersion)
                stale.push(
                  `round ${round} w${w} #${i}${wasSynced ? '' : ' (cache starting)'}: PATCH ${v}@${patched.resourceVersion}, GET ${got.v}@${got.resourceVersion}`,
                );
            }
          }),
        );
        // Nothing else writes these objects: the direct GET equals the last one through the proxy.
        for (let w = 0; w < WRITERS; w++) {
          const path = `/api/v1/namespaces/${ns}/configmaps/w${w}`;
          assert.deepEqual(await call(p.url, path, 'GET'), await call(f.server, path, 'GET'));
        }
      } finally {
        await p.stop();
      }
    }
    assert.deepEqual(stale, [], 'a GET right after a PATCH showed an older object');
    assert.ok(beforeSync > 0, 'some PATCHes were sent while the cache was starting');
  });
});
