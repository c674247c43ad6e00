import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { createUpstream } from '../../../src/upstream/connection.ts';
import { loadKubeConfig } from '../../../src/upstream/kubeconfig.ts';
import { FakeClock } from '../../support/fake-clock.ts';

describe('loadKubeConfig / createUpstream', () => {
  it('finds a relative token-file, resolves it against the kubeconfig and re-reads it', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'kcp-kc-'));
    try {
      writeFileSync(path.join(dir, 'tok'), 'abc');
      const file = path.join(dir, 'config');
      writeFileSync(
        file,
        `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:6443/prefix/
    insecure-skip-tls-verify: true
users:
- name: u
  user:
    token-file: tok
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`,
      );
      const loaded = loadKubeConfig({ kubeconfig: file });
      assert.equal(loaded.tokenFile, path.join(dir, 'tok'));
      const up = await createUpstream({ loaded });
      assert.equal(up.baseUrl, 'https://127.0.0.1:6443/prefix');
      assert.equal(await up.authorization(), 'Bearer abc');
      await up.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("reads client-go's tokenFile key (what kubectl uses), not only client-node's token-file", async () => {
    // Regression: the deploy/README tiering kubeconfig (`tokenFile:`, client-go's key) made the
    // proxy call the apiserver as system:anonymous, since client-node reads only `token-file`.
    const dir = mkdtempSync(path.join(tmpdir(), 'kcp-kc-'));
    try {
      writeFileSync(path.join(dir, 'tok'), 'sa-token');
      const file = path.join(dir, 'config');
      writeFileSync(
        file,
        `apiVersion: v1
kind: Config
clusters:
- name: pool
  cluster: {server: 'https://127.0.0.1:8443', insecure-skip-tls-verify: true}
users:
- name: node-proxy
  user:
    tokenFile: tok
contexts:
- name: pool
  context: {cluster: pool, user: node-proxy}
current-context: pool
`,
      );
      const loaded = loadKubeConfig({ kubeconfig: file });
      assert.equal(loaded.tokenFile, path.join(dir, 'tok'));
      const up = await createUpstream({ loaded });
      assert.equal(await up.authorization(), 'Bearer sa-token');
      await up.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('client-certificate users send no Authorization header', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'kcp-kc-'));
    try {
      const file = path.join(dir, 'config');
      writeFileSync(
        file,
        `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: 'https://127.0.0.1:6443', certificate-authority-data: ${Buffer.from('not-a-real-ca').toString('base64')}}
users:
- name: u
  user: {client-certificate-data: ${Buffer.from('cert').toString('base64')}, client-key-data: ${Buffer.from('key').toString('base64')}}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`,
      );
      const up = await createUpstream({ kubeconfig: file });
      assert.equal(await up.authorization(), undefined);
      await up.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('loadKubeConfig: in-cluster', () => {
  it('uses KUBERNETES_SERVICE_HOST/PORT, the mounted CA, and re-reads the rotating service-account token', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'kcp-sa-'));
    const saved = { host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT };
    try {
      const sa = path.join(dir, 'var/run/secrets/kubernetes.io/serviceaccount');
      mkdirSync(sa, { recursive: true });
      writeFileSync(path.join(sa, 'token'), 'sa-token-1');
      writeFileSync(path.join(sa, 'ca.crt'), 'not-a-real-ca');
      writeFileSync(path.join(sa, 'namespace'), 'kube-system');
      process.env.KUBERNETES_SERVICE_HOST = '10.0.0.1';
      process.env.KUBERNETES_SERVICE_PORT = '443';
      const clock = new FakeClock();
      const loaded = loadKubeConfig({ inCluster: true, inClusterPathPrefix: dir });
      assert.equal(loaded.tokenFile, path.join(sa, 'token'));
      const up = await createUpstream({ loaded, clock });
      assert.equal(up.baseUrl, 'https://10.0.0.1'); // default port dropped by URL
      assert.equal(await up.authorization(), 'Bearer sa-token-1');
      writeFileSync(path.join(sa, 'token'), 'sa-token-2-rotated');
      await clock.step(10_000);
      assert.equal(await up.authorization(), 'Bearer sa-token-2-rotated');
      await up.close();
    } finally {
      process.env.KUBERNETES_SERVICE_HOST = saved.host;
      process.env.KUBERNETES_SERVICE_PORT = saved.port;
      if (saved.host === undefined) delete process.env.KUBERNETES_SERVICE_HOST;
      if (saved.port === undefined) delete process.env.KUBERNETES_SERVICE_PORT;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('loadKubeConfig: nothing configured', () => {
  it('fails with what is missing instead of falling back to http://localhost:8080', () => {
    const saved = {
      HOME: process.env.HOME,
      KUBECONFIG: process.env.KUBECONFIG,
      HOST: process.env.KUBERNETES_SERVICE_HOST,
    };
    const home = mkdtempSync(path.join(tmpdir(), 'kcp-home-'));
    try {
      process.env.HOME = home;
      delete process.env.KUBECONFIG;
      delete process.env.KUBERNETES_SERVICE_HOST;
      assert.throws(() => loadKubeConfig({}), {
        message:
          'kubeconfig: none found: pass --kubeconfig, set KUBECONFIG, create ~/.kube/config, or run in a pod (KUBERNETES_SERVICE_HOST is unset)',
      });
      // A ~/.kube/config is found and used as before.
      mkdirSync(path.join(home, '.kube'));
      writeFileSync(
        path.join(home, '.kube', 'config'),
        'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n',
      );
      assert.equal(loadKubeConfig({}).kc.getCurrentCluster()?.server, 'https://127.0.0.1:6443');
    } finally {
      for (const [k, v] of [
        ['HOME', saved.HOME],
        ['KUBECONFIG', saved.KUBECONFIG],
        ['KUBERNETES_SERVICE_HOST', saved.HOST],
      ] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
      rmSync(home, { recursive: true, force: true });
    }
  });
});

describe('loadKubeConfig: a file that does not load', () => {
  // User trial: these were YAML's multi-line message, `EISDIR: illegal operation on a directory,
  // read` and `kubeconfig: no current cluster with a server URL`, none naming the file.
  it('is one line naming the file: unreadable, not YAML, no current cluster', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'kcp-kc-bad-'));
    try {
      const notYaml = path.join(dir, 'not-yaml');
      writeFileSync(notYaml, 'garbage: [\n');
      const empty = path.join(dir, 'empty');
      writeFileSync(empty, '{}\n');
      const cases: [string, RegExp][] = [
        [dir, new RegExp(`^kubeconfig ${dir}: cannot read: EISDIR$`)],
        [
          notYaml,
          new RegExp(
            `^kubeconfig ${notYaml}: invalid YAML: Flow sequence in block collection .* at line 2, column 1: garbage: \\[ \\^$`,
          ),
        ],
        [empty, new RegExp(`^kubeconfig ${empty}: no current cluster with a server URL$`)],
      ];
      for (const [file, message] of cases) {
        assert.throws(
          () => loadKubeConfig({ kubeconfig: file }),
          (err: Error & { code?: string }) => {
            assert.equal(err.code, 'KCP_ERR_KUBECONFIG');
            assert.match(err.message, message);
            assert.doesNotMatch(err.message, /\n/);
            return true;
          },
          file,
        );
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
