/**
 * scripts/bundle.ts: the one-file CLI the npm bin and the image run (issue 12, idle RSS). Each
 * bundle is written under dist/ (it requires undici and client-node's lazy modules from the
 * repository's node_modules) and run in a fresh Node process.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { bundle } from '../../../scripts/bundle.ts';
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

  it('writes the CLI as one file with the shebang of src/cli.ts, without client-node gen/ or undici index', async () => {
    const r = await bundle({ outfile: join(tmp, 'cli.js') });
    const text = readFileSync(r.outfile, 'utf8');
    assert.equal(text.split('\n')[0], readFileSync(join(repo, 'src/cli.ts'), 'utf8').split('\n')[0]);
    assert.ok(r.inputs.includes('src/main.ts'), r.inputs.slice(0, 5).join(' '));
    assert.ok(r.inputs.some((i) => i.endsWith('node_modules/fastify/fastify.js')));
    assert.ok(r.inputs.includes('src/upstream/client-node-gen-stub.ts'));
    assert.equal(r.inputs.filter((i) => /client-node\/dist\/gen\/(index|apis|models)\b/.test(i)).length, 0);
    assert.equal(r.inputs.filter((i) => i.includes('node_modules/undici/')).length, 0);
    assert.equal(r.bytes, Buffer.byteLength(text));

    const version = (JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { version: string })
      .version;
    const v = await run([r.outfile, '--version']);
    assert.equal(v.code, 0, v.stderr);
    assert.equal(v.stdout.trim(), `kube-cache-proxy ${version}`);
    const bad = await run([r.outfile, '--resources', 'pods[fieldSelector=x']);
    assert.equal(bad.code, 2, bad.stderr);
    assert.match(bad.stderr, /--resources/);
  });

  it('keeps the lean client-node loading: an OIDC kubeconfig loads its provider on first use', async () => {
    const idToken = OIDC_ID_TOKEN;
    const kubeconfig = join(tmp, 'oidc.json');
    writeOidcKubeconfig(kubeconfig);
    const entry = join(tmp, 'probe-entry.ts');
    writeFileSync(
      entry,
      `import * as lean from ${JSON.stringify(join(repo, 'src/upstream/lean-client-node.ts'))};
import { loadKubeConfig } from ${JSON.stringify(join(repo, 'src/upstream/kubeconfig.ts'))};
import { Agent } from ${JSON.stringify(join(repo, 'src/upstream/undici-core.ts'))};
const loaded = loadKubeConfig({ kubeconfig: ${JSON.stringify(kubeconfig)} });
const before = [...lean.lazyLoads()];
const opts: { headers?: Record<string, string> } = {};
await loaded.kc.applyToHTTPSOptions(opts as never);
console.log(JSON.stringify({ before, after: lean.lazyLoads(), authorization: opts.headers?.Authorization, agent: typeof Agent }));
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
    });
  });
});
