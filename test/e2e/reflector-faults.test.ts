/**
 * The Reflector against private real apiservers that misbehave on purpose: WatchList off (LIST +
 * WATCH fallback), a restart mid-watch, no watch cache + fast etcd compaction (410 on resume →
 * relist, deleted objects gone), and a frozen apiserver (SIGSTOP → liveness restart).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { directList, MapSink, seedConfigMaps } from '../../bench/support/sync-support.ts';
import type { ResourceInfo } from '../../src/apimachinery/gvr.ts';
import { HttpListerWatcher, type ListerWatcher, type WatchStream } from '../../src/reflector/list-watch.ts';
import { Reflector, type ReflectorOptions } from '../../src/reflector/reflector.ts';
import { createUpstream, type Upstream } from '../../src/upstream/connection.ts';
import { discoverResource } from '../../src/upstream/discovery.ts';
import { readLines, upstreamGet } from '../../src/upstream/request.ts';
import { type Fixture, startFixture } from '../fixture/index.ts';

/** Wraps a ListerWatcher: `cut()` breaks the open streams, `hold()` parks new requests until `release()`. */
class CuttableLW implements ListerWatcher {
  readonly calls: string[] = [];
  readonly #inner: ListerWatcher;
  #open = new Set<WatchStream>();
  #held: Promise<void> | undefined;
  #release: (() => void) | undefined;
  constructor(inner: ListerWatcher) {
    this.#inner = inner;
  }
  hold(): void {
    this.#held = new Promise((r) => {
      this.#release = r;
    });
  }
  release(): void {
    this.#release?.();
    this.#held = undefined;
  }
  cut(): void {
    for (const s of this.#open) s.close();
    this.#open.clear();
  }
  async list(...a: Parameters<ListerWatcher['list']>) {
    this.calls.push(`list@${a[0].resourceVersion}`);
    await this.#held;
    return this.#inner.list(...a);
  }
  async watch(...a: Parameters<ListerWatcher['watch']>) {
    this.calls.push(`${a[0].sendInitialEvents ? 'watch-list' : 'watch'}@${a[0].resourceVersion}`);
    await this.#held;
    const s = await this.#inner.watch(...a);
    this.#open.add(s);
    return {
      next: () => s.next(),
      close: () => {
        this.#open.delete(s);
        s.close();
      },
    };
  }
}

function sameVersions(a: Map<string, string>, b: Map<string, string>): boolean {
  if (a.size !== b.size) return false;
  for (const [k, v] of a) if (b.get(k) !== v) return false;
  return true;
}

async function converged(
  up: Upstream,
  sink: MapSink,
  ns: string,
  timeoutMs: number,
): Promise<Map<string, string>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const d = await directList(up, `/api/v1/namespaces/${ns}/configmaps`);
    if (sameVersions(sink.versions(), d.versions)) return d.versions;
    if (Date.now() > deadline) {
      assert.deepEqual(sink.versions(), d.versions, 'cache did not converge to the direct LIST');
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Whether a watch from `rv` is answered with an ERROR 410 event (compacted). */
async function watchExpired(up: Upstream, path: string, rv: string): Promise<boolean> {
  const res = await upstreamGet(up, path, { watch: 1, resourceVersion: rv, timeoutSeconds: 5 });
  try {
    for await (const line of readLines(res.body)) {
      const ev = JSON.parse(line.toString()) as { type: string; object: { code?: number } };
      return ev.type === 'ERROR' && ev.object.code === 410;
    }
    return false;
  } finally {
    res.body.destroy();
  }
}

function start(up: Upstream, info: ResourceInfo, ns: string, opts: Partial<ReflectorOptions> = {}) {
  const lw = new CuttableLW(new HttpListerWatcher(up, info, ns));
  const sink = new MapSink();
  const r = new Reflector({ info, lw, sink, ...opts });
  const done = r.run();
  return {
    lw,
    sink,
    r,
    stop: async () => {
      r.stop();
      await done;
    },
  };
}

describe('reflector: WatchList feature gate off, and an apiserver restart', () => {
  let f: Fixture;
  let up: Upstream;
  let info: ResourceInfo;
  before(async () => {
    f = await startFixture({ apiserverFlags: ['--feature-gates=WatchList=false'] });
    up = await createUpstream({ kubeconfig: f.kubeconfigs.adminToken });
    info = await discoverResource(up, 'configmaps');
  });
  after(async () => {
    await up?.close();
    await f?.stop();
  });

  test('syncs 5,000 ConfigMaps through the LIST + WATCH fallback', async () => {
    const ns = await f.newNamespace('refl-fb');
    await seedConfigMaps(up, ns, 5000, { bytes: 1024 });
    const t = start(up, info, ns);
    try {
      await t.sink.waitFor(() => t.sink.replaces === 1, 60_000, 'initial sync');
      const st = t.r.status();
      assert.equal(st.lastSyncMode, 'list');
      assert.equal(st.lastSyncObjects, 5000);
      assert.equal(st.watchListFallbacks, 1);
      assert.deepEqual(t.lw.calls, ['watch-list@', 'list@0', `watch@${st.lastResourceVersion}`]);
      const direct = await directList(up, `/api/v1/namespaces/${ns}/configmaps`);
      assert.deepEqual(t.sink.versions(), direct.versions);
    } finally {
      await t.stop();
    }
  });

  test('recovers when the apiserver restarts mid-watch', async () => {
    const ns = await f.newNamespace('refl-rs');
    await seedConfigMaps(up, ns, 20);
    const t = start(up, info, ns);
    try {
      await t.sink.waitFor(() => t.sink.replaces === 1, 30_000, 'initial sync');
      await f.restartApiserver();
      await seedConfigMaps(up, ns, 1, { prefix: 'after-restart' });
      const del = await f.kubectl(['-n', ns, 'delete', 'configmap', 'cm-000003']);
      assert.equal(del.code, 0, del.stderr);
      const v = await converged(up, t.sink, ns, 60_000);
      assert.equal(v.size, 20);
      assert.equal(v.has(`${ns}/after-restart-000000`), true);
      assert.equal(t.sink.objects.has(`${ns}/cm-000003`), false);
      assert.ok(t.r.status().watchRestarts >= 1);
    } finally {
      await t.stop();
    }
  });
});

describe('reflector: no watch cache, fast compaction', () => {
  let f: Fixture;
  let up: Upstream;
  let info: ResourceInfo;
  before(async () => {
    f = await startFixture({ apiserverFlags: ['--watch-cache=false', '--etcd-compaction-interval=2s'] });
    up = await createUpstream({ kubeconfig: f.kubeconfigs.adminToken });
    info = await discoverResource(up, 'configmaps');
  });
  after(async () => {
    await up?.close();
    await f?.stop();
  });

  test('a stream cut while objects change and get compacted away: 410 on resume → relist, deleted object gone', async () => {
    const ns = await f.newNamespace('refl-410');
    await seedConfigMaps(up, ns, 30);
    const t = start(up, info, ns);
    try {
      await t.sink.waitFor(() => t.sink.replaces === 1, 30_000, 'initial sync');
      // A watch cut within 1 s without events would be a "very short watch" (relist after
      // backoff); let it live long enough to be resumed instead.
      await new Promise((r) => setTimeout(r, 1_200));
      const rvBefore = t.r.lastSyncResourceVersion();
      t.lw.hold();
      t.lw.cut();
      for (const i of [1, 2, 3]) {
        const r = await f.kubectl(['-n', ns, 'label', 'configmap', `cm-00000${i}`, `v=${i}`]);
        assert.equal(r.code, 0, r.stderr);
      }
      const d = await f.kubectl(['-n', ns, 'delete', 'configmap', 'cm-000007', 'cm-000008']);
      assert.equal(d.code, 0, d.stderr);
      // Wait until etcd has compacted past the reflector's RV: a direct watch from it gets 410.
      const deadline = Date.now() + 30_000;
      while (!(await watchExpired(up, `/api/v1/namespaces/${ns}/configmaps`, rvBefore))) {
        assert.ok(Date.now() < deadline, 'etcd did not compact in 30 s');
        await new Promise((r) => setTimeout(r, 500));
      }
      t.lw.release();
      const v = await converged(up, t.sink, ns, 60_000);
      assert.equal(v.size, 28);
      assert.equal(t.sink.objects.has(`${ns}/cm-000007`), false);
      assert.equal(t.sink.objects.has(`${ns}/cm-000008`), false);
      assert.equal(t.sink.objects.get(`${ns}/cm-000002`)?.object.metadata.labels?.v, '2');
      const st = t.r.status();
      assert.equal(
        st.relists.expired,
        1,
        `${JSON.stringify(st)} ${t.lw.calls.join(' ')} rvBefore=${rvBefore}`,
      );
      // Resumed at the last RV, got 410, relisted by watch-list from that RV (client-go).
      assert.deepEqual(t.lw.calls.slice(0, 3), [
        'watch-list@',
        `watch@${rvBefore}`,
        `watch-list@${rvBefore}`,
      ]);
    } finally {
      await t.stop();
    }
  });

  test('a frozen apiserver (SIGSTOP, no watch cache: no bookmarks) is not live after the window; the stream restarts once its timeoutSeconds passed by a window', async () => {
    const ns = await f.newNamespace('refl-live');
    await seedConfigMaps(up, ns, 5);
    // Without the watch cache the apiserver sends no periodic bookmark: a silent stream is only
    // presumed half-open once the longest timeoutSeconds (6 s here) passed by the window (3 s).
    const t = start(up, info, ns, {
      livenessWindowMs: 3_000,
      minWatchTimeoutSeconds: 5,
      maxWatchTimeoutSeconds: 6,
    });
    const pid = f.pids().apiserver;
    try {
      await t.sink.waitFor(() => t.sink.replaces === 1 && t.sink.live, 30_000, 'initial sync');
      const restarts = t.r.status().watchRestarts;
      process.kill(pid, 'SIGSTOP');
      try {
        await t.sink.waitFor(() => !t.sink.live, 10_000, 'live=false');
        await t.sink.waitFor(() => t.r.status().watchRestarts > restarts, 20_000, 'restarted while frozen');
      } finally {
        process.kill(pid, 'SIGCONT');
      }
      assert.equal(t.r.status().periodicBookmarks, false);
      await seedConfigMaps(up, ns, 1, { prefix: 'after-freeze' });
      await t.sink.waitFor(
        () => t.sink.objects.has(`${ns}/after-freeze-000000`),
        30_000,
        'event after SIGCONT',
      );
      assert.equal(t.r.status().relists.expired, undefined);
      assert.equal(t.sink.live, true);
      await converged(up, t.sink, ns, 20_000);
    } finally {
      await t.stop();
    }
  });
});
