/**
 * Attack: the apiserver frozen (SIGSTOP: connections stay open, nothing answers) while clients
 * keep sending requests that must go upstream. Those hang until the upstream header timeout;
 * they must not take the slots that requests answered from the cache need (docs/operations.md
 * "When the apiserver is unreachable": RV=0 LIST and GET keep working from the cache).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { request } from 'undici';
import { type Fixture, startFixture } from '../fixture/index.ts';
import { type InProcessProxy, startProxy } from '../support/proxy.ts';

describe('attack: frozen apiserver', () => {
  let f: Fixture;
  let p: InProcessProxy;
  let ns: string;

  before(async () => {
    f = await startFixture();
    ns = await f.newNamespace('frozen');
    const c = await f.kubectl(['create', 'configmap', 'kept', '-n', ns, '--from-literal=k=v']);
    assert.equal(c.code, 0, c.stderr);
    p = await startProxy(f, { resources: 'configmaps', args: ['--max-inflight', '10'] });
  });
  after(async () => {
    await p?.stop();
    await f?.stop();
  });

  test('pass-through requests hanging on a frozen apiserver do not starve RV=0 reads from the cache', async () => {
    const pid = f.pids().apiserver;
    process.kill(pid, 'SIGSTOP');
    const hanging: AbortController[] = [];
    try {
      // 12 uncached GETs (more than --max-inflight): each waits for the frozen apiserver.
      const pending = Array.from({ length: 12 }, () => {
        const ac = new AbortController();
        hanging.push(ac);
        return request(`${p.url}/api/v1/namespaces/${ns}/serviceaccounts`, {
          headers: { ...p.auth, 'user-agent': 'attack' },
          signal: ac.signal,
        }).then(
          (r) => r.statusCode,
          () => 'aborted',
        );
      });
      await new Promise((r) => setTimeout(r, 500));
      const r = await request(`${p.url}/api/v1/namespaces/${ns}/configmaps?resourceVersion=0`, {
        headers: { ...p.auth, 'user-agent': 'attack' },
      });
      const body = await r.body.text();
      assert.equal(r.statusCode, 200, body);
      assert.deepEqual(
        (JSON.parse(body) as { items: { metadata: { name: string } }[] }).items.map((i) => i.metadata.name),
        ['kept'],
      );
      for (const ac of hanging) ac.abort();
      await Promise.all(pending);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
  });
});
