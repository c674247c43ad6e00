/**
 * The proxy's CPU per protobuf and per JSON LIST and GET, precise enough to compare them (issue
 * 32's CPU goal: a protobuf LIST of 10k pods ≤ the JSON LIST). bench/tools/protobuf-rows.ts
 * reads /proc ticks of 10 ms around one ~50 ms LIST; here each sample is `LISTS` LISTs (or
 * `GETS` GETs) in a row and the CPU is the proxy's threads' on-CPU nanoseconds
 * (/proc/PID/task/TID/schedstat, field 1), divided by the requests. The four forms (protobuf
 * LIST, JSON LIST, protobuf GET, JSON GET) are interleaved within every sample, their order
 * rotated from sample to sample; each proxy CLI given (`--cli`, repeatable: e.g. a baseline's
 * built dist beside this tree's) answers the same forms in turn, all pinned to CPU 1, so a load
 * change hits them alike. Prints per proxy and form the median (min–max) of `SAMPLES`, and the
 * median of the per-sample ratio protobuf ÷ JSON.
 *
 * The fixture: `KCP_FIXTURE` (a running fixture's fixture.json) or a private one; the pods are
 * seeded (bench/support/seed.ts, `--pod-bytes` 5000: the bench's pods; ≤ 2100: plain pods)
 * unless the fixture already holds `--pods` of them. `KCP_BENCH_CPU_PROF=DIR` writes each
 * proxy's V8 CPU profile there when it stops (bench/support/proxy-process.ts).
 *
 * usage: node bench/tools/protobuf-cpu.ts [--pods 10000] [--pod-bytes 5000] [--samples 7]
 *   [--lists 10] [--gets 400] [--cli PATH …] [--only list|get]
 */
import { readdirSync, readFileSync } from 'node:fs';
import { Agent, request } from 'undici';
import { createUpstream } from '../../src/upstream/connection.ts';
import { sharedFixture } from '../../test/fixture/index.ts';
import { toolArgs } from '../support/args.ts';
import { listSize } from '../support/memory.ts';
import { buildDist, DIST_CLI, type ProxyProcess, startProxy } from '../support/proxy-process.ts';
import { nsName, podName, seedPods } from '../support/seed.ts';

const args = toolArgs({
  numbers: { pods: 10_000, 'pod-bytes': 5000, samples: 7, lists: 10, gets: 400 },
  strings: { only: undefined },
  lists: ['cli'],
});
const PB = 'application/vnd.kubernetes.protobuf';
const log = (m: unknown) =>
  process.stderr.write(`protobuf-cpu ${new Date().toISOString().slice(11, 19)} ${JSON.stringify(m)}\n`);
const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

/** On-CPU nanoseconds of all of `pid`'s live threads (schedstat field 1). */
export function onCpuNs(pid: number): number {
  let ns = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // The thread ended meanwhile.
    }
  }
  return ns;
}

const f = await sharedFixture();
const up = await createUpstream({ kubeconfig: f.kubeconfigs.adminToken });
const proxies: Array<{ name: string; p: ProxyProcess }> = [];
const agent = new Agent({ connections: 1 });
try {
  const clis = args.cli.length > 0 ? args.cli : [buildDist() && DIST_CLI];
  let size = await listSize(up, '/api/v1/pods');
  if (size.objects < args.pods) {
    log(`seeding ${args.pods} pods of pod-bytes ${args['pod-bytes']}`);
    await seedPods(up, { pods: args.pods, namespaces: 100, nodes: 50, podBytes: args['pod-bytes'] });
    size = await listSize(up, '/api/v1/pods');
  }
  log({ pods: size.objects, jsonBytes: size.jsonBytes, load: loadavg() });
  for (const cli of clis) {
    const p = await startProxy({ kubeconfig: f.kubeconfigs.adminToken, resources: ['pods'], cpu: '1', cli });
    proxies.push({ name: cli, p });
  }
  const fetchOnce = async (p: ProxyProcess, path: string, accept: string) => {
    const r = await request(`${p.url}${path}`, { headers: { accept }, dispatcher: agent });
    const b = Buffer.from(await r.body.arrayBuffer());
    if (r.statusCode !== 200) throw new Error(`${path}: ${r.statusCode} ${b.toString().slice(0, 200)}`);
    if (r.headers['audit-id'] !== undefined) throw new Error(`${path}: not from the cache`);
    if (!String(r.headers['content-type']).startsWith(accept))
      throw new Error(`${path}: ${r.headers['content-type']}`);
    return b.length;
  };
  const listPath = '/api/v1/pods?resourceVersion=0';
  const getPath = `/api/v1/namespaces/${nsName(1)}/pods/${podName(1)}`;
  const forms = [
    { name: 'LIST protobuf', path: listPath, accept: PB, n: args.lists },
    { name: 'LIST JSON', path: listPath, accept: 'application/json', n: args.lists },
    { name: 'GET protobuf', path: getPath, accept: PB, n: args.gets },
    { name: 'GET JSON', path: getPath, accept: 'application/json', n: args.gets },
  ].filter((fm) => args.only === undefined || fm.name.toLowerCase().startsWith(args.only));
  // Warm-up: the first protobuf LIST encodes and keeps every pod's message; JIT.
  for (const { p } of proxies)
    for (const fm of forms) for (let i = 0; i < 3; i++) await fetchOnce(p, fm.path, fm.accept);
  const cpu = new Map<string, number[]>(); // `${proxy}\t${form}` → µs per request
  const bytes = new Map<string, number>();
  const load0 = loadavg();
  for (let s = 0; s < args.samples; s++) {
    for (let k = 0; k < forms.length; k++) {
      const fm = forms[(k + s) % forms.length]!;
      for (const { name, p } of proxies) {
        const c0 = onCpuNs(p.pid);
        let n = 0;
        for (let i = 0; i < fm.n; i++) n = await fetchOnce(p, fm.path, fm.accept);
        const us = (onCpuNs(p.pid) - c0) / 1000 / fm.n;
        const key = `${name}\t${fm.name}`;
        cpu.set(key, [...(cpu.get(key) ?? []), us]);
        bytes.set(fm.name, n);
        log({ s, proxy: name, form: fm.name, us: Math.round(us) });
      }
    }
  }
  const load1 = loadavg();
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const fmt = (x: number) => (x >= 1000 ? `${(x / 1000).toFixed(1)} ms` : `${Math.round(x)} µs`);
  console.log(
    `\n${size.objects} pods, ${size.jsonBytes} bytes of JSON LIST; ${args.samples} samples of ${args.lists} LISTs / ${args.gets} GETs; load ${load0} → ${load1}\n`,
  );
  console.log('| proxy | form | proxy CPU per request, median (min–max) | bytes |');
  console.log('| --- | --- | --- | --- |');
  for (const [key, xs] of cpu) {
    const [proxy, form] = key.split('\t');
    console.log(
      `| ${proxy} | ${form} | ${fmt(median(xs))} (${fmt(Math.min(...xs))}–${fmt(Math.max(...xs))}) | ${bytes.get(form!)} |`,
    );
  }
  for (const { name } of proxies)
    for (const what of ['LIST', 'GET']) {
      const pb = cpu.get(`${name}\t${what} protobuf`);
      const js = cpu.get(`${name}\t${what} JSON`);
      if (!pb || !js) continue;
      const ratios = pb.map((x, i) => x / js[i]!);
      console.log(
        `${name} ${what}: protobuf ÷ JSON per sample, median ${median(ratios).toFixed(2)} (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`,
      );
    }
} finally {
  for (const { p } of proxies) await p.stop();
  await agent.close();
  await up.close();
}
process.exit(0);
