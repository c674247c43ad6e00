/**
 * Upstream credentials against the real apiserver: a rotating `token-file` (a bad token replaced
 * by a good one is picked up without a restart) and an exec credential plugin.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { MapSink, seedConfigMaps } from '../../bench/support/sync-support.ts';
import { HttpListerWatcher } from '../../src/reflector/list-watch.ts';
import { Reflector } from '../../src/reflector/reflector.ts';
import { createUpstream, type Upstream } from '../../src/upstream/connection.ts';
import { discoverResource } from '../../src/upstream/discovery.ts';
import { type Fixture, sharedFixture } from '../fixture/index.ts';

describe('upstream credentials', () => {
  let f: Fixture;
  let dir: string;
  before(async () => {
    f = await sharedFixture();
    dir = mkdtempSync(path.join(tmpdir(), 'kcp-auth-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  function kubeconfig(name: string, user: Record<string, unknown>): string {
    const file = path.join(dir, name);
    writeFileSync(
      file,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'c', cluster: { server: f.server, 'certificate-authority': f.caFile } }],
        users: [{ name: 'u', user }],
        contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
        'current-context': 'x',
      }),
    );
    return file;
  }

  test('a rotated token-file is re-read: 401s until the good token lands, then the reflector syncs', async () => {
    writeFileSync(path.join(dir, 'token'), 'not-a-valid-token');
    const up = await createUpstream({ kubeconfig: kubeconfig('tf.kubeconfig', { 'token-file': 'token' }) });
    const admin = await createUpstream({ kubeconfig: f.kubeconfigs.admin });
    let r: Reflector | undefined;
    let done: Promise<void> | undefined;
    try {
      const ns = await f.newNamespace('refl-tok');
      await seedConfigMaps(admin, ns, 3);
      const info = await discoverResource(admin, 'configmaps');
      const sink = new MapSink();
      r = new Reflector({ info, lw: new HttpListerWatcher(up, info, ns), sink });
      done = r.run();
      await new Promise((res) => setTimeout(res, 1_500));
      assert.equal(sink.replaces, 0);
      assert.match(r.status().lastError ?? '', /401/);
      writeFileSync(path.join(dir, 'token'), `${f.tokens.admin}\n`);
      await sink.waitFor(() => sink.replaces === 1, 45_000, 'sync with the rotated token');
      assert.equal(sink.objects.size, 3);
    } finally {
      r?.stop();
      await done;
      await up.close();
      await admin.close();
    }
  });

  test('an exec credential plugin provides the bearer token', async () => {
    const cred = JSON.stringify({
      apiVersion: 'client.authentication.k8s.io/v1',
      kind: 'ExecCredential',
      status: { token: f.tokens.admin },
    });
    writeFileSync(path.join(dir, 'cred.json'), cred);
    const up: Upstream = await createUpstream({
      kubeconfig: kubeconfig('exec.kubeconfig', {
        exec: {
          apiVersion: 'client.authentication.k8s.io/v1',
          command: 'cat',
          args: [path.join(dir, 'cred.json')],
          interactiveMode: 'Never',
        },
      }),
    });
    try {
      assert.equal(await up.authorization(), `Bearer ${f.tokens.admin}`);
      const info = await discoverResource(up, 'deployments.apps');
      assert.deepEqual(
        [info.apiVersion, info.kind, info.namespaced, info.builtIn],
        ['apps/v1', 'Deployment', true, true],
      );
    } finally {
      await up.close();
    }
  });
});
