/**
 * issue 11 item 14: the proxy stays below the shipped container limits under churn. The sidecar
 * of deploy/base/deployment.yaml (its `--resources`, its `NODE_OPTIONS` heap size and its memory
 * limit, read from the manifest) runs as a `src/cli.ts` child in front of a fake upstream that
 * churns large objects as fast as the proxy takes them — enough for every resource's history to
 * reach its byte cap (32 MiB) — while clients watch and list through it. The child's peak RSS
 * (`VmHWM`) must stay below the memory limit, it must not die, and each history must have hit
 * its cap (so the cap, not a short churn, is what bounded it).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { request } from 'undici';
import { parse } from 'yaml';
import { startChurnUpstream } from '../support/churn-upstream.ts';
import { spawnProxyCli } from '../support/proxy.ts';

const MiB = 1024 * 1024;
/** The history's default byte cap (watch-cache.ts `historyMaxBytes`). */
const HISTORY_CAP = 32 * MiB;

interface Sidecar {
  args: string[];
  env: { name: string; value?: string }[];
  resources: { limits: { memory: string } };
}

/** The shipped sidecar: its `--resources`, `NODE_OPTIONS` and memory limit in bytes. */
function shippedSidecar(): { resources: string; nodeOptions: string; memoryLimit: number } {
  const d = parse(readFileSync(new URL('../../deploy/base/deployment.yaml', import.meta.url), 'utf8'));
  const c = (d.spec.template.spec.initContainers as Sidecar[]).find((x) =>
    x.args.some((a) => a.startsWith('--resources=')),
  )!;
  const resources = c.args.find((a) => a.startsWith('--resources='))!.slice('--resources='.length);
  const nodeOptions = c.env.find((e) => e.name === 'NODE_OPTIONS')!.value!;
  const m = /^(\d+)Mi$/.exec(c.resources.limits.memory);
  assert.ok(m, `memory limit ${c.resources.limits.memory} in Mi`);
  return { resources, nodeOptions, memoryLimit: Number(m[1]) * MiB };
}

/** `VmRSS` / `VmHWM` (peak) of `pid`, bytes. */
function rss(pid: number): { now: number; peak: number } {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(s)?.[1] ?? 'NaN') * 1024;
  return { now: kb('VmRSS'), peak: kb('VmHWM') };
}

/** Reads a watch through the proxy until `signal` aborts; returns the bytes received. */
async function watchAll(url: string, signal: AbortSignal): Promise<number> {
  let n = 0;
  try {
    const r = await request(url, { headers: { authorization: 'Bearer client' }, signal, bodyTimeout: 0 });
    for await (const c of r.body) n += (c as Buffer).length;
  } catch (e) {
    if (!signal.aborted) throw e;
  }
  return n;
}

test('issue 11 item 14: under churn the proxy stays below the shipped memory limit and heap size', {
  timeout: 360_000,
}, async (t) => {
  const shipped = shippedSidecar();
  assert.match(shipped.nodeOptions, /--max-old-space-size=\d+/);
  const up = await startChurnUpstream();
  const dir = await mkdtemp(join(tmpdir(), 'kcp-churn-'));
  const proxy = spawnProxyCli(
    [
      '--kubeconfig',
      await up.writeKubeconfig(join(dir, 'kubeconfig')),
      `--resources=${shipped.resources}`,
      '--listen=127.0.0.1:0',
      '--ops-listen=127.0.0.1:0',
      '--log-level=info',
    ],
    { NODE_OPTIONS: shipped.nodeOptions },
  );
  const clients = new AbortController();
  try {
    const { address, ops } = await proxy.listening();
    const pid = proxy.child.pid!;
    for (let i = 0; ; i++) {
      const r = await request(`${ops}/readyz`);
      await r.body.dump();
      if (r.statusCode === 200) break;
      assert.ok(i < 300, 'proxy not ready in 30 s');
      await new Promise((ok) => setTimeout(ok, 100));
    }
    const paths = ['/api/v1/pods', '/api/v1/configmaps', '/apis/apps/v1/deployments'];
    // Clients: per resource a watch from now and one with the initial events, and a LIST every 500 ms.
    const watches = paths.flatMap((p) => [
      watchAll(`${address}${p}?watch=1&allowWatchBookmarks=true`, clients.signal),
      watchAll(`${address}${p}?watch=1&resourceVersion=0`, clients.signal),
    ]);
    const lists = (async () => {
      while (!clients.signal.aborted) {
        for (const p of paths) {
          const r = await request(`${address}${p}`, { signal: clients.signal }).catch(() => undefined);
          await r?.body.dump();
        }
        await new Promise((ok) => setTimeout(ok, 500));
      }
    })();
    let peak = 0;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rss(pid).now);
    }, 100);
    // Enough for the old accounting (raw bytes only) to fill its cap too: 48 MiB of objects each.
    // A bound for a hang only: at a load average of 25 on 2 cores the churn took more than 50 s.
    const deadline = AbortSignal.timeout(300_000);
    const sent = await up.churn(48 * MiB, deadline);
    clearInterval(sampler);
    assert.equal(deadline.aborted, false, `churn did not finish in 300 s: ${JSON.stringify(sent)}`);
    assert.equal(proxy.child.exitCode, null, `proxy died: ${proxy.stderr()}`);
    const m = rss(pid);
    const r = await request(`${ops}/debug/cache`);
    const debug = (await r.body.json()) as {
      resources: { name: string; bytes: number; window: { bytes: number; events: number } }[];
    };
    const metrics = await (await request(`${ops}/metrics`)).body.text();
    const metric = (n: string) =>
      Math.round(Number(new RegExp(`^${n} (\\S+)`, 'm').exec(metrics)?.[1]) / MiB);
    const summary = {
      heapUsedMiB: metric('nodejs_heap_size_used_bytes'),
      heapTotalMiB: metric('nodejs_heap_size_total_bytes'),
      externalMiB: metric('nodejs_external_memory_bytes'),
      rssNowMiB: Math.round(m.now / MiB),
      sent,
      peakRssMiB: Math.round(Math.max(peak, m.peak) / MiB),
      limitMiB: shipped.memoryLimit / MiB,
      caches: debug.resources.map(
        (x) =>
          `${x.name}: ${x.window.events} events, ${Math.round(x.window.bytes / MiB)} MiB history, ${Math.round(x.bytes / MiB)} MiB store`,
      ),
    };
    for (const x of debug.resources) {
      assert.ok(x.window.bytes <= HISTORY_CAP, JSON.stringify(summary));
      assert.ok(x.window.bytes > HISTORY_CAP * 0.9, `history below its cap: ${JSON.stringify(summary)}`);
    }
    assert.ok(
      Math.max(peak, m.peak) < shipped.memoryLimit,
      `peak RSS over the limit: ${JSON.stringify(summary)}`,
    );
    t.diagnostic(JSON.stringify(summary));
    clients.abort();
    const received = await Promise.all(watches);
    await lists;
    for (const n of received) assert.ok(n > 1024 * 1024, `a client watch received ${n} bytes`);
  } finally {
    clients.abort();
    await proxy.stop();
    await up.close();
    await rm(dir, { recursive: true, force: true });
  }
});
