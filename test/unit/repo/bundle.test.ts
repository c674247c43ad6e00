/**
 * scripts/bundle.ts: the bundled CLI the npm bin and the image run (issue 12, idle RSS). Each
 * bundle is written under dist/ (it requires undici and client-node's lazy modules from the
 * repository's node_modules) and run in a fresh Node process.
 */
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { buildRevision, bundle } from '../../../scripts/bundle.ts';
import { gitRevision } from '../../../src/util/build-info.ts';
import { OIDC_ID_TOKEN, writeOidcKubeconfig } from '../../support/oidc-kubeconfig.ts';

const repo = fileURLToPath(new URL('../../../', import.meta.url));

function run(args: string[], timeout = 30_000): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, args, { timeout }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
  });
}

describe('scripts/bundle.ts', () => {
  let tmp: string;
  before(() => {
    mkdirSync(join(repo, 'dist'), { recursive: true });
    tmp = mkdtempSync(join(repo, 'dist', '.bundle-test-'));
  });
  after(() => rmSync(tmp, { recursive: true, force: true }));

  it('writes the CLI as an entry file (the shebang of src/cli.ts) and chunks, without client-node gen/ or undici index', async () => {
    const r = await bundle({ outfile: join(tmp, 'cli.js'), revision: '0123abcd' });
    const text = readFileSync(r.outfile, 'utf8');
    assert.equal(text.split('\n')[0], readFileSync(join(repo, 'src/cli.ts'), 'utf8').split('\n')[0]);
    assert.ok(r.inputs.includes('src/main.ts'), r.inputs.slice(0, 5).join(' '));
    assert.ok(r.inputs.some((i) => i.endsWith('node_modules/fastify/fastify.js')));
    assert.ok(r.inputs.includes('src/upstream/client-node-gen-stub.ts'));
    assert.equal(r.inputs.filter((i) => /client-node\/dist\/gen\/(index|apis|models)\b/.test(i)).length, 0);
    assert.equal(r.inputs.filter((i) => i.includes('node_modules/undici/')).length, 0);
    assert.equal(
      r.bytes,
      r.files.reduce((n, f) => n + statSync(f).size, 0),
    );
    assert.ok(r.files.includes(r.outfile) && r.files.length >= 2, r.files.join(' '));
    // The entry links nothing that needs Node >= 22.19 before its version check: its only static
    // import is the banner's createRequire; the rest are dynamic imports of its chunks.
    assert.deepEqual(
      [...text.matchAll(/^import\b.*$/gm)].map((m) => m[0]),
      ["import { createRequire as __kcpCreateRequire } from 'node:module';"],
    );

    const version = (JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { version: string })
      .version;
    const v = await run([r.outfile, '--version']);
    assert.equal(v.code, 0, v.stderr);
    // The stamped revision, not the checkout's: the bundle may run where there is no .git.
    assert.equal(v.stdout, `kube-cache-proxy ${version} (revision 0123abcd)\n`);
    const bad = await run([r.outfile, '--resources', 'pods[fieldSelector=x']);
    assert.equal(bad.code, 2, bad.stderr);
    assert.match(bad.stderr, /--resources/);
  });

  it('records KCP_REVISION when given (the Docker build), else the checkout revision', () => {
    assert.equal(buildRevision({ KCP_REVISION: 'feedc0de' }), 'feedc0de');
    assert.equal(buildRevision({ KCP_REVISION: '' }), gitRevision(repo));
    assert.match(buildRevision({}), /^[0-9a-f]{40}(-dirty)?$/);
  });

  // Regression: the first bundle linked `registerHooks` of node:module statically, so Node 20
  // failed with a SyntaxError (and printed the minified source) instead of the version check.
  const oldNode = ['/usr/bin/node', '/usr/local/bin/node'].find((p) => {
    try {
      const [maj = 0, min = 0] = execFileSync(p, ['--version'], { encoding: 'utf8' })
        .slice(1)
        .split('.')
        .map(Number);
      return maj < 22 || (maj === 22 && min < 19);
    } catch {
      return false;
    }
  });
  it('on Node < 22.19 says which Node it needs, and exits 2', {
    skip: oldNode ? false : 'no Node older than 22.19 on this machine',
  }, async () => {
    const r = await bundle({ outfile: join(tmp, 'old-node.js') });
    const out = await new Promise<{ code: number; stderr: string }>((res) =>
      execFile(oldNode!, [r.outfile, '--help'], (err, _o, stderr) =>
        res({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stderr }),
      ),
    );
    assert.equal(out.code, 2);
    assert.match(
      out.stderr,
      /^kube-cache-proxy: needs Node\.js >= 22\.19 \(24 LTS recommended\); this is v\d+\.\d+\.\d+\. From a source checkout, `MALLOC_MMAP_THRESHOLD_=131072 npx node --max-semi-space-size=2 dist\/kube-cache-proxy\.js` uses the node@24 devDependency with the bin's memory settings\.\n$/,
    );
  });

  it('without node_modules beside it, says so in one line and exits 1 (attack pass)', async () => {
    const r = await bundle({ outfile: join(tmp, 'alone.js') });
    const away = mkdtempSync(join(tmpdir(), 'kcp-bundle-alone-'));
    try {
      for (const f of r.files) copyFileSync(f, join(away, basename(f)));
      const out = await run([join(away, 'alone.js'), '--version']);
      assert.equal(out.code, 1);
      assert.equal(
        out.stderr,
        'kube-cache-proxy: cannot load undici/lib/dispatcher/dispatcher: kube-cache-proxy needs its production dependencies in a node_modules beside dist/ or above it (npm ci --omit=dev)\n',
      );
    } finally {
      rmSync(away, { recursive: true, force: true });
    }
  });

  it('keeps the lean client-node loading: an OIDC kubeconfig loads its provider on first use', async () => {
    const idToken = OIDC_ID_TOKEN;
    const kubeconfig = join(tmp, 'oidc.json');
    writeOidcKubeconfig(kubeconfig);
    const entry = join(tmp, 'probe-entry.ts');
    writeFileSync(
      entry,
      `import { registerHooks } from 'node:module';
import * as lean from ${JSON.stringify(join(repo, 'src/upstream/lean-client-node.ts'))};
import { loadKubeConfig } from ${JSON.stringify(join(repo, 'src/upstream/kubeconfig.ts'))};
import { Agent } from ${JSON.stringify(join(repo, 'src/upstream/undici-core.ts'))};
// Every module loaded at run time (the bundle holds the rest); then the hook, as the CLI does.
const resolved: string[] = [];
registerHooks({ load(u, c, next) { resolved.push(u); return next(u, c); } });
lean.installLeanClientNode();
const loaded = loadKubeConfig({ kubeconfig: ${JSON.stringify(kubeconfig)} });
const before = [...lean.lazyLoads()];
const opts: { headers?: Record<string, string> } = {};
await loaded.kc.applyToHTTPSOptions(opts as never);
const heavy = resolved.filter((u) => /client-node\\/dist\\/(gen\\/|config\\.js$)|undici\\/index\\.js$/.test(u));
console.log(JSON.stringify({ before, after: lean.lazyLoads(), authorization: opts.headers?.Authorization, agent: typeof Agent, heavy, oidc: resolved.some((u) => u.endsWith('/oidc_auth.js')) }));
`,
    );
    const r = await bundle({ entry, outfile: join(tmp, 'probe.js') });
    const out = await run([r.outfile]);
    assert.equal(out.code, 0, out.stderr);
    assert.deepEqual(JSON.parse(out.stdout), {
      before: [],
      after: ['./oidc_auth.js'],
      authorization: `Bearer ${idToken}`,
      agent: 'function',
      // Regression (attack pass): oidc_auth.js's `./config.js` loaded a second client-node
      // config.js from node_modules, with the generated API and undici's index (+37 MiB).
      heavy: [],
      oidc: true,
    });
  });
});
