import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ResourceInfo } from '../../../src/apimachinery/gvr.ts';
import type { ResourceRequest } from '../../../src/apimachinery/request-info.ts';
import { type CacheUsage, OnDemandCaches, type OnDemandOptions } from '../../../src/on-demand/caches.ts';
import { DiscoveryError, UpstreamError } from '../../../src/util/errors.ts';
import { silentLogger } from '../../../src/util/logger.ts';
import { FakeClock } from '../../support/fake-clock.ts';
import { logLines } from '../../support/log-lines.ts';
import { resourceInfo } from '../../support/resource-info.ts';

const flush = async () => {
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
};

/** A manager whose I/O is recorded: every resource is list+watchable and allowed unless told. */
function harness(over: Partial<OnDemandOptions> = {}) {
  const clock = new FakeClock();
  const started: string[] = [];
  const stopped: string[] = [];
  const counts: string[] = [];
  const reviews: string[] = [];
  const usage = new Map<string, CacheUsage>();
  const errors = new Map<string, (err: unknown) => void>();
  let discoveries = 0;
  const m = new OnDemandCaches({
    exclude: ['secrets', 'leases.coordination.k8s.io'],
    idleTimeoutMs: 60_000,
    maxResources: 10,
    maxBytes: 1_000_000,
    configured: [{ group: '', resource: 'pods' }],
    discover: async (name) => {
      discoveries++;
      const [resource, version, ...group] = name.split('.');
      return resourceInfo(
        group.length ? `${group.join('.')}/${version}` : version!,
        resource!,
        'Thing',
      ) as ResourceInfo;
    },
    allowed: async (verb, info, ns) => {
      reviews.push(`${verb} ${info.gvr.resource} ${ns || '*'}`);
      return true;
    },
    start: (name, _info, onError) => {
      started.push(name);
      errors.set(name, onError);
      usage.set(name, { watchers: 0, bytes: 100 });
      return true;
    },
    stop: async (name) => {
      stopped.push(name);
      usage.delete(name);
    },
    usage: (name) => usage.get(name),
    totalBytes: () => [...usage.values()].reduce((a, u) => a + u.bytes, 0),
    clock,
    log: silentLogger,
    count: (event, reason) => counts.push(`${event}/${reason}`),
    ...over,
  });
  const discovered: string[] = [];
  return {
    m,
    clock,
    started,
    stopped,
    counts,
    reviews,
    usage,
    errors,
    discovered,
    discoveries: () => discoveries,
  };
}

const cm: ResourceRequest = { group: '', version: 'v1', resource: 'configmaps', namespace: 'a' };
const deploy: ResourceRequest = { group: 'apps', version: 'v1', resource: 'deployments' };

describe('OnDemandCaches (issue 15)', () => {
  it('a not-cached LIST starts one cache after discovery and list+watch reviews; concurrent requests start it once', async () => {
    const h = harness();
    h.m.request(cm, 'not-cached', 'list');
    h.m.request(cm, 'not-cached', 'watch');
    h.m.request(cm, 'not-cached', 'list');
    await flush();
    assert.deepEqual(h.started, ['configmaps.v1']);
    assert.equal(h.discoveries(), 1);
    assert.deepEqual(h.reviews.sort(), ['list configmaps *', 'watch configmaps *']);
    assert.deepEqual(h.counts, ['started/request']);
    assert.equal(OnDemandCaches.nameOf(deploy), 'deployments.v1.apps');
    h.m.close();
  });

  it('GETs, other reasons, configured and excluded resources start nothing', async () => {
    const h = harness();
    h.m.request(cm, 'not-cached', 'other');
    h.m.request(cm, 'other-version', 'list');
    h.m.request(cm, undefined, 'list');
    h.m.request({ group: '', version: 'v1', resource: 'pods' }, 'not-cached', 'list');
    h.m.request({ group: '', version: 'v1', resource: 'secrets' }, 'not-cached', 'list');
    h.m.request({ group: 'coordination.k8s.io', version: 'v1', resource: 'leases' }, 'not-cached', 'watch');
    await flush();
    assert.deepEqual(h.started, []);
    assert.deepEqual(h.counts, ['refused/excluded', 'refused/excluded']);
    h.m.close();
  });

  it('forbidden or not list+watchable: remembered for 60 s (no review storm), then asked again', async () => {
    let allow = false;
    const h = harness({ allowed: async () => allow });
    h.m.request(deploy, 'not-cached', 'list');
    await flush();
    h.m.request(deploy, 'not-cached', 'list');
    await flush();
    assert.deepEqual(h.counts, ['refused/forbidden']);
    assert.equal(h.discoveries(), 1);
    allow = true;
    await h.clock.step(60_000);
    h.m.request(deploy, 'not-cached', 'list');
    await flush();
    assert.deepEqual(h.started, ['deployments.v1.apps']);

    const nw = harness({
      discover: async (n) => {
        throw new DiscoveryError('KCP_ERR_DISCOVERY_NOT_LIST_WATCHABLE', n, 'no watch');
      },
    });
    nw.m.request(cm, 'not-cached', 'list');
    await flush();
    assert.deepEqual(nw.counts, ['refused/not-list-watchable']);
    h.m.close();
    nw.m.close();
  });

  it('--namespace: reviews in that namespace; other namespaces start nothing', async () => {
    const h = harness({ namespace: 'a' });
    h.m.request({ ...cm, namespace: 'b' }, 'not-cached', 'list');
    await flush();
    assert.deepEqual(h.started, []);
    h.m.request(cm, 'not-cached', 'list');
    await flush();
    assert.deepEqual(h.started, ['configmaps.v1']);
    assert.deepEqual(h.reviews.slice(-2).sort(), ['list configmaps a', 'watch configmaps a']);
    h.m.close();
  });

  it('passed-through watches with a handover are ended once the cache synced; untracked ones and others are not', async () => {
    const h = harness();
    const ended: string[] = [];
    assert.doesNotThrow(() => h.m.trackWatch(deploy, () => ended.push('unrelated'))());
    h.m.request(cm, 'not-cached', 'watch');
    h.m.trackWatch(cm, () => ended.push('w1'));
    const untrack = h.m.trackWatch(cm, () => ended.push('w2'));
    untrack();
    h.m.trackWatch(cm, undefined); // kubectl get -w: no handover
    await flush();
    h.m.trackWatch(cm, () => ended.push('w3'));
    h.m.synced('configmaps.v1');
    assert.deepEqual(ended, ['w1', 'w3']);
    h.m.synced('configmaps.v1');
    assert.deepEqual(ended, ['w1', 'w3'], 'once');
    h.m.trackWatch(cm, () => ended.push('late'));
    h.m.synced('configmaps.v1');
    assert.deepEqual(ended, ['w1', 'w3'], 'registered after the sync: stays passed through');
    h.m.close();
  });

  it('the handover waits for the cache to prove the gap from the oldest client RV (asked at sync), then ends every watch', async () => {
    // The control plane's first step: each informer's watch passed upstream resumed after its
    // handover from an RV below the cache's window, and waited ~1 s (0.4–4 s at load 20–57)
    // for the upstream's proof with no watch at all. The proof is now asked at sync, while the
    // passed-through watches still deliver events, and they end once it answered.
    const proofs: string[] = [];
    let answer!: (ok: boolean) => void;
    const h = harness({
      extendWindowBack: (name, rv) => {
        proofs.push(`${name} ${rv}`);
        return new Promise<boolean>((r) => {
          answer = r;
        });
      },
    });
    const ended: string[] = [];
    h.m.request(cm, 'not-cached', 'watch');
    h.m.trackWatch(
      cm,
      () => ended.push('at 12'),
      () => 12n,
    );
    h.m.trackWatch(
      cm,
      () => ended.push('at 9'),
      () => 9n,
    );
    h.m.trackWatch(
      cm,
      () => ended.push('unknown position'),
      () => undefined,
    );
    h.m.trackWatch(cm, () => ended.push('no position'));
    await flush();
    h.m.synced('configmaps.v1');
    assert.deepEqual(proofs, ['configmaps.v1 9'], 'one proof, from the oldest RV a client stands at');
    assert.deepEqual(ended, ['unknown position', 'no position'], 'nothing to prove for these: ended at once');
    await flush();
    assert.deepEqual(ended, ['unknown position', 'no position'], 'the others wait for the proof');
    answer(false);
    await flush();
    assert.deepEqual(
      ended,
      ['unknown position', 'no position', 'at 12', 'at 9'],
      'ended once it answered, even a failed proof (their resume gets the 410 it would anyway)',
    );
    h.m.close();
  });

  it('without extendWindowBack (and for a watch without a position) the handover ends watches at sync, as before', async () => {
    const h = harness();
    const ended: string[] = [];
    h.m.request(cm, 'not-cached', 'watch');
    h.m.trackWatch(
      cm,
      () => ended.push('at 12'),
      () => 12n,
    );
    await flush();
    h.m.synced('configmaps.v1');
    assert.deepEqual(ended, ['at 12']);
    h.m.close();
  });

  it('a passed-through watch without handover stays open after the sync and keeps the cache in use until it ends', async () => {
    const h = harness();
    h.m.request(cm, 'not-cached', 'watch');
    const untrack = h.m.trackWatch(cm, undefined);
    await flush();
    h.m.synced('configmaps.v1');
    await h.clock.step(200_000);
    await flush();
    assert.deepEqual(h.stopped, [], 'its open watch keeps the cache');
    // The idle check (every 15 s here) counts it as a use.
    assert.ok(h.clock.now() - h.m.lastUsed('configmaps.v1')! <= 15_000);
    untrack();
    await h.clock.step(120_000);
    await flush();
    assert.deepEqual(h.stopped, ['configmaps.v1'], 'idle once it ended');
    h.m.close();
  });

  it('idle: stopped after the idle timeout without requests or watchers; a request or watcher keeps it', async () => {
    const h = harness();
    h.m.request(cm, 'not-cached', 'list');
    await flush();
    const t0 = h.clock.now();
    assert.equal(h.m.lastUsed('configmaps.v1'), t0);
    await h.clock.step(50_000);
    h.m.request(cm, undefined, 'other'); // served from the cache: a use
    assert.equal(h.m.lastUsed('configmaps.v1'), t0 + 50_000);
    await h.clock.step(50_000);
    await flush();
    assert.deepEqual(h.stopped, []);
    h.usage.set('configmaps.v1', { watchers: 1, bytes: 100 });
    await h.clock.step(120_000);
    await flush();
    assert.deepEqual(h.stopped, [], 'an open watcher keeps it');
    h.usage.set('configmaps.v1', { watchers: 0, bytes: 100 });
    await h.clock.step(75_000);
    await flush();
    assert.deepEqual(h.stopped, ['configmaps.v1']);
    assert.deepEqual(h.counts, ['started/request', 'stopped/idle']);
    assert.equal(h.m.has('configmaps.v1'), false);
    h.m.request(cm, 'not-cached', 'list');
    await flush();
    assert.deepEqual(h.started, ['configmaps.v1', 'configmaps.v1'], 'the next request starts it again');
    h.m.close();
  });

  it('caps: one more than --auto-max-resources evicts the least recently used idle cache; none idle: not started', async () => {
    const h = harness({ maxResources: 2, idleTimeoutMs: 600_000 });
    const req = (resource: string): ResourceRequest => ({ group: '', version: 'v1', resource });
    h.m.request(req('a'), 'not-cached', 'list');
    await flush();
    await h.clock.step(1_000);
    h.m.request(req('b'), 'not-cached', 'list');
    await flush();
    h.m.synced('a.v1');
    h.m.synced('b.v1');
    await h.clock.step(61_000);
    h.m.request(req('a'), undefined, 'list'); // a is now the most recently used
    h.m.request(req('c'), 'not-cached', 'list');
    await flush();
    assert.deepEqual(h.stopped, ['b.v1']);
    assert.deepEqual(h.started, ['a.v1', 'b.v1', 'c.v1']);
    h.usage.set('a.v1', { watchers: 1, bytes: 1 });
    h.usage.set('c.v1', { watchers: 2, bytes: 1 });
    h.m.request(req('d'), 'not-cached', 'list');
    await flush();
    assert.deepEqual(h.started, ['a.v1', 'b.v1', 'c.v1'], 'nothing idle to evict');
    assert.equal(h.counts.at(-1), 'refused/at-capacity');
    h.m.close();
  });

  it('caps: cached bytes over --auto-max-bytes evict idle caches first', async () => {
    const h = harness({ maxBytes: 150, idleTimeoutMs: 600_000 });
    h.m.request(cm, 'not-cached', 'list');
    await flush();
    h.m.synced('configmaps.v1');
    await h.clock.step(60_000);
    h.usage.set('configmaps.v1', { watchers: 0, bytes: 200 });
    h.m.request(deploy, 'not-cached', 'list');
    await flush();
    assert.deepEqual(h.stopped, ['configmaps.v1']);
    assert.deepEqual(h.started, ['configmaps.v1', 'deployments.v1.apps']);
    h.m.close();
  });

  it('a 404 from its LIST/WATCH (the CRD deleted) drops the cache; other errors do not', async () => {
    const h = harness();
    h.m.request(deploy, 'not-cached', 'list');
    await flush();
    h.errors.get('deployments.v1.apps')!(new UpstreamError(500, 'boom'));
    await flush();
    assert.deepEqual(h.stopped, []);
    h.errors.get('deployments.v1.apps')!(
      new UpstreamError(404, 'the server could not find the requested resource'),
    );
    await flush();
    assert.deepEqual(h.stopped, ['deployments.v1.apps']);
    assert.equal(h.counts.at(-1), 'stopped/resource-gone');
    h.m.close();
  });

  describe('issue 15: a cache restricted to the requested namespace', () => {
    /** A harness whose identity may list/watch where `may(verb, ns)` says ("*" = cluster-wide), logging to `lines`. */
    function scoped(may: (verb: string, ns: string) => boolean, over: Partial<OnDemandOptions> = {}) {
      const { logger: log, lines } = logLines<{ msg: string; namespace?: string; resource?: string }>();
      const infos: ResourceInfo[] = [];
      const h = harness({
        log,
        allowed: async (verb, info, ns) => {
          h.reviews.push(`${verb} ${info.gvr.resource} ${ns || '*'}`);
          return may(verb, ns || '*');
        },
        start: (name, info) => {
          h.started.push(name);
          infos.push(info);
          h.usage.set(name, { watchers: 0, bytes: 100 });
          return true;
        },
        ...over,
      });
      return { ...h, lines, infos, refusals: () => lines.filter((l) => l.msg.startsWith('not caching')) };
    }
    const inA = (_verb: string, ns: string) => ns === 'a';

    it('denied cluster-wide, allowed in the request namespace: starts one cache restricted to it; other namespaces and all namespaces start nothing', async () => {
      const h = scoped(inA);
      h.m.request(cm, 'not-cached', 'list');
      await flush();
      assert.deepEqual(h.started, ['configmaps.v1']);
      assert.equal(h.infos[0]?.namespace, 'a');
      assert.deepEqual(h.reviews.sort(), [
        'list configmaps *',
        'list configmaps a',
        'watch configmaps *',
        'watch configmaps a',
      ]);
      assert.deepEqual(h.counts, ['started/request']);
      assert.equal(
        h.lines.find((l) => l.msg.startsWith('caching on demand'))?.msg,
        'caching on demand: the first LIST/WATCH of it started a cache restricted to namespace a',
      );
      // The registry answers other namespaces and all namespaces `namespace-outside-cache`;
      // whatever the reason, an existing cache is never doubled or widened.
      await h.clock.step(1_000);
      const t = h.clock.now();
      h.m.request({ ...cm, namespace: 'b' }, 'namespace-outside-cache', 'list');
      h.m.request({ ...cm, namespace: undefined }, 'namespace-outside-cache', 'watch');
      await flush();
      assert.deepEqual(h.started, ['configmaps.v1']);
      assert.equal(h.reviews.length, 4, 'no review for them');
      assert.equal(h.m.lastUsed('configmaps.v1'), t - 1_000, 'requests outside its namespace do not use it');
      h.m.request(cm, undefined, 'list');
      assert.equal(h.m.lastUsed('configmaps.v1'), t);
      h.m.close();
    });

    it('allowed cluster-wide: not restricted, no namespace review', async () => {
      const h = scoped(() => true);
      h.m.request(cm, 'not-cached', 'list');
      await flush();
      assert.equal(h.infos[0]?.namespace, undefined);
      assert.deepEqual(h.reviews.sort(), ['list configmaps *', 'watch configmaps *']);
      h.m.close();
    });

    it('denied cluster-wide and in the namespace: refused once ("may not list it cluster-wide nor in namespace a"), remembered for that namespace and cluster-wide; another namespace reviews only itself', async () => {
      const h = scoped(() => false);
      h.m.request(cm, 'not-cached', 'list');
      await flush();
      h.m.request(cm, 'not-cached', 'list');
      h.m.request(cm, 'not-cached', 'watch');
      h.m.request({ ...cm, namespace: undefined }, 'not-cached', 'list');
      await flush();
      assert.deepEqual(h.started, []);
      assert.deepEqual(h.counts, ['refused/forbidden']);
      assert.equal(h.reviews.length, 4, 'cluster-wide and a, once');
      assert.deepEqual(
        h.refusals().map((l) => [l.msg, l.resource, l.namespace]),
        [
          [
            "not caching on demand: the proxy's identity may not list it cluster-wide nor in namespace a; its requests pass upstream",
            'configmaps',
            'a',
          ],
        ],
      );
      h.m.request({ ...cm, namespace: 'b' }, 'not-cached', 'list');
      await flush();
      assert.deepEqual(h.reviews.slice(4).sort(), ['list configmaps b', 'watch configmaps b']);
      assert.deepEqual(h.counts, ['refused/forbidden', 'refused/forbidden']);
      // After the refusal's time, asked again.
      await h.clock.step(60_000);
      h.m.request(cm, 'not-cached', 'list');
      await flush();
      assert.equal(h.reviews.length, 10);
      h.m.close();
    });

    it('a cluster-wide request denied first: a later request in a namespace reviews that namespace only and may start a cache there', async () => {
      const h = scoped(inA);
      h.m.request({ ...cm, namespace: undefined }, 'not-cached', 'list');
      await flush();
      assert.deepEqual(h.counts, ['refused/forbidden']);
      assert.equal(
        h.refusals()[0]?.msg,
        "not caching on demand: the proxy's identity may not list it cluster-wide; its requests pass upstream",
      );
      h.m.request({ ...cm, namespace: undefined }, 'not-cached', 'watch');
      await flush();
      assert.equal(h.reviews.length, 2, 'remembered');
      h.m.request(cm, 'not-cached', 'list');
      await flush();
      assert.deepEqual(h.reviews.slice(2).sort(), ['list configmaps a', 'watch configmaps a']);
      assert.deepEqual(h.started, ['configmaps.v1']);
      assert.equal(h.infos[0]?.namespace, 'a');
      h.m.close();
    });

    it('names the verb denied at each scope', async () => {
      const h = scoped((verb, ns) => (ns === '*' ? verb === 'watch' : verb === 'list'));
      h.m.request(cm, 'not-cached', 'list');
      await flush();
      assert.equal(
        h.refusals()[0]?.msg,
        "not caching on demand: the proxy's identity may not list it cluster-wide nor watch it in namespace a; its requests pass upstream",
      );
      h.m.close();
    });

    it('a cluster-scoped resource asked under a namespace is never reviewed in it', async () => {
      const h = scoped(inA, {
        discover: async () => resourceInfo('v1', 'nodes', 'Node', { namespaced: false }),
      });
      h.m.request({ group: '', version: 'v1', resource: 'nodes', namespace: 'a' }, 'not-cached', 'list');
      await flush();
      assert.deepEqual(h.reviews.sort(), ['list nodes *', 'watch nodes *']);
      assert.deepEqual(h.counts, ['refused/forbidden']);
      h.m.request({ group: '', version: 'v1', resource: 'nodes', namespace: 'b' }, 'not-cached', 'list');
      await flush();
      assert.equal(h.reviews.length, 2, 'the whole resource is refused');
      h.m.close();
    });

    it('a review that fails is an error refusal, not a namespace start', async () => {
      const h = scoped(inA, {
        allowed: async (_verb, _info, ns) => {
          if (ns === 'a') throw new Error('connection refused');
          return false;
        },
      });
      h.m.request(cm, 'not-cached', 'list');
      await flush();
      assert.deepEqual(h.started, []);
      assert.deepEqual(h.counts, ['refused/error']);
      assert.match(h.refusals()[0]?.msg ?? '', /SelfSubjectAccessReview failed: connection refused/);
      h.m.close();
    });

    it('--namespace: only that namespace is reviewed, never cluster-wide', async () => {
      const h = scoped(() => false, { namespace: 'a' });
      h.m.request(cm, 'not-cached', 'list');
      await flush();
      assert.deepEqual(h.reviews.sort(), ['list configmaps a', 'watch configmaps a']);
      assert.equal(
        h.refusals()[0]?.msg,
        "not caching on demand: the proxy's identity may not list it in namespace a; its requests pass upstream",
      );
      h.m.close();
    });

    it('--namespace: requests outside it of a namespaced resource cost one discovery, then none for the refusal TTL', async () => {
      const h = scoped(() => true, { namespace: 'a' });
      h.m.request({ ...cm, namespace: 'b' }, 'not-cached', 'list');
      await flush();
      h.m.request({ ...cm, namespace: undefined }, 'not-cached', 'list');
      h.m.request({ ...cm, namespace: 'c' }, 'not-cached', 'watch');
      await flush();
      assert.equal(h.discoveries(), 1);
      assert.deepEqual(h.reviews, [], 'nothing reviewed outside --namespace');
      assert.deepEqual(h.started, []);
      // Its own namespace still starts one.
      h.m.request(cm, 'not-cached', 'list');
      await flush();
      assert.deepEqual(h.started, ['configmaps.v1']);
      h.m.close();
    });

    it('synced: ends the passed-through watches of its namespace only; the others go on untracked and do not keep it in use', async () => {
      const h = scoped(inA, { idleTimeoutMs: 10_000 });
      const ended: string[] = [];
      h.m.request(cm, 'not-cached', 'watch');
      h.m.trackWatch(cm, () => ended.push('a'));
      h.m.trackWatch({ ...cm, namespace: 'b' }, () => ended.push('b'));
      h.m.trackWatch({ ...cm, namespace: undefined }, () => ended.push('all'));
      await flush();
      h.m.synced('configmaps.v1');
      assert.deepEqual(ended, ['a']);
      await h.clock.step(20_000);
      await flush();
      assert.deepEqual(
        h.stopped,
        ['configmaps.v1'],
        'idle: the watches of b and of all namespaces are not its use',
      );
      h.m.close();
    });
  });
});

/** The product logger at `level` whose lines land in the returned array. */
function capture(level = 'debug') {
  const { logger: log, lines } = logLines<{
    level: number;
    msg: string;
    resource?: string;
    version?: string;
    entry?: string;
  }>(level);
  return { log, lines };
}

const notFound = (n: string, gvMissing: boolean) => {
  const err = new DiscoveryError('KCP_ERR_DISCOVERY_NOT_FOUND', n, `resource "${n}" is not served upstream`);
  err.groupVersionMissing = gvMissing;
  return err;
};

describe('OnDemandCaches: issue 15 attack findings', () => {
  const things: ResourceRequest = {
    group: 'attack.example.com',
    version: 'v1',
    resource: 'thing29s',
    namespace: 'default',
  };
  const THINGS = 'thing29s.v1.attack.example.com';

  it('finding 1: after a relist, a resource whose scope changed is stopped (resource-gone); the next request caches it anew', async () => {
    let namespaced = true;
    const c = capture('info');
    const h = harness({
      log: c.log,
      discover: async () => resourceInfo('attack.example.com/v1', 'thing29s', 'Thing29', { namespaced }),
    });
    h.m.request(things, 'not-cached', 'list');
    await flush();
    h.m.relisted(THINGS); // before the first sync: ignored
    await flush();
    assert.equal(h.discoveries(), 0, 'the overridden discover does not count; nothing stopped');
    h.m.synced(THINGS);
    h.m.relisted(THINGS); // same scope: kept
    await flush();
    assert.deepEqual(h.stopped, []);
    namespaced = false; // the CRD re-created Cluster-scoped
    h.m.relisted(THINGS);
    await flush();
    assert.deepEqual(h.stopped, [THINGS]);
    assert.equal(h.counts.at(-1), 'stopped/resource-gone');
    const line = c.lines.find((l) => l.msg.startsWith('on-demand cache stopped: its resource changed'));
    assert.equal((line as { change?: string } | undefined)?.change, 'scope Namespaced → Cluster');
    assert.equal(line?.resource, 'thing29s.attack.example.com', 'named as /debug/cache names it');
    assert.equal(line?.version, 'v1');
    h.m.request({ ...things, namespace: undefined }, 'not-cached', 'list');
    await flush();
    assert.deepEqual(h.started, [THINGS, THINGS]);
    h.m.close();
  });

  it('finding 1: discovery trailing the storage: asked again 5 s after a relist; gone or not list+watchable also stops; a failed discovery or 500 keeps it', async () => {
    let answer: () => ResourceInfo = () => resourceInfo('example.com/v1', 'widgets', 'Widget');
    let asked = 0;
    const h = harness({
      discover: async () => {
        asked++;
        return answer();
      },
    });
    const w: ResourceRequest = { group: 'example.com', version: 'v1', resource: 'widgets' };
    h.m.request(w, 'not-cached', 'list');
    await flush();
    h.m.synced('widgets.v1.example.com');
    asked = 0;
    h.m.relisted('widgets.v1.example.com');
    await flush();
    assert.equal(asked, 1);
    answer = () => resourceInfo('example.com/v1', 'widgets', 'Widget', { namespaced: false });
    await h.clock.step(5_000);
    await flush();
    assert.equal(asked, 2);
    assert.deepEqual(h.stopped, ['widgets.v1.example.com']);

    // Cluster → Namespaced, seen from an error of its ListAndWatch (not a 404).
    answer = () => resourceInfo('example.com/v1', 'widgets', 'Widget', { namespaced: false });
    h.m.request(w, 'not-cached', 'list');
    await flush();
    h.m.synced('widgets.v1.example.com');
    answer = () => {
      throw new DiscoveryError('KCP_ERR_DISCOVERY_FAILED', 'widgets', 'boom');
    };
    h.errors.get('widgets.v1.example.com')!(new UpstreamError(500, 'boom'));
    await flush();
    assert.equal(h.stopped.length, 1, 'a failed discovery changes nothing');
    answer = () => resourceInfo('example.com/v1', 'widgets', 'Widget', { namespaced: true });
    h.errors.get('widgets.v1.example.com')!(new UpstreamError(500, 'boom'));
    await flush();
    assert.deepEqual(h.stopped, ['widgets.v1.example.com', 'widgets.v1.example.com']);

    h.m.request(w, 'not-cached', 'list');
    await flush();
    h.m.synced('widgets.v1.example.com');
    answer = () => {
      throw notFound('widgets.v1.example.com', false);
    };
    h.m.relisted('widgets.v1.example.com');
    await flush();
    assert.equal(h.stopped.length, 3, 'gone from discovery');
    assert.deepEqual(
      h.counts.filter((x) => x.startsWith('stopped')),
      ['stopped/resource-gone', 'stopped/resource-gone', 'stopped/resource-gone'],
    );
    h.m.close();
  });

  it('finding 3: only requests the cache serves or could serve are a use; a not-cached Table request starts nothing', async () => {
    const h = harness();
    h.m.request(cm, 'media-type', 'list'); // what handle-request passes for a not-cached Table LIST
    await flush();
    assert.deepEqual(h.started, []);
    h.m.request(cm, 'not-cached', 'list');
    await flush();
    const t0 = h.clock.now();
    for (const r of [
      'media-type',
      'namespace-outside-cache',
      'not-get',
      'subresource',
      'impersonation',
    ] as const) {
      await h.clock.step(1_000);
      h.m.request(cm, r, 'other');
    }
    assert.equal(h.m.lastUsed('configmaps.v1'), t0, 'none of them used it');
    await h.clock.step(1_000);
    h.m.request(cm, 'not-synced', 'list');
    assert.equal(h.m.lastUsed('configmaps.v1'), t0 + 6_000);
    await h.clock.step(1_000);
    h.m.request(cm, undefined, 'list');
    assert.equal(h.m.lastUsed('configmaps.v1'), t0 + 7_000);
    h.m.close();
  });

  it('finding 5: no thrash over --auto-max-resources: a victim must be synced and unused for min(60 s, idle timeout); else at-capacity', async () => {
    const h = harness({ maxResources: 2, idleTimeoutMs: 600_000 });
    const req = (resource: string): ResourceRequest => ({ group: '', version: 'v1', resource });
    h.m.request(req('a'), 'not-cached', 'list');
    h.m.request(req('b'), 'not-cached', 'list');
    await flush();
    await h.clock.step(120_000);
    h.m.request(req('c'), 'not-cached', 'list');
    await flush();
    assert.deepEqual(h.stopped, [], 'not synced: never evicted');
    assert.equal(h.counts.at(-1), 'refused/at-capacity');
    h.m.synced('a.v1');
    h.m.synced('b.v1');
    h.m.request(req('a'), undefined, 'list');
    h.m.request(req('b'), undefined, 'list');
    await h.clock.step(30_000);
    h.m.request(req('d'), 'not-cached', 'list');
    await flush();
    assert.deepEqual(h.stopped, [], 'used 30 s ago: not evicted');
    assert.deepEqual(h.started, ['a.v1', 'b.v1']);
    await h.clock.step(30_000);
    h.m.request(req('e'), 'not-cached', 'list');
    await flush();
    assert.deepEqual(h.stopped, ['a.v1'], 'unused for 60 s: the LRU one goes');
    assert.deepEqual(h.started, ['a.v1', 'b.v1', 'e.v1']);

    h.m.close();
  });

  it('finding 6: a group-version discovery did not find is remembered 5 s (one discovery for its names), logged at debug', async () => {
    const c = capture('info');
    const h = harness({
      log: c.log,
      discover: async (n) => {
        h.discovered.push(n);
        throw notFound(n, n.includes('bogus'));
      },
    });
    const bogus = (resource: string): ResourceRequest => ({
      group: 'g1.bogus.example.com',
      version: 'v1',
      resource,
    });
    h.m.request(bogus('things'), 'not-cached', 'list');
    await flush();
    h.m.request(bogus('others'), 'not-cached', 'list');
    h.m.request(bogus('more'), 'not-cached', 'watch');
    await flush();
    assert.deepEqual(h.discovered, ['things.v1.g1.bogus.example.com']);
    // A resource missing from a served group-version does not hide its neighbours.
    h.m.request({ group: 'apps', version: 'v1', resource: 'nope1' }, 'not-cached', 'list');
    h.m.request({ group: 'apps', version: 'v1', resource: 'nope2' }, 'not-cached', 'list');
    await flush();
    assert.equal(h.discovered.length, 3);
    assert.deepEqual(
      c.lines.filter((l) => l.msg.startsWith('not caching')),
      [],
      'at debug, not info',
    );
    await h.clock.step(5_000);
    h.m.request(bogus('others'), 'not-cached', 'list');
    await flush();
    assert.equal(h.discovered.at(-1), 'others.v1.g1.bogus.example.com', 'forgotten after 5 s');
    h.m.close();
  });

  it('finding 2: a warning at start without secrets; once per --auto-exclude entry that misses the group or reads as resource.version', async () => {
    const c = capture('info');
    const h = harness({ log: c.log, exclude: ['deployments', 'secrets.v1'] });
    const warns = () => c.lines.filter((l) => l.level === 40).map((l) => l.msg);
    assert.deepEqual(warns(), [
      '--auto-exclude does not contain secrets: Secrets a client lists or watches are cached in memory (the list replaces the default secrets; add it back to keep them out)',
    ]);
    h.m.request(deploy, 'not-cached', 'list');
    h.m.request({ group: '', version: 'v1', resource: 'secrets' }, 'not-cached', 'list');
    await flush();
    assert.deepEqual(h.started, ['deployments.v1.apps', 'secrets.v1'], 'neither entry excludes anything');
    await h.clock.step(120_000);
    h.m.request(deploy, 'not-cached', 'list');
    h.m.request({ group: 'extensions', version: 'v1beta1', resource: 'deployments' }, 'not-cached', 'list');
    await flush();
    assert.deepEqual(warns().slice(1), [
      '--auto-exclude entry deployments names the resource but not the group of deployments.apps: it does not exclude it; write deployments.apps',
      '--auto-exclude entry secrets.v1 is read as resource secrets of group v1 (entries are resource[.group], no version): it does not exclude secrets; write secrets',
    ]);
    const quiet = capture('info');
    harness({ log: quiet.log }).m.close();
    assert.deepEqual(quiet.lines, [], 'the default list: no warning');
    h.m.close();
  });
});
