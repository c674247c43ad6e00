/**
 * What one idle on-demand cache costs (the default of `--auto-max-resources`): a private fixture
 * with `--crds` namespaced custom resources that hold no object (`idle.kcp.io`, `r000` …), and
 * for each count in `--counts` (default 0,50,100) a fresh proxy process (`--resources=auto
 * --auto-max-resources=<crds>`, with the memory hook) in which one LIST of each of the first
 * `count` resources started its cache; once `/debug/cache` shows them all synced and 5 s passed:
 * RSS (VmRSS), V8 heapUsed, external + array buffers, and the same after two forced full
 * collections. Per cache = the RSS step between two counts divided by the caches added.
 * `--runs` repeats the whole series (fresh proxies, the same fixture).
 *   node bench/tools/idle-caches-rss.ts [--crds 100] [--counts 0,50,100] [--runs 2]
 */
import { Agent, request } from 'undici';
import { startFixture } from '../../test/fixture/index.ts';
import { toolArgs } from '../support/args.ts';
import { pin, round } from '../support/proc.ts';
import { startProxy } from '../support/proxy-process.ts';

const args = toolArgs({ numbers: { crds: 100, runs: 2 }, strings: { counts: '0,50,100' } });
const counts = args.counts!.split(',').map(Number);
const MiB = 2 ** 20;
const GROUP = 'idle.kcp.io';
const name = (i: number) => `r${String(i).padStart(3, '0')}`;

pin(process.pid, '1');
const f = await startFixture({ verbose: false });
for (const p of Object.values(f.pids())) pin(p, '0');
const direct = new Agent({ connect: { ca: f.caPem } });
const auth = { authorization: `Bearer ${f.tokens.admin}`, 'content-type': 'application/json' };

/** Creates the CRDs and waits until each one's LIST answers 200 (the group is served). */
async function createCrds(n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const plural = name(i);
    const r = await request(`${f.server}/apis/apiextensions.k8s.io/v1/customresourcedefinitions`, {
      method: 'POST',
      dispatcher: direct,
      headers: auth,
      body: JSON.stringify({
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        metadata: { name: `${plural}.${GROUP}` },
        spec: {
          group: GROUP,
          names: {
            plural,
            singular: plural,
            kind: plural.toUpperCase(),
            listKind: `${plural.toUpperCase()}List`,
          },
          scope: 'Namespaced',
          versions: [
            {
              name: 'v1',
              served: true,
              storage: true,
              schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
            },
          ],
        },
      }),
    });
    const text = await r.body.text();
    if (r.statusCode !== 201) throw new Error(`CRD ${plural}: ${r.statusCode} ${text.slice(0, 200)}`);
  }
  for (let i = 0; i < n; i++) {
    for (let attempt = 0; ; attempt++) {
      const r = await request(`${f.server}/apis/${GROUP}/v1/${name(i)}`, {
        dispatcher: direct,
        headers: auth,
      });
      await r.body.dump();
      if (r.statusCode === 200) break;
      if (attempt > 300) throw new Error(`${name(i)} not served: ${r.statusCode}`);
      await new Promise((res) => setTimeout(res, 200));
    }
  }
}

/** One proxy with `count` idle on-demand caches: its memory after they synced and 5 s. */
async function measure(count: number) {
  const p = await startProxy({
    kubeconfig: f.kubeconfigs.adminToken,
    resources: ['auto'],
    cpu: '1',
    memoryHook: true,
    extraArgs: [`--auto-max-resources=${Math.max(args.crds, 1)}`],
  });
  try {
    for (let i = 0; i < count; i++) {
      const r = await request(`${p.url}/apis/${GROUP}/v1/${name(i)}`, { headers: auth });
      await r.body.dump();
    }
    for (let attempt = 0; ; attempt++) {
      const d = (await fetch(`${p.opsUrl}/debug/cache`).then((r) => r.json())) as {
        resources: { group: string; synced: boolean }[];
      };
      if (d.resources.filter((r) => r.group === GROUP && r.synced).length >= count) break;
      if (attempt > 600) throw new Error(`${count} caches not synced`);
      await new Promise((res) => setTimeout(res, 100));
    }
    await new Promise((res) => setTimeout(res, 5000));
    const m = await p.memory('sample');
    const gc = await p.memory('gc');
    return { count, rss: m.rss, heapUsed: m.heapUsed, rssGc: gc.rss, liveGc: gc.heapUsed + gc.arrayBuffers };
  } finally {
    await p.stop();
  }
}

try {
  await createCrds(args.crds);
  const mib = (b: number) => round(b / MiB, 1);
  for (let run = 1; run <= args.runs; run++) {
    let prev: Awaited<ReturnType<typeof measure>> | undefined;
    for (const count of counts) {
      const m = await measure(count);
      const step = prev
        ? `; per added cache: RSS ${round((m.rss - prev.rss) / (count - prev.count) / 1024, 0)} KiB, after GC ${round((m.rssGc - prev.rssGc) / (count - prev.count) / 1024, 0)} KiB, live heap ${round((m.liveGc - prev.liveGc) / (count - prev.count) / 1024, 0)} KiB`
        : '';
      process.stdout.write(
        `run ${run}, ${count} idle caches: RSS ${mib(m.rss)} MiB, heap used ${mib(m.heapUsed)} MiB; after GC RSS ${mib(m.rssGc)} MiB, live ${mib(m.liveGc)} MiB${step}\n`,
      );
      prev = m;
    }
  }
} finally {
  await direct.close();
  await f.stop();
}
