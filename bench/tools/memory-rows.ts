/**
 * The memory rows of bench/run.ts (bench/scenarios/cold.ts) alone, for several proxy process settings side by side
 * (issue 12: V8's young generation, malloc arenas):
 *   node bench/tools/memory-rows.ts [pods=10000] [configmaps=0] [widgets=2000] [variants=default,semi2]
 * Starts its own fixture, seeds, builds dist/ (`npm run build`: tsc and the bundle) and
 * measures every resource with every variant (bench/support/memory.ts definitions), each twice:
 * 2 s after ready, and after protobuf and JSON clients were active (bench/support/memory.ts
 * `exerciseClients`: 10 protobuf-first + 10 JSON watchers left open, 3 LISTs of everything in each
 * format). Variants: bench/support/proxy-variants.ts (`default`: no V8 flags; `shipped`: the CLI's
 * shebang, flags and environment; `semi2`: the shipped V8 flag with glibc's malloc defaults;
 * `mmap128k`: `semi2` with `MALLOC_MMAP_THRESHOLD_=131072`; `arena2` …; `before`: as shipped,
 * the built CLI at `KCP_BENCH_BEFORE_CLI`, e.g. the base branch's, beside this one's). Prints one JSON line per
 * row and a Markdown table at the end.
 */
import { request } from 'undici';
import { createUpstream } from '../../src/upstream/connection.ts';
import { startFixture } from '../../test/fixture/index.ts';
import type { MemoryRow } from '../report/results.ts';
import { toolArgs } from '../support/args.ts';
import { clientHeaders, type LoadResult, runLoad } from '../support/load.ts';
import { listSize, measureProxy, memoryRow, seedWidgets, WIDGETS } from '../support/memory.ts';
import { cpuSeconds } from '../support/proc.ts';
import { buildDist, DIST_CLI, startProxy } from '../support/proxy-process.ts';
import { proxyVariant } from '../support/proxy-variants.ts';
import { nsName, podName, seedPods } from '../support/seed.ts';
import { seedConfigMaps } from '../support/sync-support.ts';

const positionals = toolArgs({}).positionals;
const [pods = 10_000, configMaps = 0, widgets = 2000] = positionals.slice(0, 3).map(Number);
const variants = (positionals[3] ?? 'default,semi2').split(',');
const log = (m: string) =>
  process.stderr.write(`memory-rows ${new Date().toISOString().slice(11, 19)} ${m}\n`);

const f = await startFixture({ verbose: false });
const up = await createUpstream({ kubeconfig: f.kubeconfigs.adminToken });
const rows: Array<MemoryRow & { variant: string }> = [];
const loads: Array<Record<string, number | string>> = [];
try {
  buildDist();
  if (pods > 0) {
    log(`seeding ${pods} pods`);
    await seedPods(up, { pods, namespaces: 100, nodes: 50, podBytes: 5000 });
  }
  const sets: Array<[string, string, string]> = [];
  if (pods > 0) sets.push(['pods', 'pods', '/api/v1/pods']);
  if (configMaps > 0) {
    const ns = await f.newNamespace('bench-cm');
    log(`seeding ${configMaps} configmaps`);
    await seedConfigMaps(up, ns, configMaps, { bytes: 1024, concurrency: 32 });
    sets.push(['configmaps', 'configmaps', '/api/v1/configmaps']);
  }
  if (widgets > 0) {
    const ns = await f.newNamespace('bench-cr');
    log(`seeding ${widgets} widgets`);
    await seedWidgets(up, ns, widgets);
    sets.push([
      'custom resource (Widget)',
      `${WIDGETS.resource}.${WIDGETS.group}`,
      `/apis/${WIDGETS.group}/v1/${WIDGETS.resource}`,
    ]);
  }
  for (const v of variants) {
    const spec = proxyVariant(v);
    const measure = (resource: string, heapSnapshot = false, clientsPath?: string) =>
      measureProxy({
        kubeconfig: f.kubeconfigs.adminToken,
        resource,
        cpu: '1',
        heapSnapshot,
        cli: DIST_CLI,
        ...spec,
        ...(clientsPath !== undefined ? { clientsPath } : {}),
      });
    const empty = await measure('limitranges');
    rows.push({
      variant: v,
      ...memoryRow(
        'proxy, empty cache (limitranges)',
        'limitranges',
        { objects: 0, jsonBytes: 0 },
        empty,
        empty,
      ),
    });
    log(JSON.stringify(rows.at(-1)));
    for (const [label, resource, path] of sets) {
      const size = await listSize(up, path);
      const m = await measure(resource, v === variants[0] && process.env.KCP_HEAP_SNAPSHOTS === '1', path);
      rows.push({ variant: v, ...memoryRow(`proxy ${label} (watch-list)`, resource, size, m, empty) });
      log(JSON.stringify(rows.at(-1)));
      // Issue 32's goal: the same proxy with protobuf and JSON clients both active (10 + 10
      // watchers open, 3 LISTs of everything in each format read), 2 s after the last LIST.
      if (m.withClients) {
        const what = `proxy ${label}, 10 protobuf-first + 10 JSON watchers, 3 LISTs of each`;
        rows.push({ variant: v, ...memoryRow(what, resource, size, m.withClients, empty) });
        log(JSON.stringify(rows.at(-1)));
      }
    }
  }
  // KCP_CPU_REPS=N: proxy CPU per request of each variant (less sensitive than req/s to a
  // shared machine): N interleaved repetitions of 20 sequential LISTs of all pods and 2,000
  // sequential GETs of one pod, the proxy's utime+stime (/proc) divided by the requests.
  const cpuReps = Number(process.env.KCP_CPU_REPS ?? 0);
  for (let rep = 0; rep < cpuReps && pods > 0; rep++) {
    for (const v of variants) {
      const p = await startProxy({
        kubeconfig: f.kubeconfigs.adminToken,
        resources: ['pods'],
        cpu: '1',
        cli: DIST_CLI,
        ...proxyVariant(v),
      });
      try {
        for (const [q, path, n] of [
          ['LIST all pods', '/api/v1/pods?resourceVersion=0', 20],
          ['GET one pod', `/api/v1/namespaces/${nsName(1)}/pods/${podName(1)}`, 2000],
        ] as const) {
          const c0 = cpuSeconds(p.pid);
          const t0 = performance.now();
          for (let i = 0; i < n; i++) {
            const r = await request(p.url + path);
            await r.body.dump();
          }
          const cpuMs = ((cpuSeconds(p.pid) - c0) * 1000) / n;
          loads.push({
            rep,
            variant: v,
            query: q,
            cpuMsPerRequest: Math.round(cpuMs * 1000) / 1000,
            wallMsPerRequest: Math.round(((performance.now() - t0) / n) * 1000) / 1000,
          });
          log(JSON.stringify(loads.at(-1)));
        }
      } finally {
        await p.stop();
      }
    }
  }
  // KCP_LOAD_REPS=N: the throughput cost of each variant, N interleaved repetitions of LIST all
  // pods (RV=0) and GET one pod, 4 connections × 5 s, proxy on CPU 1, autocannon on CPU 0.
  const reps = Number(process.env.KCP_LOAD_REPS ?? 0);
  for (let rep = 0; rep < reps && pods > 0; rep++) {
    for (const v of variants) {
      const p = await startProxy({
        kubeconfig: f.kubeconfigs.adminToken,
        resources: ['pods'],
        cpu: '1',
        cli: DIST_CLI,
        ...proxyVariant(v),
      });
      try {
        for (const [q, path] of [
          ['LIST all pods', '/api/v1/pods?resourceVersion=0'],
          ['GET one pod', `/api/v1/namespaces/${nsName(1)}/pods/${podName(1)}`],
        ] as const) {
          const r: LoadResult = await runLoad(
            { url: p.url + path, connections: 4, durationS: 5, headers: clientHeaders(undefined, false) },
            '0',
          );
          loads.push({
            rep,
            variant: v,
            query: q,
            rps: r.rps,
            p50Ms: r.p50Ms,
            p99Ms: r.p99Ms,
            errors: r.errors + r.non2xx,
          });
          log(JSON.stringify(loads.at(-1)));
        }
      } finally {
        await p.stop();
      }
    }
  }
} finally {
  await up.close();
  await f.stop();
}
for (const l of loads) console.log(JSON.stringify(l));
console.log(
  '| variant | what | objects | ready ms | peak RSS MiB | RSS MiB 2 s | heapUsed MiB 2 s | RSS MiB GC | heapUsed MiB GC | ArrayBuffers MiB GC | JSON B/object | RSS per JSON byte | RSS per JSON byte, GC | live per JSON byte |',
);
console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
for (const r of rows)
  console.log(
    `| ${r.variant} | ${r.what} | ${r.objects} | ${r.readyMs} | ${r.peakRssMiB} | ${r.rssMiB} | ${r.heapUsedMiB} | ${r.rssGcMiB} | ${r.heapUsedGcMiB} | ${r.arrayBuffersGcMiB} | ${r.jsonPerObjectBytes} | ${r.rssPerJsonByte} | ${r.rssPerJsonByteGc} | ${r.livePerJsonByte} |`,
  );
for (const r of rows)
  if (r.heap) console.log(JSON.stringify({ variant: r.variant, what: r.what, heap: r.heap }));
console.log(JSON.stringify(rows.map(({ heap: _h, ...r }) => r)));
