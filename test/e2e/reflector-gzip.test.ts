/**
 * Upstream bytes of one cold sync (issue 12), with `--upstream-watch-encoding=gzip` (the
 * default, identity, trades these bytes for events decoded at once): the reflector asks for gzip
 * like client-go, and the real apiserver (1.37, `WatchListCompression`) gzips its watch-list
 * stream one member per flush.
 * 10,000 small ConfigMaps in one namespace, synced once by the proxy (its reflector's watch-list)
 * and once by a direct client-go informer (the fixture's probe, WatchListClient on), each through
 * its own TCP relay that counts the bytes the apiserver sent (TLS records, i.e. the compressed
 * body plus headers and handshakes). Goal: the proxy moves no more bytes than the direct client.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { connect, createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { request } from 'undici';
import { createUpstream, type Upstream } from '../../src/upstream/connection.ts';
import { type Fixture, sharedFixture, writeKubeconfig } from '../fixture/index.ts';
import { startProbe } from '../support/informer-probe.ts';
import { startProxy } from '../support/proxy.ts';
import { createMany } from '../support/seed-objects.ts';

/** A loopback TCP relay to `target` (host:port) counting the bytes sent back to its clients. */
async function countingRelay(
  target: URL,
): Promise<{ url: string; down: () => number; close(): Promise<void> }> {
  let down = 0;
  const server: Server = createServer((client) => {
    const up = connect(Number(target.port), target.hostname);
    up.on('data', (d: Buffer) => {
      down += d.length;
    });
    client.pipe(up).pipe(client);
    const end = () => {
      client.destroy();
      up.destroy();
    };
    client.on('error', end).on('close', end);
    up.on('error', end).on('close', end);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const addr = server.address() as { port: number };
  return {
    url: `https://127.0.0.1:${addr.port}`,
    down: () => down,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        // Open connections (a watch) end with the relay.
        server.unref();
      }),
  };
}

const N = 10_000;

describe('upstream bytes of one cold sync: gzip like client-go', () => {
  let f: Fixture;
  let up: Upstream;
  let ns: string;
  before(async () => {
    f = await sharedFixture();
    up = await createUpstream({ kubeconfig: f.kubeconfigs.adminToken });
    ns = await f.newNamespace('gzip');
    // ~300 JSON bytes each, 48 of them random (not trivially compressible, as real data is not).
    await createMany(
      up,
      `/api/v1/namespaces/${ns}/configmaps`,
      N,
      (i) => ({
        metadata: { name: `cm-${String(i).padStart(5, '0')}`, labels: { app: `a${i % 10}` } },
        data: { i: String(i), r: randomBytes(36).toString('base64') },
      }),
      32,
    );
  });
  after(async () => {
    await up?.close();
  });

  test(`${N.toLocaleString('en-US')} ConfigMaps: proxy upstream bytes ≤ a direct client-go informer's`, async () => {
    const kubeconfig = (server: string, name: string) =>
      writeKubeconfig(join(f.dir, `gzip-${name}-${process.pid}.kubeconfig`), {
        server,
        caFile: f.caFile,
        user: { token: f.tokens.admin },
      });
    const target = new URL(f.server);

    // Direct: a client-go informer on the namespace's ConfigMaps (watch-list).
    const direct = await countingRelay(target);
    try {
      const p = startProbe(f.bin.probe, {
        kubeconfig: await kubeconfig(direct.url, 'direct'),
        resource: 'configmaps',
        namespace: ns,
        watchList: true,
        durationMs: 200,
        quiet: true,
      });
      await p.done;
    } finally {
      await direct.close();
    }

    // The proxy: one reflector for the same namespace's ConfigMaps, until synced.
    const relay = await countingRelay(target);
    let proxyBytes: number;
    let objects: number;
    try {
      const proxy = await startProxy(f, {
        resources: 'configmaps',
        kubeconfig: await kubeconfig(relay.url, 'proxy'),
        args: ['--namespace', ns, '--upstream-watch-encoding', 'gzip'],
        syncTimeoutMs: 120_000,
      });
      try {
        proxyBytes = relay.down();
        objects = proxy.parts.statusSource.resources()[0]?.objects ?? -1;
      } finally {
        await proxy.stop();
      }
    } finally {
      await relay.close();
    }
    const identity = Buffer.byteLength(
      await (
        await request(`${f.server}/api/v1/namespaces/${ns}/configmaps?resourceVersion=0`, {
          dispatcher: up.dispatcher,
          headers: { authorization: `Bearer ${f.tokens.admin}`, 'accept-encoding': 'identity' },
        })
      ).body.text(),
    );
    const ratio = proxyBytes / direct.down();
    process.stderr.write(
      `# cold sync of ${N} ConfigMaps: proxy ${proxyBytes} B, direct client-go ${direct.down()} B (ratio ${ratio.toFixed(3)}), identity LIST ${identity} B\n`,
    );
    assert.equal(objects, N, 'every ConfigMap cached');
    // Compressed: well under the identity bytes (4× before this issue).
    assert.ok(proxyBytes < identity / 2, `proxy ${proxyBytes} B vs identity ${identity} B`);
    assert.ok(ratio <= 1.0, `proxy ${proxyBytes} B vs direct ${direct.down()} B`);
  });
});
