/**
 * `--authorization-outage-grace` against the real apiserver (docs/design.md §4): three proxies
 * with `--delegated-auth` and 1 s decision TTLs in front of a private fixture — grace 0 (today),
 * a long grace (10 min) and a short one (4 s) — are warmed with four tokens, then the apiserver is
 * killed (reviews: connection refused). The cells, compared with grace 0:
 * - a token allowed before the outage keeps reading the cache within the grace (200, from the
 *   cache; 401 with grace 0), and no longer once TTL + grace passed (the short grace);
 * - a token denied before the outage is not extended (never 200);
 * - a token never seen is never admitted (401);
 * - a token the apiserver answered unauthenticated stays 401.
 * Before the kill, the apiserver is frozen (SIGSTOP: reviews get no answer until their 10 s
 * timeout): after one timeout, the allowed token's reads reuse both decisions at once
 * (`src/auth/review-outage.ts`), and after SIGCONT reviews are answered again.
 * The grace proxy counts its reuses in `kube_cache_proxy_outage_grace_decisions_total`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { type Fixture, READ_CLUSTER_ROLE, startFixture } from '../fixture/index.ts';
import { eventually } from '../support/eventually.ts';
import { get as plainGet } from '../support/http-get.ts';
import { metricSum } from '../support/prometheus-text.ts';
import { type InProcessProxy, startProxy } from '../support/proxy.ts';

const TTL = '1s';
const SHORT_GRACE_MS = 4000;
const GRACE_METRIC = 'kube_cache_proxy_outage_grace_decisions_total';

describe('--authorization-outage-grace: the apiserver down, allowed / denied / unseen tokens', () => {
  let f: Fixture;
  let agent: Agent;
  let off: InProcessProxy;
  let long: InProcessProxy;
  let short: InProcessProxy;
  let ns: string;
  const tokens: Record<'allowed' | 'denied' | 'unseen', string> = { allowed: '', denied: '', unseen: '' };
  const invalid = 'not-a-valid-token';
  const path = () => `/api/v1/namespaces/${ns}/configmaps?resourceVersion=0`;
  const read = async (base: string, token: string) => {
    const r = await request(`${base}${path()}`, {
      dispatcher: agent,
      headers: { accept: 'application/json', authorization: `Bearer ${token}` },
    });
    const body = await r.body.text();
    return { status: r.statusCode, body, fromCache: r.headers['audit-id'] === undefined };
  };
  const names = (body: string) =>
    (JSON.parse(body) as { items: Array<{ metadata: { name: string } }> }).items.map((i) => i.metadata.name);
  const graced = async (p: InProcessProxy, cache: string) =>
    metricSum((await plainGet(`${p.ops}/metrics`)).body, GRACE_METRIC, { cache });

  before(async () => {
    f = await startFixture();
    agent = new Agent({ connect: { ca: f.caPem } });
    ns = await f.newNamespace('grace');
    const run = async (args: string[]) => {
      const r = await f.kubectl(args);
      assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
      return r.stdout.trim();
    };
    await run(['create', 'configmap', 'kept', '-n', ns, '--from-literal=k=v']);
    for (const who of ['allowed', 'denied', 'unseen'] as const) {
      await run(['create', 'serviceaccount', who, '-n', ns]);
      if (who !== 'denied')
        await run([
          'create',
          'rolebinding',
          who,
          `--clusterrole=${READ_CLUSTER_ROLE}`,
          `--serviceaccount=${ns}:${who}`,
          '-n',
          ns,
        ]);
      tokens[who] = await run(['create', 'token', who, '-n', ns, '--duration=1h']);
    }
    const flags = (grace: string) => ({
      resources: 'configmaps',
      delegatedAuth: true,
      args: [
        `--authentication-token-webhook-cache-ttl=${TTL}`,
        `--authorization-webhook-cache-authorized-ttl=${TTL}`,
        `--authorization-webhook-cache-unauthorized-ttl=${TTL}`,
        `--authorization-outage-grace=${grace}`,
      ],
    });
    [off, long, short] = await Promise.all([
      startProxy(f, flags('0s')),
      startProxy(f, flags('10m')),
      startProxy(f, flags(`${SHORT_GRACE_MS / 1000}s`)),
    ]);
    // RBAC reaches the apiserver's authorizer within moments: wait until it allows directly.
    await eventually('the RoleBinding is in effect', 20_000, async () =>
      (await read(f.server, tokens.allowed)).status === 200 ? true : undefined,
    );
  });
  after(async () => {
    await Promise.all([off?.stop(), long?.stop(), short?.stop()]);
    await agent?.close();
    await f?.stop();
  });

  test('before the outage: the three proxies answer as the apiserver (200 from the cache, 403, 401)', async () => {
    for (const p of [off, long, short]) {
      const ok = await read(p.url, tokens.allowed);
      assert.equal(ok.status, 200, ok.body);
      assert.equal(ok.fromCache, true);
      assert.deepEqual(names(ok.body), ['kept']);
      const denied = await read(p.url, tokens.denied);
      assert.equal(denied.status, 403, denied.body);
      assert.equal((await read(p.url, invalid)).status, 401);
    }
  });

  test('the apiserver frozen (SIGSTOP): after one review timeout the allowed token reads the cache at once; reviews resume after SIGCONT', async (t) => {
    const apiserver = f.pids().apiserver;
    assert.equal((await read(long.url, tokens.allowed)).status, 200);
    const before = await graced(long, 'authorization');
    process.kill(apiserver, 'SIGSTOP');
    try {
      // Once the 1 s TTLs passed, the first read waits for one review's 10 s timeout; the reads
      // after it reuse both decisions at once (before: each waited for a TokenReview timeout and
      // then a SubjectAccessReview timeout, 20 s or more).
      const waited: number[] = [];
      const timed = async () => {
        const start = Date.now();
        const r = await read(long.url, tokens.allowed);
        assert.equal(r.status, 200, r.body);
        assert.equal(r.fromCache, true);
        assert.deepEqual(names(r.body), ['kept']);
        waited.push(Date.now() - start);
        return Date.now() - start;
      };
      await eventually('a decision reused from the grace', 60_000, async () =>
        (await timed()) >= 0 && (await graced(long, 'authorization')) > before ? true : undefined,
      );
      const ms: number[] = [];
      for (let i = 0; i < 5; i++) ms.push(await timed());
      t.diagnostic(`reads of the allowed token after SIGSTOP, ms: ${waited.join(', ')}`);
      // A bound far below one review timeout (10 s), loose for a loaded machine.
      assert.ok(Math.max(...ms) < 5000, `reads during the freeze took ${ms.join(', ')} ms`);
      // A token never seen is not admitted (its review is sent and times out). (A denied request's
      // failed review would go upstream, which is frozen: the kill cell below covers it.)
      assert.equal((await read(long.url, tokens.unseen)).status, 401);
    } finally {
      process.kill(apiserver, 'SIGCONT');
    }
    // Back: the background probe's answer ends the remembered outage; reads are reviewed again.
    await eventually('reviews answered again (no grace reuse)', 60_000, async () => {
      const n = await graced(long, 'authorization');
      await read(long.url, tokens.allowed);
      await read(long.url, tokens.allowed);
      return (await graced(long, 'authorization')) === n ? true : undefined;
    });
  });

  test('the apiserver killed: within the grace the allowed token reads the cache; denied, unseen and invalid tokens do not', async () => {
    // Refresh the allowed answers just before the outage, so the short grace is measured from here.
    for (const p of [off, long, short]) assert.equal((await read(p.url, tokens.allowed)).status, 200);
    const lastAnswer = Date.now();
    process.kill(f.pids().apiserver, 'SIGKILL');
    // Grace 0: once the 1 s TTL passed, the failed TokenReview is 401 (today's behaviour).
    const offAllowed = await eventually(
      'grace 0: the allowed token refused once its TTL passed',
      30_000,
      async () => {
        const r = await read(off.url, tokens.allowed);
        return r.status !== 200 ? r : undefined;
      },
    );
    assert.equal(offAllowed.status, 401, offAllowed.body);
    assert.deepEqual(JSON.parse(offAllowed.body), {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'Unauthorized',
      reason: 'Unauthorized',
      code: 401,
    });
    // The long grace: every read of the allowed token is answered from the cache, and once its
    // TTLs passed (warmed moments after grace 0's, so on a loaded machine not necessarily yet)
    // both decisions are reused from the grace.
    await eventually('the long grace reuses both decisions', 30_000, async () => {
      const longAllowed = await read(long.url, tokens.allowed);
      assert.equal(longAllowed.status, 200, longAllowed.body);
      assert.equal(longAllowed.fromCache, true);
      assert.deepEqual(names(longAllowed.body), ['kept']);
      return (await graced(long, 'authentication')) >= 1 && (await graced(long, 'authorization')) >= 1
        ? true
        : undefined;
    });
    for (const p of [off, long]) {
      // Its denial stays cached for its 1 s TTL (403, as before the outage); then:
      const denied = await eventually('the cached denial expired', 30_000, async () => {
        const r = await read(p.url, tokens.denied);
        assert.notEqual(r.status, 200, `denied token: ${r.body}`);
        return r.status !== 403 ? r : undefined;
      });
      assert.ok(!denied.body.includes('"kept"'), denied.body);
      // With grace its TokenReview is reused (it was authenticated) but the denial is not: the
      // authorization fails and the read goes upstream, which is down (503); without grace 401.
      assert.equal(denied.status, p === long ? 503 : 401, denied.body);
      const unseen = await read(p.url, tokens.unseen);
      assert.equal(unseen.status, 401, `never-seen token: ${unseen.body}`);
      assert.equal((await read(p.url, invalid)).status, 401);
    }
    assert.ok((await graced(long, 'authentication')) >= 1, 'TokenReview answers reused');
    assert.ok((await graced(long, 'authorization')) >= 1, 'SubjectAccessReview decisions reused');
    assert.equal(await graced(off, 'authentication'), 0);
    assert.equal(await graced(off, 'authorization'), 0);

    // The bound: the short grace ends TTL + grace after the last answer.
    const ended = await eventually('the short grace ends', 30_000, async () => {
      const r = await read(short.url, tokens.allowed);
      return r.status !== 200 ? { r, at: Date.now() } : undefined;
    });
    // 401 when the token's grace ends first, 503 when the decision's does (reviewed moments apart).
    assert.ok([401, 503].includes(ended.r.status), `${ended.r.status} ${ended.r.body}`);
    assert.ok(!ended.r.body.includes('"kept"'), ended.r.body);
    const afterMs = ended.at - lastAnswer;
    assert.ok(afterMs >= SHORT_GRACE_MS, `the short grace ended after only ${afterMs} ms`);
    assert.ok(afterMs <= 1000 + SHORT_GRACE_MS + 5000, `the short grace lasted ${afterMs} ms`);
    // The long one still reads.
    assert.equal((await read(long.url, tokens.allowed)).status, 200);
  });
});
