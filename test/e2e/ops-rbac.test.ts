/**
 * The proxy with EXACTLY the deploy/ RBAC: a ServiceAccount bound to the rendered ClusterRole
 * (`kubectl kustomize deploy/base`), its token from `kubectl create token`, the sidecar's own
 * `--resources`: it syncs and serves. The same role minus `watch`: the proxy never gets ready and
 * says which verb on which resource is missing.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, stringify } from 'yaml';
import { type Fixture, sharedFixture } from '../fixture/index.ts';
import { eventually } from '../support/eventually.ts';
import { get } from '../support/http-get.ts';
import { startProxy } from '../support/proxy.ts';

const deployDir = fileURLToPath(new URL('../../deploy/', import.meta.url));

// biome-ignore lint/suspicious/noExplicitAny: rendered Kubernetes objects.
type Obj = any;

describe('the proxy with exactly the deploy/ RBAC', () => {
  let f: Fixture;
  let tmp: string;
  const clusterScoped: string[] = [];

  before(async () => {
    f = await sharedFixture();
    tmp = mkdtempSync(join(tmpdir(), 'kcp-rbac-'));
  });
  after(async () => {
    if (clusterScoped.length > 0) await f.kubectl(['delete', '--ignore-not-found', ...clusterScoped]);
    rmSync(tmp, { recursive: true, force: true });
  });

  /** Renders deploy/base into a fresh namespace, applies its RBAC (optionally edited), returns a token kubeconfig and --resources. */
  async function serviceAccount(
    edit: (role: Obj) => void,
  ): Promise<{ kubeconfig: string; resources: string; ns: string }> {
    const ns = await f.newNamespace('rbac');
    const prefix = `${ns}-`;
    const wrap = mkdtempSync(join(tmp, 'wrap-'));
    writeFileSync(
      join(wrap, 'kustomization.yaml'),
      stringify({ namespace: ns, namePrefix: prefix, resources: [relative(wrap, join(deployDir, 'base'))] }),
    );
    const r = await f.kubectl(['kustomize', wrap]);
    assert.equal(r.code, 0, r.stderr);
    const objects: Obj[] = parseAllDocuments(r.stdout).map((d) => d.toJS());
    const sidecar = objects.find((o) => o.kind === 'Deployment').spec.template.spec.initContainers[0];
    const resources = (sidecar.args as string[]).find((a) => a.startsWith('--resources='))!.slice(12);
    const rbac = objects.filter((o) =>
      ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding'].includes(o.kind),
    );
    edit(rbac.find((o) => o.kind === 'ClusterRole'));
    clusterScoped.push(
      `clusterrole/${prefix}kube-cache-proxy`,
      `clusterrolebinding/${prefix}kube-cache-proxy`,
    );
    const a = await f.kubectl(['apply', '-f', '-'], { input: rbac.map((o) => stringify(o)).join('---\n') });
    assert.equal(a.code, 0, a.stderr);
    const t = await f.kubectl(['create', 'token', `${prefix}controller`, '-n', ns, '--duration=1h']);
    assert.equal(t.code, 0, t.stderr);
    const kubeconfig = join(tmp, `${ns}.kubeconfig`);
    writeFileSync(
      kubeconfig,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [
          {
            name: 'f',
            cluster: {
              server: f.server,
              'certificate-authority-data': Buffer.from(f.caPem).toString('base64'),
            },
          },
        ],
        users: [{ name: 'f', user: { token: t.stdout.trim() } }],
        contexts: [{ name: 'f', context: { cluster: 'f', user: 'f' } }],
        'current-context': 'f',
      }),
      { mode: 0o600 },
    );
    return { kubeconfig, resources, ns };
  }

  test('syncs every resource of the sidecar and serves them from the cache', async () => {
    const sa = await serviceAccount(() => {});
    assert.equal(sa.resources, 'configmaps,pods,deployments.apps');
    const c = await f.kubectl(['create', 'configmap', 'one', '-n', sa.ns, '--from-literal=k=v']);
    assert.equal(c.code, 0, c.stderr);
    const proxy = await startProxy(f, { run: 'cli', kubeconfig: sa.kubeconfig, resources: sa.resources });
    try {
      const ready = await eventually('ready', 60_000, async () => {
        const r = await get(`${proxy.ops}/readyz?verbose`);
        return r.status === 200 ? r : undefined;
      });
      for (const c of ['configmaps', 'pods', 'deployments.apps'])
        assert.match(ready.body, new RegExp(`\\[\\+\\]cache-sync/${c} ok`));
      // No Authorization from the client: the sidecar answers from its cache (GET is not even in the role).
      for (const path of [
        `/api/v1/namespaces/${sa.ns}/configmaps`,
        '/api/v1/pods?resourceVersion=0',
        `/apis/apps/v1/namespaces/${sa.ns}/deployments`,
        `/api/v1/namespaces/${sa.ns}/configmaps/one`,
      ]) {
        const r = await get(`${proxy.url}${path}`);
        assert.equal(r.status, 200, `${path}: ${r.body}`);
        assert.equal(r.headers['audit-id'], undefined, `${path} served from the cache`);
      }
      assert.equal(proxy.logs().filter((l) => String(l.msg).startsWith('missing RBAC permission')).length, 0);
    } finally {
      assert.equal(await proxy.stop(), 0);
    }
  });

  test('without watch: one clear log line names the verb and the resource', async () => {
    const sa = await serviceAccount((role) => {
      for (const rule of role.rules) rule.verbs = ['list'];
    });
    const proxy = await startProxy(f, { run: 'cli', kubeconfig: sa.kubeconfig, resources: 'configmaps' });
    try {
      const line = await eventually('RBAC log line', 30_000, async () =>
        proxy.logs().find((l) => String(l.msg).startsWith('missing RBAC permission')),
      );
      assert.equal(
        line.msg,
        "missing RBAC permission: the proxy's identity may not watch configmaps cluster-wide; grant list and watch on every cached resource (see deploy/)",
      );
      assert.deepEqual([line.level, line.verb, line.group, line.resource], [50, 'watch', '', 'configmaps']);
      // LIST alone still gives a snapshot (watch-list fails, the LIST fallback works), so the
      // resource is "synced"; the failing watch is what /debug/cache shows. The log line is
      // written when the 403 arrives (the upstream observer), the reflector records the error a
      // moment later: wait for it instead of reading once (it raced under load).
      const lastError = await eventually('lastError of the failing watch', 30_000, async () => {
        const d = JSON.parse((await get(`${proxy.ops}/debug/cache`)).body) as {
          resources: Array<{ lastError: string | null }>;
        };
        const e = d.resources[0]?.lastError ?? '';
        return /cannot watch resource "configmaps"/.test(e) ? e : undefined;
      });
      assert.match(lastError, /cannot watch resource "configmaps"/);
    } finally {
      assert.equal(await proxy.stop(), 0);
    }
  });

  test("the fixture's namespace-limited user caching a resource cluster-wide: list and watch both named", async () => {
    const proxy = await startProxy(f, {
      run: 'cli',
      kubeconfig: f.kubeconfigs.limited,
      resources: 'configmaps',
    });
    try {
      const lines = await eventually('both RBAC lines', 30_000, async () => {
        const l = proxy.logs().filter((x) => String(x.msg).startsWith('missing RBAC permission'));
        return l.length >= 2 ? l : undefined;
      });
      assert.deepEqual(
        lines.slice(0, 2).map((l) => l.msg),
        ['watch', 'list'].map(
          (verb) =>
            `missing RBAC permission: the proxy's identity may not ${verb} configmaps cluster-wide; grant list and watch on every cached resource (see deploy/)`,
        ),
      );
      const r = await get(`${proxy.ops}/readyz?verbose`);
      assert.equal(r.status, 503);
      assert.match(
        r.body,
        /\[-\]cache-sync\/configmaps failed: not synced: .*cannot list resource "configmaps"/,
      );
    } finally {
      assert.equal(await proxy.stop(), 0);
    }
  });
});
