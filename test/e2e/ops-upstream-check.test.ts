/**
 * `/readyz` tells the truth about the upstream (`--resources=auto`, where no cache gates
 * readiness): with an unreachable apiserver, an apiserver whose certificate the kubeconfig's CA
 * does not verify, and a wrong token, the check `upstream` fails with a one-line reason, in
 * `/readyz?verbose` and in the log; each recovers once the cause is gone. The 401 is what the
 * apiserver itself answers the same request with the same token (compared side by side).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server, connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { type Fixture, sharedFixture, writeKubeconfig } from '../fixture/index.ts';
import { eventually } from '../support/eventually.ts';
import { type CliProcess, spawnProxyCli } from '../support/proxy.ts';

describe('/readyz check "upstream" (auto mode)', () => {
  let f: Fixture;
  let dir: string;
  const running: CliProcess[] = [];

  before(async () => {
    f = await sharedFixture();
    dir = await mkdtemp(join(tmpdir(), 'kcp-upstream-check-'));
  });
  after(async () => {
    await Promise.all(running.map((p) => p.stop()));
    await rm(dir, { recursive: true, force: true });
  });

  async function start(kubeconfig: string): Promise<{ proxy: CliProcess; ops: string }> {
    const proxy = spawnProxyCli([
      '--kubeconfig',
      kubeconfig,
      '--listen',
      '127.0.0.1:0',
      '--ops-listen',
      '127.0.0.1:0',
      '--upstream-check-interval',
      '1s',
    ]);
    running.push(proxy);
    return { proxy, ops: (await proxy.listening()).ops };
  }

  const readyz = async (ops: string) => {
    const r = await request(`${ops}/readyz?verbose`);
    return { status: r.statusCode, body: await r.body.text() };
  };

  /** Waits for `/readyz?verbose` to fail with exactly `reason` and the log to say it once. */
  async function failsWith(p: { proxy: CliProcess; ops: string }, reason: string): Promise<void> {
    const r = await eventually('readyz fails with the reason', 30_000, async () => {
      const x = await readyz(p.ops);
      return x.status === 503 && x.body.includes('[-]upstream failed') && !x.body.includes('not checked yet')
        ? x
        : undefined;
    });
    assert.equal(r.body, `[+]ping ok\n[+]shutdown ok\n[-]upstream failed: ${reason}\nreadyz check failed\n`);
    const logged = p.proxy.logs().filter((l) => l.msg === `upstream check failed: ${reason}`);
    assert.equal(logged.length, 1, JSON.stringify(p.proxy.logs().map((l) => l.msg)));
    assert.equal(logged[0]!.level, 40);
    // ?exclude= as the apiserver: the rest is healthy.
    const ex = await request(`${p.ops}/readyz?exclude=upstream`);
    assert.equal(ex.statusCode, 200);
    assert.equal(await ex.body.text(), 'ok');
  }

  async function recovers(p: { proxy: CliProcess; ops: string }): Promise<void> {
    await eventually('readyz passes', 30_000, async () =>
      (await readyz(p.ops)).status === 200 ? true : undefined,
    );
    assert.deepEqual(await readyz(p.ops), {
      status: 200,
      body: '[+]ping ok\n[+]shutdown ok\n[+]upstream ok\nreadyz check passed\n',
    });
    const passed = p.proxy.logs().filter((l) => l.msg === 'upstream check passed');
    assert.equal(passed.length, 1);
    // The SelfSubjectReview names the proxy's identity.
    assert.equal(passed[0]!.user, 'system:serviceaccount:kcp-system:admin');
  }

  test('unreachable (connection refused), then the apiserver appears at that address', async () => {
    // A free port, closed: connection refused.
    const port = await new Promise<number>((resolve) => {
      const s = createServer();
      s.listen(0, '127.0.0.1', () => {
        const a = s.address() as { port: number };
        s.close(() => resolve(a.port));
      });
    });
    const kc = await writeKubeconfig(join(dir, 'refused.kubeconfig'), {
      server: `https://127.0.0.1:${port}`,
      caFile: join(f.dir, 'ca.crt'),
      user: { token: f.tokens.admin },
    });
    const p = await start(kc);
    await failsWith(p, `GET https://127.0.0.1:${port}/version: connection refused (ECONNREFUSED)`);
    // The apiserver "comes back" at that address: a TCP relay to it (TLS end to end).
    const target = new URL(f.server);
    const relay: Server = createServer((c) => {
      const up = tcpConnect(Number(target.port), target.hostname);
      c.pipe(up).pipe(c);
      c.on('error', () => up.destroy());
      up.on('error', () => c.destroy());
    });
    await new Promise<void>((r) => relay.listen(port, '127.0.0.1', r));
    try {
      await recovers(p);
    } finally {
      await p.proxy.stop();
      relay.close();
    }
  });

  test('TLS: the kubeconfig CA does not verify the apiserver certificate', async () => {
    const kc = await writeKubeconfig(join(dir, 'tls.kubeconfig'), {
      server: f.server,
      // A CA that did not sign the apiserver's certificate (the proxy serving certificate).
      caFile: f.proxyTls.certFile,
      user: { token: f.tokens.admin },
    });
    const p = await start(kc);
    await failsWith(
      p,
      `GET ${f.server}/version: TLS: unable to verify the first certificate (UNABLE_TO_VERIFY_LEAF_SIGNATURE)`,
    );
    await p.proxy.stop();
  });

  test('a wrong token: 401, as the apiserver answers it directly; a rotated token file recovers', async () => {
    const tokenFile = join(dir, 'token');
    await writeFile(tokenFile, 'not-a-valid-token');
    const kc = await writeKubeconfig(join(dir, 'token.kubeconfig'), {
      server: f.server,
      caFile: join(f.dir, 'ca.crt'),
      user: { tokenFile },
    });
    // Side by side: the apiserver answers this token 401 on /version.
    const agent = new Agent({ connect: { ca: f.caPem } });
    try {
      const direct = await request(`${f.server}/version`, {
        dispatcher: agent,
        headers: { authorization: 'Bearer not-a-valid-token' },
      });
      assert.equal(direct.statusCode, 401);
      assert.equal((JSON.parse(await direct.body.text()) as { reason: string }).reason, 'Unauthorized');
    } finally {
      await agent.close();
    }
    const p = await start(kc);
    await failsWith(
      p,
      `GET ${f.server}/version: 401 Unauthorized: the apiserver rejected the proxy's credentials (the kubeconfig user's token or client certificate)`,
    );
    assert.ok(!JSON.stringify(p.proxy.logs()).includes('not-a-valid-token'), 'no token in the log');
    await writeFile(tokenFile, f.tokens.admin);
    await recovers(p);
    await p.proxy.stop();
  });
});
