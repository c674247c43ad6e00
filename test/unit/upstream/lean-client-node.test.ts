import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { OIDC_ID_TOKEN, writeOidcKubeconfig } from '../../support/oidc-kubeconfig.ts';

const src = fileURLToPath(new URL('../../../src/', import.meta.url));

function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, args, { timeout: 30_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? 1 : 0, stdout, stderr }),
    );
  });
}

// Runs in a fresh process: the hook must be installed before client-node is linked.
describe('installLeanClientNode', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'kcp-lean-'));
  after(() => rmSync(tmp, { recursive: true, force: true }));

  it('keeps KubeConfig loading and credentials, answers only config.js → gen/index.js with the stub', async () => {
    const kubeconfig = join(tmp, 'kc.json');
    writeFileSync(
      kubeconfig,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [
          {
            name: 'c',
            cluster: { server: 'https://127.0.0.1:6443/prefix', 'insecure-skip-tls-verify': true },
          },
        ],
        users: [{ name: 'u', user: { token: 'tok' } }],
        contexts: [{ name: 'c', context: { cluster: 'c', user: 'u', namespace: 'ns' } }],
        'current-context': 'c',
      }),
    );
    const script = `
      const lean = await import(${JSON.stringify(join(src, 'upstream/lean-client-node.ts'))});
      const first = lean.installLeanClientNode();
      const again = lean.installLeanClientNode();
      const { loadKubeConfig } = await import(${JSON.stringify(join(src, 'upstream/kubeconfig.ts'))});
      const { createUpstream } = await import(${JSON.stringify(join(src, 'upstream/connection.ts'))});
      const loaded = loadKubeConfig({ kubeconfig: ${JSON.stringify(kubeconfig)} });
      const up = await createUpstream({ loaded });
      let makeApiClient;
      try { loaded.kc.makeApiClient(class {}); } catch (e) { makeApiClient = e.message; }
      console.log(JSON.stringify({
        first, again,
        redirects: lean.leanRedirects().map((u) => u.replace(/^.*node_modules/, '')),
        lazyLoads: lean.lazyLoads(),
        baseUrl: up.baseUrl,
        namespace: loaded.kc.getContextObject(loaded.kc.getCurrentContext()).namespace,
        authorization: await up.authorization(),
        makeApiClient,
      }));
      await up.close();`;
    const r = await run(['--input-type=module', '-e', script]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), {
      first: true,
      again: false,
      redirects: ['/@kubernetes/client-node/dist/config.js'],
      lazyLoads: [],
      baseUrl: 'https://127.0.0.1:6443/prefix',
      namespace: 'ns',
      authorization: 'Bearer tok',
      makeApiClient:
        'kube-cache-proxy loads @kubernetes/client-node without its generated API client: KubeConfig.makeApiClient is unavailable',
    });
  });

  it('loads an auth provider and a proxy-url agent only when the kubeconfig uses them (issue 12)', async () => {
    const idToken = OIDC_ID_TOKEN;
    const kubeconfig = join(tmp, 'oidc.json');
    writeOidcKubeconfig(kubeconfig, { proxyUrl: 'socks5://127.0.0.1:1080' });
    const script = `
      const lean = await import(${JSON.stringify(join(src, 'upstream/lean-client-node.ts'))});
      lean.installLeanClientNode();
      const { loadKubeConfig } = await import(${JSON.stringify(join(src, 'upstream/kubeconfig.ts'))});
      const loaded = loadKubeConfig({ kubeconfig: ${JSON.stringify(kubeconfig)} });
      const before = [...lean.lazyLoads()];
      const opts = {};
      await loaded.kc.applyToHTTPSOptions(opts);
      console.log(JSON.stringify({
        before,
        after: lean.lazyLoads(),
        authorization: opts.headers?.Authorization,
        agent: opts.agent?.constructor?.name,
      }));`;
    const r = await run(['--input-type=module', '-e', script]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), {
      before: [],
      after: ['./oidc_auth.js', 'socks-proxy-agent'],
      authorization: `Bearer ${idToken}`,
      agent: 'SocksProxyAgent',
    });
  });

  it('the CLI starts with it (--version)', async () => {
    const r = await run([join(src, 'cli.ts'), '--version']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^kube-cache-proxy \d+\.\d+\.\d+ \(revision ([0-9a-f]{40}(-dirty)?|unknown)\)\n$/);
  });
});
