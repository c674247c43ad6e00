import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { WatchCache } from '../../../src/cache/watch-cache.ts';
import {
  ResourceSnapshot,
  type SnapshotLoadResult,
  type SnapshotSettings,
  type SnapshotWriteResult,
} from '../../../src/snapshot/resource-snapshot.ts';
import { ensureSnapshotDir } from '../../../src/snapshot/snapshot-file.ts';
import type { ApiserverIdentity } from '../../../src/snapshot/snapshot-format.ts';
import {
  ALL,
  drain,
  names,
  newCache,
  PODS,
  pod,
  statusCode,
  summary,
} from '../../support/watch-cache-fixtures.ts';

const SERVER = 'https://10.0.0.1:6443';

async function settings(server = SERVER, uid: string | null = 'uid-1') {
  const dir = join(await fs.mkdtemp(join(tmpdir(), 'kcp-snap-')), 'snapshots');
  await ensureSnapshotDir(dir);
  const loads: SnapshotLoadResult[] = [];
  const writes: SnapshotWriteResult[] = [];
  const id: ApiserverIdentity = { server, kubeSystemUID: uid };
  const s: SnapshotSettings = {
    dir,
    intervalMs: 60_000,
    identity: { server, known: () => id, get: async () => id },
    metrics: { loaded: (_gr, r) => loads.push(r), written: (_gr, r) => writes.push(r) },
  };
  return { s, dir, loads, writes };
}

/** A Pod cache at RV 20 whose window (10, 20] holds an update, a create and a delete. */
function churned(): WatchCache {
  const { cache } = newCache();
  cache.replace([pod('a', 'p1', 5, { labels: { app: 'web' } }), pod('a', 'p2', 7), pod('b', 'p3', 8)], '10');
  cache.update(pod('a', 'p1', 12, { labels: { app: 'db' } }));
  cache.add(pod('a', 'p4', 15));
  cache.delete(pod('a', 'p2', 18));
  cache.bookmark('20');
  return cache;
}

async function saved(s: SnapshotSettings, cache = churned(), scope = '') {
  const snap = new ResourceSnapshot(s, 'pods', scope);
  snap.start(cache, PODS);
  await snap.write();
  snap.stop();
  return snap;
}

describe('ResourceSnapshot', () => {
  it('writes a 0600 file in the 0700 directory and loads the same store, RV and window', async () => {
    const { s, dir, loads, writes } = await settings();
    const snap = await saved(s);
    assert.deepEqual(writes, ['ok']);
    assert.equal((await fs.stat(dir)).mode & 0o777, 0o700);
    assert.equal((await fs.stat(join(dir, snap.file))).mode & 0o777, 0o600);
    assert.deepEqual(await fs.readdir(dir), ['pods.snap']); // no temporary file left

    const loaded = await new ResourceSnapshot(s, 'pods', '').load(undefined);
    assert.ok(loaded);
    assert.deepEqual(loads, ['restored']);
    assert.equal(loaded.header.resourceVersion, '20'); // the cache's RV, not the newest object's (18)
    assert.equal(loaded.header.windowStart, '10');
    assert.deepEqual(loaded.info.gvr, PODS.gvr);
    const { cache } = newCache();
    cache.restore(loaded.state, loaded.header.takenAtMs);
    assert.equal(cache.resourceVersion(), 20n);
    assert.deepEqual(names(cache.list(ALL).items), ['a/p1', 'a/p4', 'b/p3']);
    assert.equal(cache.stats().oldestRV, '10');
    assert.equal(cache.stats().restoredFromMs, loaded.header.takenAtMs);
    // A client that saw RV 10 before the restart resumes without a 410, each event once, in order.
    const w = cache.watch({ ...ALL, resourceVersion: 10n });
    assert.deepEqual(summary(drain(w)), ['MODIFIED p1@12', 'ADDED p4@15', 'DELETED p2@18']);
    // The replaced state came back too: a selector on the old labels sees p1 leave it.
    const web = cache.watch({
      ...ALL,
      labelSelector: (await import('../../../src/apimachinery/selectors.ts')).parseLabelSelector('app=web'),
      resourceVersion: 10n,
    });
    assert.deepEqual(summary(drain(web)), ['DELETED p1@12']);
  });

  it('a restored cache answers Exact and continue reads with 410 (the server passes them upstream) until the upstream proves it live', async () => {
    const { s } = await settings();
    await saved(s);
    const loaded = (await new ResourceSnapshot(s, 'pods', '').load(undefined))!;
    const { cache } = newCache();
    cache.restore(loaded.state, loaded.header.takenAtMs);
    assert.equal(cache.isLive(), false);
    assert.equal(
      statusCode(() => cache.list({ ...ALL, exactRV: 15n })),
      410,
    );
    assert.deepEqual(names(cache.list(ALL).items), ['a/p1', 'a/p4', 'b/p3']);
    cache.setLive(true);
    assert.equal(cache.stats().restoredFromMs, null);
    assert.deepEqual(names(cache.list({ ...ALL, exactRV: 15n }).items), ['a/p1', 'a/p2', 'a/p4', 'b/p3']);
  });

  it('does not write again when the cache did not move, nor while it is an unproven snapshot', async () => {
    const { s, writes } = await settings();
    const cache = churned();
    const snap = new ResourceSnapshot(s, 'pods', '');
    snap.start(cache, PODS);
    await snap.write();
    await snap.write();
    assert.deepEqual(writes, ['ok']);
    cache.add(pod('c', 'p9', 21));
    await snap.final();
    assert.deepEqual(writes, ['ok', 'ok']);
    const loaded = (await new ResourceSnapshot(s, 'pods', '').load(undefined))!;
    assert.equal(loaded.header.resourceVersion, '21');
    const restored = newCache().cache;
    restored.restore(loaded.state, 0);
    const again = new ResourceSnapshot(s, 'pods', '');
    await again.load(undefined);
    again.start(restored, PODS);
    await again.write();
    again.stop();
    assert.deepEqual(writes, ['ok', 'ok']);
  });

  for (const [what, open] of [
    [
      'another scope',
      (s: SnapshotSettings) => new ResourceSnapshot(s, 'pods', '[fieldSelector=spec.nodeName=n1]'),
    ],
    [
      'another apiserver URL',
      (s: SnapshotSettings) =>
        new ResourceSnapshot(
          { ...s, identity: { ...s.identity, server: 'https://10.9.9.9:6443' } },
          'pods',
          '',
        ),
    ],
  ] as const) {
    it(`refuses and deletes a snapshot of ${what}`, async () => {
      const { s, dir, loads } = await settings();
      const snap = await saved(s);
      // The scoped cache's own file is another name: put the unscoped one there to try it.
      const other = open(s);
      if (other.file !== snap.file) await fs.rename(join(dir, snap.file), join(dir, other.file));
      assert.equal(await other.load(undefined), undefined);
      assert.deepEqual(loads, ['foreign']);
      assert.deepEqual(await fs.readdir(dir), []);
    });
  }

  it('refuses a snapshot of another cluster at the same URL before serving it: the kube-system UID is asked at load', async () => {
    // The e2e input that broke it: requests held until the snapshots load were then answered
    // from another cluster's snapshot, the UID being compared only by the later resume check.
    const { s, dir, loads } = await settings(SERVER, 'uid-old');
    await saved(s);
    const now: ApiserverIdentity = { server: SERVER, kubeSystemUID: 'uid-new' };
    const fresh = new ResourceSnapshot(
      { ...s, identity: { server: SERVER, known: () => undefined, get: async () => now } },
      'pods',
      '',
    );
    assert.equal(await fresh.load(undefined), undefined);
    assert.deepEqual(loads, ['foreign']);
    assert.deepEqual(await fs.readdir(dir), []);
  });

  it('loads a snapshot by its URL alone while the upstream cannot tell its identity (a start during an outage)', async () => {
    const { s, loads } = await settings(SERVER, 'uid-old');
    await saved(s);
    const down = new ResourceSnapshot(
      {
        ...s,
        identity: {
          server: SERVER,
          known: () => undefined,
          get: async () => {
            throw new Error('connect ECONNREFUSED');
          },
        },
      },
      'pods',
      '',
    );
    const loaded = await down.load(undefined);
    assert.equal(loaded?.header.resourceVersion, '20');
    assert.deepEqual(loads, ['restored']);
  });

  it('refuses a snapshot of another namespace (--namespace changed)', async () => {
    const { s, dir, loads } = await settings();
    await saved(s);
    assert.equal(await new ResourceSnapshot(s, 'pods', '').load('team-a'), undefined);
    assert.deepEqual(loads, ['foreign']);
    assert.deepEqual(await fs.readdir(dir), []);
  });

  for (const [fault, damage] of [
    ['truncated', (b: Buffer) => b.subarray(0, 30)],
    ['corrupt', (b: Buffer) => Buffer.concat([b.subarray(0, 100), Buffer.from('x'), b.subarray(101)])],
    [
      'version',
      (b: Buffer) => {
        b.writeUInt32BE(99, 8);
        return b;
      },
    ],
  ] as const) {
    it(`ignores a ${fault} snapshot with one warning, deletes it, and serves nothing from it`, async () => {
      const { s, dir, loads } = await settings();
      const warnings: string[] = [];
      const logger = {
        warn: (_o: unknown, m: string) => warnings.push(m),
        info() {},
        child() {
          return this;
        },
      };
      const snap = await saved(s);
      const path = join(dir, snap.file);
      await fs.writeFile(path, damage(await fs.readFile(path)), { mode: 0o600 });
      const again = new ResourceSnapshot({ ...s, logger: logger as never }, 'pods', '');
      assert.equal(await again.load(undefined), undefined);
      assert.deepEqual(loads, [fault]);
      assert.equal(warnings.length, 1);
      assert.match(warnings[0]!, /unreadable/);
      assert.deepEqual(await fs.readdir(dir), []);
    });
  }

  it('refuses a file another user could have written (mode not 0600) and deletes it', async () => {
    const { s, dir, loads } = await settings();
    const snap = await saved(s);
    await fs.chmod(join(dir, snap.file), 0o644);
    assert.equal(await new ResourceSnapshot(s, 'pods', '').load(undefined), undefined);
    assert.deepEqual(loads, ['foreign']);
    assert.deepEqual(await fs.readdir(dir), []);
  });

  it('a full disk stops the snapshots with a metric and one warning; the cache is untouched', async () => {
    const { s, dir, writes } = await settings();
    const warnings: string[] = [];
    const logger = {
      warn: (_o: unknown, m: string) => warnings.push(m),
      info() {},
      child() {
        return this;
      },
    };
    const cache = churned();
    const snap = new ResourceSnapshot({ ...s, dir: '/dev/full/x', logger: logger as never }, 'pods', '');
    snap.start(cache, PODS);
    await snap.write();
    assert.deepEqual(writes, ['error']); // /dev/full/x: ENOTDIR, an ordinary failure
    void dir;
    const full = new ResourceSnapshot({ ...s, logger: logger as never }, 'pods', '');
    const { promises } = await import('node:fs');
    const open = promises.open;
    promises.open = (async () => {
      throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
    }) as typeof open;
    try {
      full.start(cache, PODS);
      await full.write();
      cache.add(pod('c', 'p9', 21));
      await full.write();
    } finally {
      promises.open = open;
    }
    assert.deepEqual(writes, ['error', 'disk_full']);
    assert.equal(warnings.length, 2);
    assert.match(warnings[1]!, /disk full; snapshots of this resource stopped/);
    assert.deepEqual(names(cache.list(ALL).items), ['a/p1', 'a/p4', 'b/p3', 'c/p9']);
  });
});
