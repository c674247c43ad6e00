import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const src = fileURLToPath(new URL('../../../src/', import.meta.url));

function run(script: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--input-type=module', '-e', script],
      { timeout: 30_000 },
      (err, stdout, stderr) => resolve({ code: err ? 1 : 0, stdout, stderr }),
    );
  });
}

// A fresh process: whether undici's index.js is loaded is a property of the whole process.
describe('undici-core', () => {
  it('requests through undici’s own Agent without loading undici’s index, also for client-node', async () => {
    const script = `
      import { createServer } from 'node:http';
      import { createRequire } from 'node:module';
      const lean = await import(${JSON.stringify(`${src}upstream/lean-client-node.ts`)});
      lean.installLeanClientNode();
      const core = await import(${JSON.stringify(`${src}upstream/undici-core.ts`)});
      await import('@kubernetes/client-node/dist/config.js');
      const require = createRequire(import.meta.url);
      const indexPath = require.resolve('undici');
      const indexLoaded = () => Object.keys(require.cache).includes(indexPath);
      const seen = [];
      const server = createServer((req, res) => {
        let body = '';
        req.on('data', (d) => (body += d)).on('end', () => {
          seen.push({ method: req.method, url: req.url, body, auth: req.headers.authorization });
          res.writeHead(201, { 'content-type': 'text/plain' }).end('made');
        });
      });
      await new Promise((r) => server.listen(0, '127.0.0.1', r));
      const agent = new core.Agent({ connections: 1 });
      const res = await core.request('http://127.0.0.1:' + server.address().port + '/api/v1/pods?limit=2', {
        method: 'POST', body: 'x=1', headers: { authorization: 'Bearer t' }, dispatcher: agent,
      });
      const get = await core.request('http://127.0.0.1:' + server.address().port + '/version', { dispatcher: agent });
      const out = { status: res.statusCode, text: await res.body.text(), getStatus: get.statusCode, getText: await get.body.text(), seen, indexBefore: indexLoaded() };
      await agent.close();
      server.close();
      const full = await import('undici');
      out.sameAgent = full.Agent === core.Agent;
      out.sameProxyAgent = full.ProxyAgent === core.ProxyAgent;
      out.indexAfter = indexLoaded();
      process.stdout.write(JSON.stringify(out));
    `;
    const r = await run(script);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), {
      status: 201,
      text: 'made',
      getStatus: 201,
      getText: 'made',
      seen: [
        { method: 'POST', url: '/api/v1/pods?limit=2', body: 'x=1', auth: 'Bearer t' },
        { method: 'GET', url: '/version', body: '' },
      ],
      indexBefore: false,
      sameAgent: true,
      sameProxyAgent: true,
      indexAfter: true,
    });
  });
});
