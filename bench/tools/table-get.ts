/**
 * `kubectl get pods -A` (a Table LIST, 500 rows a page) through the proxy ÷ direct, side by side
 * on one fixture: `PODS` pods (test/support/churn-objects.ts `churnPod`, ~6.4 KB of JSON each)
 * in one namespace, then `ROUNDS` alternating runs of the fixture's kubectl against the
 * apiserver and against an in-process proxy caching pods (its Table answers from the cache),
 * and the same for the bare Table LIST kubectl sends (`as=Table`, `limit=500`, every page; the
 * server's part without kubectl's start and printing). Prints per form the median and min–max
 * wall time and the ratio proxy ÷ direct of the medians.
 *
 * usage: node bench/tools/table-get.ts [PODS=2000] [ROUNDS=9]
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Agent, request } from 'undici';
import { sharedFixture } from '../../test/fixture/index.ts';
import { startProxy } from '../../test/support/proxy.ts';
import { createChurnPods } from '../support/churn-pods.ts';

const PODS = Number(process.argv[2] ?? 2000);
const ROUNDS = Number(process.argv[3] ?? 9);
const TABLE =
  'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';

const f = await sharedFixture();
const agent = new Agent({ connect: { ca: f.caPem } });
const auth = { authorization: `Bearer ${f.tokens.admin}` };
const ns = await f.newNamespace('tableget');
await createChurnPods(f.server, agent, f.tokens.admin, ns, PODS);
const proxy = await startProxy(f, { resources: 'pods' });

/** One `kubectl get pods -A` (asynchronous: the proxy answers it from this process): wall ms and the rows printed. */
const kubectl = async (kubeconfig: string) => {
  const t0 = performance.now();
  const r = await promisify(execFile)(f.bin.kubectl, ['--kubeconfig', kubeconfig, 'get', 'pods', '-A'], {
    encoding: 'utf8',
    maxBuffer: 1 << 28,
  });
  return { ms: performance.now() - t0, rows: r.stdout.split('\n').length - 2 };
};

/** Every page of the Table LIST kubectl sends: wall ms, rows, whether the proxy answered. */
const tableList = async (base: string, dispatcher?: Agent) => {
  const t0 = performance.now();
  let cont = '';
  let rows = 0;
  let cache = true;
  do {
    const q = `/api/v1/pods?limit=500${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`;
    const r = await request(`${base}${q}`, {
      headers: { ...auth, accept: TABLE },
      ...(dispatcher ? { dispatcher } : {}),
    });
    const t = JSON.parse(await r.body.text()) as { rows: unknown[]; metadata: { continue?: string } };
    if (r.statusCode !== 200) throw new Error(`${r.statusCode}`);
    cache &&= r.headers['audit-id'] === undefined;
    rows += t.rows.length;
    cont = t.metadata.continue ?? '';
  } while (cont);
  return { ms: performance.now() - t0, rows, cache };
};

const forms = [
  ['kubectl proxy', async () => kubectl(proxy.kubeconfig)],
  ['kubectl direct', async () => kubectl(f.kubeconfigs.adminToken)],
  ['Table LIST proxy', async () => tableList(proxy.url)],
  ['Table LIST direct', async () => tableList(f.server, agent)],
] as const;
const times = new Map<string, number[]>();
const rows = new Map<string, number>();
for (let r = 0; r < ROUNDS + 1; r++) {
  for (const [name, fn] of forms) {
    const a = await fn();
    if ('cache' in a && name.endsWith('proxy') && !a.cache) throw new Error(`${name}: not from the cache`);
    if (r === 0) continue; // warm-up
    times.set(name, [...(times.get(name) ?? []), a.ms]);
    rows.set(name, a.rows);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`${PODS} pods seeded, ${ROUNDS} runs each (alternating):`);
for (const [name] of forms) {
  const xs = times.get(name)!;
  console.log(
    `${name.padEnd(18)} median ${median(xs).toFixed(0)} ms (min ${Math.min(...xs).toFixed(0)}, max ${Math.max(...xs).toFixed(0)}), ${rows.get(name)} rows`,
  );
}
const ratio = (a: string, b: string) => (median(times.get(a)!) / median(times.get(b)!)).toFixed(2);
console.log(
  `kubectl get pods -A proxy ÷ direct ${ratio('kubectl proxy', 'kubectl direct')}; Table LIST proxy ÷ direct ${ratio('Table LIST proxy', 'Table LIST direct')}`,
);
await proxy.stop();
await agent.close();
process.exit(0);
