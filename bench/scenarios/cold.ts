/**
 * The cold rows of bench/run.ts: memory per resource and the reflector's own cold sync.
 * - Memory (definitions in bench/support/memory.ts): one proxy process per resource (an empty
 *   cache (limitranges), pods, the ConfigMaps, the custom resource), each caching only it, the
 *   built CLI (dist/, as the image runs it; src/cli.ts when `npm run build` fails): RSS and
 *   heapUsed 2 s after ready and after a forced GC, per object and per JSON byte.
 * - Reflector sync: the Reflector with a Map sink and no watch cache
 *   (bench/workers/sync-run.ts, its own process pinned to the proxy's core), watch-list vs the
 *   LIST fallback, for pods and the ConfigMaps: time, LIST requests, peak RSS.
 */
import { execFile } from 'node:child_process';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Upstream } from '../../src/upstream/connection.ts';
import type { Fixture } from '../../test/fixture/index.ts';
import type { MemoryRow } from '../report/results.ts';
import { type BenchContext, MiB, PROXY_CPU } from '../support/context.ts';
import { listSize, measureProxy, memoryRow, WIDGETS } from '../support/memory.ts';
import { buildDist } from '../support/proxy-process.ts';

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));

function syncRun(kubeconfig: string, ns: string, mode: string, resource: string) {
  return new Promise<{
    mode: string;
    objects: number;
    ms: number;
    listRequests: number;
    peakRssMiB: number;
    rssBeforeMiB: number;
  }>((resolve, reject) => {
    execFile(
      'taskset',
      ['-c', PROXY_CPU, process.execPath, here('../workers/sync-run.ts'), kubeconfig, ns, mode, resource],
      { maxBuffer: 16 * MiB, timeout: 900_000 },
      (err, stdout, stderr) => {
        if (err) return reject(new Error(`sync-run ${mode}: ${err.message} ${stderr.slice(-1000)}`));
        resolve(JSON.parse(stdout.trim().split('\n').pop() ?? '{}'));
      },
    );
  });
}

/**
 * Memory per resource (bench/support/memory.ts: RSS and heapUsed 2 s after ready and after a forced GC)
 * and the reflector's own cold sync (bench/workers/sync-run.ts). `setMemoryCli` gets the CLI the
 * memory rows run (relative to the repository) as soon as it is known.
 */
export async function coldScenario(
  { P, failures, log }: BenchContext,
  f: Fixture,
  up: Upstream,
  ns: { configMaps?: string; widgets?: string },
  setMemoryCli: (cli: string) => void,
) {
  const proxy: MemoryRow[] = [];
  // What the image runs (no type stripping: ~30 MiB less RSS); src/cli.ts if the build fails.
  const built = await failures.attempt('memory', 'npm run build (dist/)', async () => buildDist());
  setMemoryCli(relative(here('../..'), built ?? here('../../src/cli.ts')));
  const measure = (resource: string) =>
    measureProxy({
      kubeconfig: f.kubeconfigs.adminToken,
      resource,
      cpu: PROXY_CPU,
      heapSnapshot: P.heapSnapshots.includes(resource.split('.')[0]!),
      ...(built ? { cli: built } : {}),
    });
  const empty = await failures.attempt('memory', 'empty cache', () => measure('limitranges'), 300_000);
  if (empty)
    proxy.push(
      memoryRow(
        'proxy, empty cache (limitranges)',
        'limitranges',
        { objects: 0, jsonBytes: 0 },
        empty,
        empty,
      ),
    );
  const sets: Array<[string, string, string]> = [['pods', 'pods', '/api/v1/pods']];
  if (ns.configMaps)
    sets.push(['configmaps', 'configmaps', `/api/v1/namespaces/${ns.configMaps}/configmaps`]);
  if (ns.widgets)
    sets.push([
      'custom resource (Widget)',
      `${WIDGETS.resource}.${WIDGETS.group}`,
      `/apis/${WIDGETS.group}/v1/namespaces/${ns.widgets}/${WIDGETS.resource}`,
    ]);
  for (const [label, resource, path] of sets) {
    const row = await failures.attempt(
      'memory',
      label,
      async () => {
        // The proxy caches the resource in every namespace: count and size that same set.
        const all = resource === 'configmaps' ? '/api/v1/configmaps' : path;
        return memoryRow(
          `proxy ${label} (watch-list)`,
          resource,
          await listSize(up, all),
          await measure(resource),
          empty,
        );
      },
      900_000,
    );
    if (row) proxy.push(row);
  }
  log(`memory: ${JSON.stringify(proxy.map(({ heap: _h, ...r }) => r))}`);
  const reflector = [];
  const syncSets: Array<[string, string]> = [['pods', '-']];
  if (ns.configMaps) syncSets.push(['configmaps', ns.configMaps]);
  for (const [resource, namespace] of syncSets) {
    for (const mode of ['watch-list', 'list']) {
      const r = await failures.attempt('reflector sync', `${resource} ${mode}`, () =>
        syncRun(f.kubeconfigs.adminToken, namespace, mode, resource),
      );
      if (!r) continue;
      reflector.push({ resource, ...r });
      log(`reflector ${resource} ${mode}: ${JSON.stringify(r)}`);
    }
  }
  return { proxy, reflector };
}
