/**
 * Issue 15 attack finding: `kubectl get` asks for a Table (`Accept: application/json;as=Table;…`),
 * which no cache answers (reason `media-type`). Such a request must neither start an on-demand
 * cache (it used to, reason `not-cached`, and the cache could never answer it) nor count as a use
 * of one (else one `kubectl get pods -A` now and then holds every pod in memory). Against the real
 * apiserver, through a `--resources=auto` proxy with a short `--auto-idle-timeout`:
 * - `kubectl get podtemplates` twice starts nothing, and prints what it prints directly;
 * - `kubectl get podtemplates -o json` (plain JSON) starts the cache, equal to direct;
 * - Table requests every half second do not keep it: it is stopped as idle.
 * podtemplates: no other e2e file caches them through an auto proxy.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { type Fixture, sharedFixture } from '../fixture/index.ts';
import { eventually } from '../support/eventually.ts';
import { parsePrometheus, sum } from '../support/prometheus-text.ts';
import { type CliProxy, startProxy } from '../support/proxy.ts';

const template = (name: string) => ({
  apiVersion: 'v1',
  kind: 'PodTemplate',
  metadata: { name },
  template: { spec: { containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] } },
});

describe('issue 15: kubectl get (Table) through an auto proxy', () => {
  let f: Fixture;
  let proxy: CliProxy;
  let agent: Agent;
  let ns: string;
  const ops = async (path: string) => {
    const r = await request(`${proxy.ops}${path}`, { dispatcher: agent });
    return r.body.text();
  };
  const entry = async () =>
    (
      JSON.parse(await ops('/debug/cache')) as {
        resources: { resource: string; synced: boolean; origin: string }[];
      }
    ).resources.find((e) => e.resource === 'podtemplates');
  const metric = async (name: string, labels: Record<string, string>) =>
    sum(parsePrometheus(await ops('/metrics')), name, labels);
  const viaProxy = (args: string[]) => f.kubectl(['-n', ns, ...args], { kubeconfig: proxy.kubeconfig });
  const direct = (args: string[]) => f.kubectl(['-n', ns, ...args]);

  before(async () => {
    f = await sharedFixture();
    agent = new Agent();
    ns = await f.newNamespace('ondemand-table');
    for (const n of ['t1', 't2']) {
      const c = await f.kubectl(['apply', '-n', ns, '-f', '-'], { input: JSON.stringify(template(n)) });
      assert.equal(c.code, 0, c.stderr);
    }
    proxy = await startProxy(f, {
      run: 'cli',
      resources: 'auto',
      args: ['--log-level', 'info', '--auto-idle-timeout', '3s'],
    });
  });
  after(async () => {
    await proxy?.stop();
    await agent?.close();
    await f?.kubectl(['delete', 'namespace', ns, '--wait=false']);
  });

  test('kubectl get (Table) twice starts nothing; kubectl get -o json does; Table requests do not keep it from going idle', async () => {
    const want = await direct(['get', 'podtemplates']);
    assert.equal(want.code, 0, want.stderr);
    for (let i = 0; i < 2; i++) {
      const got = await viaProxy(['get', 'podtemplates']);
      assert.equal(got.code, 0, got.stderr);
      assert.deepEqual(
        got.stdout.split('\n').map((l) => l.split(/\s+/)[0]),
        want.stdout.split('\n').map((l) => l.split(/\s+/)[0]),
        'the same rows as the apiserver prints',
      );
    }
    await new Promise((r) => setTimeout(r, 1_000));
    assert.equal(await entry(), undefined, 'no cache started');
    assert.equal(await metric('kube_cache_proxy_on_demand_caches_total', { event: 'started' }), 0);
    assert.equal(
      await metric('kube_cache_proxy_requests_total', {
        resource: 'podtemplates',
        verb: 'LIST',
        served_from: 'upstream',
        reason: 'not-cached',
      }),
      2,
      'both passed upstream as not cached',
    );

    // Plain JSON: the first starts the cache, later ones are served from it, equal to direct.
    const wantJson = await direct(['get', 'podtemplates', '-o', 'json']);
    const first = await viaProxy(['get', 'podtemplates', '-o', 'json']);
    assert.equal(first.code, 0, first.stderr);
    assert.deepEqual(JSON.parse(first.stdout).items, JSON.parse(wantJson.stdout).items);
    await eventually('podtemplates cached', 30_000, async () => ((await entry())?.synced ? true : undefined));
    assert.equal((await entry())?.origin, 'auto');
    await eventually('served from the cache', 30_000, async () => {
      const got = await viaProxy(['get', 'podtemplates', '-o', 'json']);
      assert.deepEqual(JSON.parse(got.stdout).items, JSON.parse(wantJson.stdout).items);
      const n = await metric('kube_cache_proxy_requests_total', {
        resource: 'podtemplates',
        served_from: 'cache',
      });
      return n > 0 ? true : undefined;
    });

    // Table requests of a kind the cache does not print (podtemplates: reason table-printer) are no
    // use: the cache goes idle after 3 s all the same. The request kubectl sends, sent directly:
    // a kubectl process per request took longer than the idle timeout on a loaded machine, and
    // fewer than 3 requests then fell inside it.
    const started = Date.now();
    const answeredAt: number[] = [];
    while ((await entry()) !== undefined) {
      assert.ok(Date.now() - started < 20_000, 'stopped as idle within 20 s despite Table requests');
      const t = await request(`${proxy.url}/api/v1/namespaces/${ns}/podtemplates?limit=500`, {
        dispatcher: agent,
        headers: { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json' },
      });
      const table = (await t.body.json()) as { kind: string };
      assert.equal(t.statusCode, 200);
      assert.equal(table.kind, 'Table');
      answeredAt.push(Date.now());
      await new Promise((r) => setTimeout(r, 500));
    }
    const gaps = answeredAt.slice(1).map((t, i) => t - answeredAt[i]!);
    assert.ok(answeredAt.length >= 3, `Table requests kept coming while it went idle (${answeredAt.length})`);
    assert.ok(
      Math.max(...gaps) < 3_000,
      `each Table request came within the idle timeout of the one before (gaps ${gaps.join(', ')} ms)`,
    );
    assert.equal(
      await metric('kube_cache_proxy_on_demand_caches_total', { event: 'stopped', reason: 'idle' }),
      1,
    );
    assert.equal(await metric('kube_cache_proxy_on_demand_caches_total', { event: 'started' }), 1);
    assert.ok(
      (await metric('kube_cache_proxy_requests_total', {
        resource: 'podtemplates',
        reason: 'table-printer',
      })) >= 1,
      'Table requests to the cached resource are table-printer (no PodTemplate printer ported)',
    );
  });
});
