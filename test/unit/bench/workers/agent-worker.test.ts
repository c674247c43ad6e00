import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { AgentResult, AgentSpec } from '../../../../bench/workers/agent-worker.ts';

const worker = fileURLToPath(new URL('../../../../bench/workers/agent-worker.ts', import.meta.url));

test('agent worker, resume mode: a watch that ends is re-opened from its last RV; a 410 is a relist', async () => {
  // The collection: LIST answers RV 5, then 9; the watch from 5 sends one event (RV 7) and ends;
  // the one from 7 answers ERROR 410; the one from 9 stays open.
  const watchedFrom: string[] = [];
  let lists = 0;
  const server = createServer((req, res) => {
    const q = new URL(req.url!, 'http://x').searchParams;
    res.setHeader('content-type', 'application/json');
    if (q.get('watch') !== '1') {
      lists++;
      res.end(JSON.stringify({ metadata: { resourceVersion: lists === 1 ? '5' : '9' }, items: [] }));
      return;
    }
    const rv = q.get('resourceVersion')!;
    watchedFrom.push(rv);
    res.writeHead(200);
    if (rv === '5')
      res.end(`${JSON.stringify({ type: 'ADDED', object: { metadata: { resourceVersion: '7' } } })}\n`);
    else if (rv === '7')
      res.end(
        `${JSON.stringify({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired' } })}\n`,
      );
    else
      res.write(`${JSON.stringify({ type: 'BOOKMARK', object: { metadata: { resourceVersion: rv } } })}\n`);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const spec: AgentSpec = {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    agents: [{ token: 't', paths: ['/api/v1/pods'] }],
    staggerMs: 0,
    resume: true,
  };
  const child = spawn(process.execPath, [worker, JSON.stringify(spec)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  try {
    while (!watchedFrom.includes('9')) await new Promise((r) => setTimeout(r, 20));
    const exited = new Promise((r) => child.once('exit', r));
    child.stdin.end('stop\n');
    await exited;
    const result = JSON.parse(out.trim().split('\n').pop()!) as AgentResult;
    assert.deepEqual(watchedFrom, ['5', '7', '9']);
    assert.equal(lists, 2);
    assert.equal(result.rewatches, 1);
    assert.equal(result.relists, 1);
    assert.equal(result.watches, 3);
    assert.deepEqual(result.errors, []);
  } finally {
    child.kill();
    server.closeAllConnections();
    server.close();
  }
});
