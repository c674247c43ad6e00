/**
 * A protobuf watch-list through the whole proxy (test/support/proxy.ts) in front of a scripted
 * upstream (test/support/fake-upstream.ts): the initial events' frames are carved from shared
 * blocks (src/util/buffer-pool.ts) and each block is freed as soon as the socket wrote all of its
 * frames, with no GC (issue 32: one malloc per frame left glibc's brk heap at its high-water mark
 * after informer syncs; blocks left to the GC held ~7 MiB until a full one).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { request } from 'undici';
import { POOL_BYTES, transientBlocksFreed } from '../../src/util/buffer-pool.ts';
import { until } from '../support/eventually.ts';
import { configMap, startFakeUpstream } from '../support/fake-upstream.ts';
import { runProxyInProcess } from '../support/proxy.ts';

const PB = 'application/vnd.kubernetes.protobuf';
const COUNT = 400;

test('protobuf watch-list: every initial frame arrives, and the blocks they were carved from are freed once written', async () => {
  const up = await startFakeUpstream();
  const dir = await mkdtemp(join(tmpdir(), 'kcp-int-'));
  let proxy: Awaited<ReturnType<typeof runProxyInProcess>>['proxy'] | undefined;
  try {
    const kubeconfig = await up.writeKubeconfig(join(dir, 'kubeconfig'));
    const run = await runProxyInProcess([
      '--kubeconfig',
      kubeconfig,
      '--resources',
      'configmaps',
      '--listen',
      '127.0.0.1:0',
      '--ops-listen',
      '127.0.0.1:0',
    ]);
    proxy = run.proxy;
    const w0 = await up.nextWatch();
    // ~1.1 KB frames: 400 of them fill at least one 256 KiB block and start the next.
    for (let i = 0; i < COUNT; i++) w0.send('ADDED', configMap(`cm-${i}`, 10 + i, { x: 'y'.repeat(1000) }));
    w0.send(
      'BOOKMARK',
      `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"${10 + COUNT}","annotations":{"k8s.io/initial-events-end":"true"}}}`,
    );
    await until('synced', () => run.parts.statusSource.resources()[0]?.synced === true);

    const before = transientBlocksFreed();
    const r = await request(
      `${proxy.address}/api/v1/namespaces/ns/configmaps?watch=1&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan`,
      { headers: { authorization: 'Bearer client', accept: PB } },
    );
    assert.equal(r.statusCode, 200);
    assert.equal(r.headers['content-type'], `${PB};stream=watch`);
    // Frames: a 4-byte big-endian length, then a WatchEvent; until the initial-events-end BOOKMARK.
    let buf = Buffer.alloc(0);
    let frames = 0;
    let bytes = 0;
    const names = new Set<string>(); // in key order (cm-0, cm-1, cm-10, …)
    for await (const c of r.body) {
      buf = Buffer.concat([buf, c as Buffer]);
      while (buf.length >= 4 && buf.length >= 4 + buf.readUInt32BE(0)) {
        const len = buf.readUInt32BE(0);
        const ev = buf.subarray(4, 4 + len);
        assert.ok(ev.includes(Buffer.from(frames < COUNT ? 'ADDED' : 'BOOKMARK')), `frame ${frames}`);
        const name = /cm-\d+/.exec(ev.toString('latin1'))?.[0];
        if (frames < COUNT && name) names.add(name);
        bytes += 4 + len;
        frames++;
        buf = buf.subarray(4 + len);
      }
      if (frames > COUNT) break;
    }
    assert.equal(frames, COUNT + 1);
    assert.equal(names.size, COUNT, 'every object once');
    assert.ok(bytes > POOL_BYTES, `${bytes} bytes of frames fill more than one block`);
    await until('a block freed without a GC', () => transientBlocksFreed() > before);
  } finally {
    await proxy?.stop();
    await up.close();
    await rm(dir, { recursive: true, force: true });
  }
});
