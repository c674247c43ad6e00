/**
 * Events in auto mode: the apiserver serves `events` without its watch cache (its default
 * `--watch-cache-sizes` has events at 0: no `apiserver_watch_cache_*` series for them, checked
 * on the fixture) and so sends no periodic bookmark on an idle events watch. The proxy's on-demand
 * events cache must not take that silence for a half-open stream: with a short liveness window
 * (`--watch-liveness-window 2s`), the stream is not restarted and nothing is logged as a warning
 * across several silent windows; it is only no longer "live" (consistent reads go upstream) until
 * the next event, which a watch through the proxy receives.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { type Fixture, sharedFixture } from '../fixture/index.ts';
import { eventually } from '../support/eventually.ts';
import { type CliProcess, spawnProxyCli } from '../support/proxy.ts';

interface DebugEntry {
  name: string;
  origin: string;
  synced: boolean;
  live: boolean;
  watchRestarts: number;
  periodicBookmarks: boolean;
}

describe('on-demand events cache (no watch cache upstream, no bookmarks)', () => {
  let f: Fixture;
  let proxy: CliProcess;
  let api: string;
  let ops: string;
  let agent: Agent;

  before(async () => {
    f = await sharedFixture();
    agent = new Agent({ connect: { ca: f.caPem } });
    proxy = spawnProxyCli([
      '--kubeconfig',
      f.kubeconfigs.adminToken,
      '--listen',
      '127.0.0.1:0',
      '--ops-listen',
      '127.0.0.1:0',
      '--watch-liveness-window',
      '2s',
    ]);
    const l = await proxy.listening();
    api = l.address;
    ops = l.ops;
  });
  after(async () => {
    await proxy?.stop();
    await agent?.close();
  });

  const auth = () => ({ authorization: `Bearer ${f.tokens.admin}` });
  const events = async (): Promise<DebugEntry | undefined> => {
    const d = JSON.parse(await (await request(`${ops}/debug/cache`)).body.text()) as {
      resources: DebugEntry[];
    };
    return d.resources.find((r) => r.name === 'events');
  };
  const createEvent = async (ns: string, name: string) => {
    const r = await request(`${f.server}/api/v1/namespaces/${ns}/events`, {
      method: 'POST',
      dispatcher: agent,
      headers: { ...auth(), 'content-type': 'application/json' },
      body: JSON.stringify({
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name, namespace: ns },
        involvedObject: { kind: 'ConfigMap', name: 'x', namespace: ns, apiVersion: 'v1' },
        reason: 'Test',
        message: 'an event',
        type: 'Normal',
      }),
    });
    assert.equal(r.statusCode, 201, await r.body.text());
  };

  test('the fixture apiserver has no watch cache for events (configmaps has one)', async () => {
    const r = await request(`${f.server}/metrics`, { dispatcher: agent, headers: auth() });
    const text = await r.body.text();
    assert.match(
      text,
      /^apiserver_watch_cache_initializations_total\{group="",resource="configmaps"\} \d+$/m,
    );
    assert.doesNotMatch(text, /apiserver_watch_cache_initializations_total\{group="",resource="events"\}/);
  });

  test('an idle events watch is not restarted and not warned about; the next event reaches a watch through the proxy', async () => {
    const ns = await f.newNamespace('events');
    // A LIST starts the on-demand cache (kubectl describe's events LIST does the same).
    const first = await request(`${api}/api/v1/namespaces/${ns}/events`, { headers: auth() });
    assert.equal(first.statusCode, 200);
    await first.body.text();
    await eventually('events cache synced', 30_000, async () =>
      (await events())?.synced ? true : undefined,
    );
    // Silent for a window: no longer live, not restarted.
    const silent = await eventually('silence noticed', 30_000, async () => {
      const e = await events();
      return e && !e.live ? e : undefined;
    });
    assert.equal(silent.watchRestarts, 0);
    assert.equal(silent.periodicBookmarks, false);
    assert.equal(silent.origin, 'auto');

    // A watch through the proxy, from the cache, sees the next event; the silence after it is
    // noticed again (a second window), still without a restart.
    const list = await request(`${api}/api/v1/namespaces/${ns}/events?resourceVersion=0`, {
      headers: auth(),
    });
    const rv = (JSON.parse(await list.body.text()) as { metadata: { resourceVersion: string } }).metadata
      .resourceVersion;
    const watch = await request(`${api}/api/v1/namespaces/${ns}/events?watch=1&resourceVersion=${rv}`, {
      headers: auth(),
    });
    assert.equal(watch.statusCode, 200);
    assert.equal(watch.headers['audit-id'], undefined, 'served from the cache');
    let seen = '';
    const reading = (async () => {
      for await (const chunk of watch.body) seen += String(chunk);
    })().catch(() => {});
    await createEvent(ns, 'after-silence');
    await eventually('the watch gets the event', 20_000, async () =>
      seen.includes('"name":"after-silence"') ? true : undefined,
    );
    await eventually('live again after the event', 10_000, async () =>
      (await events())?.live ? true : undefined,
    );
    const again = await eventually('silent again', 30_000, async () => {
      const e = await events();
      return e && !e.live ? e : undefined;
    });
    assert.equal(again.watchRestarts, 0);
    watch.body.destroy();
    await reading;

    const lines = proxy.logs().filter((l) => l.reflector === 'events');
    assert.deepEqual(
      lines.filter((l) => (l.level as number) >= 40).map((l) => l.msg),
      [],
      'no warning about a healthy idle stream',
    );
    assert.equal(
      lines.filter(
        (l) => typeof l.msg === 'string' && l.msg.startsWith('watch stream silent for the liveness window'),
      ).length,
      1,
      'the silence is explained once (info)',
    );
  });
});
