/**
 * A parked watcher against the real apiserver (KEP-6268 behaviour): a raw watch client that
 * stops reading (its socket paused) while 2,000 objects are deleted is parked by
 * the proxy; when it reads again it gets every event once, in order, no 410 and no relist —
 * exactly the events a client watching the apiserver directly from the same RV received.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type Agent, request } from 'undici';
import type { Fixture } from '../fixture/index.ts';
import { adminRequest, openAdminSession } from '../support/admin-session.ts';
import { eventually } from '../support/eventually.ts';
import { startProxy } from '../support/proxy.ts';
import { openPausedWatch, type RawWatchEvent, readWatchEvents } from '../support/raw-watch.ts';

describe('parked watchers', () => {
  let f: Fixture;
  let agent: Agent;
  let auth: Record<string, string>;
  before(async () => ({ f, agent, auth } = await openAdminSession()));
  after(() => agent.close());

  const direct = (method: string, path: string, body?: unknown) =>
    adminRequest<{ metadata: { resourceVersion: string } }>({ f, agent, auth }, method, path, body);

  /**
   * `n` events of the watch `path?…&resourceVersion=rv` read directly from the apiserver as they
   * come. The apiserver may close a watch whose reader falls behind during the burst (its cacher
   * terminates unresponsive watchers): then it resumes from the last RV received, as a client does.
   */
  const directEvents = async (
    path: string,
    rv: string,
    n: number,
    started: () => void,
  ): Promise<{ events: RawWatchEvent[]; watches: number }> => {
    const out: RawWatchEvent[] = [];
    let from = rv;
    let watches = 0;
    while (out.length < n) {
      const r = await request(`${f.server}${path}&resourceVersion=${from}`, {
        dispatcher: agent,
        headers: auth,
      });
      assert.equal(r.statusCode, 200);
      watches++;
      if (watches === 1) started();
      let buf = '';
      for await (const c of r.body) {
        buf += c.toString();
        let i = buf.indexOf('\n');
        while (i >= 0) {
          const e = JSON.parse(buf.slice(0, i)) as RawWatchEvent;
          assert.notEqual(e.type, 'ERROR', `direct watch: ${JSON.stringify(e.object)}`);
          out.push(e);
          buf = buf.slice(i + 1);
          i = buf.indexOf('\n');
        }
        if (out.length >= n) break;
      }
      r.body.destroy();
      from = out.at(-1)?.object.metadata.resourceVersion ?? from;
    }
    return { events: out, watches };
  };

  test('a client that stops reading through 2,000 deletions gets every event once when it reads again: no 410, no relist, equal to direct', async () => {
    const ns = await f.newNamespace('parked');
    const cms = `/api/v1/namespaces/${ns}/configmaps`;
    // Scoped to the test's namespace: a cluster-wide cache also holds every other suite's
    // ConfigMap events (proxy-watch's 20 MB burst, run concurrently, once pushed the stalled
    // watcher's RV out of the 32 MiB window: terminated `resource_expired`, not parked).
    const p = await startProxy(f, { resources: 'configmaps', args: ['--namespace', ns] });
    try {
      // 2,000 ConfigMaps of 6 KiB, created before the watches start; the writes the stalled
      // client sleeps through are their deletion (one deletecollection: 2,000 DELETED events of
      // ~6 KiB, ~12 MB, far more than the paused socket's kernel buffers plus the watcher's
      // 1,000-event queue), all within seconds, so the window (75 s) holds them on a loaded
      // machine too (1,000 creates while the client slept once took longer than that).
      const N = 2000;
      const data = { blob: 'x'.repeat(6 * 1024) };
      let next = 0;
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          while (next < N) {
            const i = next++;
            await direct('POST', cms, { metadata: { name: `w-${String(i).padStart(4, '0')}` }, data });
          }
        }),
      );
      const rv = (await direct('GET', cms)).metadata.resourceVersion;
      const watchPath = `${cms}?watch=1&timeoutSeconds=600`;
      // The reference: the same watch, read directly from the apiserver as the events come.
      let directStarted = false;
      const reference = directEvents(watchPath, rv, N, () => {
        directStarted = true;
      });
      const stalled = openPausedWatch(p.url, `${watchPath}&resourceVersion=${rv}`, auth);
      const state = () => p.parts.statusSource.resources()[0]!;
      await eventually('the stalled watch registered on the proxy', 60_000, async () =>
        directStarted && state().watchers === 1 ? true : undefined,
      );
      const last = (await direct('DELETE', cms)).metadata.resourceVersion;
      const { events: want, watches } = await reference;
      assert.equal(want.length, N);
      // How many watches the direct client needed (the apiserver closes a reader that falls behind).
      console.log(`direct reference: ${watches} watch(es) for ${want.length} events`);
      // The proxy saw every write and parked the stalled watcher; nothing was terminated.
      await eventually('the proxy reached the last write', 60_000, async () =>
        BigInt(state().resourceVersion || '0') >= BigInt(want.at(-1)!.object.metadata.resourceVersion!)
          ? true
          : undefined,
      );
      assert.ok(BigInt(last) > 0n);
      assert.deepEqual(
        { parked: state().parkedWatchers, terminated: state().terminatedWatchers },
        { parked: 1, terminated: 0 },
        'the stalled watcher is parked',
      );
      assert.equal(state().terminatedWatchers, 0);

      // The client reads again.
      const got = await readWatchEvents(stalled, N);
      stalled.destroy();
      assert.equal(got.length, N);
      assert.deepEqual(
        got.filter((e) => e.type === 'ERROR'),
        [],
      );
      // Every event once, in order, RVs increasing: the same events as read directly.
      let prev = 0n;
      for (const e of got) {
        const erv = BigInt(e.object.metadata.resourceVersion!);
        assert.ok(erv > prev, `RV ${erv} after ${prev}`);
        prev = erv;
      }
      assert.deepEqual(got, want);
      await eventually('the parked watcher caught up', 20_000, async () =>
        state().parkedWatchers === 0 ? true : undefined,
      );
      assert.equal(state().terminatedWatchers, 0);
    } finally {
      await p.stop();
    }
  });
});
