/**
 * Protobuf answers side by side on one fixture, one run: `PODS` pods (bench/support/seed.ts, ~5 KB,
 * 100 namespaces, as the full bench), two proxies of the built CLI caching pods (one with
 * `--protobuf-answers=cache`, one with `--protobuf-answers=json`), both pinned to CPU 1, and:
 *
 * - LIST of all pods (RV=0) and GET of one pod, protobuf and JSON, through the `cache` proxy and
 *   direct (the first LIST of each, once, as its own row: the proxy's encodes and keeps every
 *   pod's message): wall ms per request (median, min–max of `REPS`), and the CPU of the process that
 *   answered (the proxy's, or the apiserver's for direct; /proc utime+stime, 10 ms ticks: a GET's
 *   is the total of `GETS` GETs divided by them);
 * - an informer's cold sync (the fixture's client-go probe, typed, `--content-type=protobuf`, the
 *   kube components' Accept `protobuf,json`, all namespaces): the probe's own CPU until its
 *   `synced` line (process start included, the same in every form) and its sync ms, protobuf from
 *   the `cache` proxy, JSON from the `json` proxy, protobuf direct; `REPS` each, interleaved;
 * - memory (bench/support/memory.ts `memoryRow`, RSS per JSON byte against an empty-cache proxy)
 *   of both proxies 2 s after ready, and again after the rows above with 10 protobuf and 10 JSON
 *   watchers of all pods still open (protobuf and JSON clients both active).
 *
 * usage: node bench/tools/protobuf-rows.ts [PODS=10000] [REPS=5] [GETS=200] [POD_BYTES=5000]
 *   [--variants shipped,semi2,mmap128k]
 * (POD_BYTES ≤ 2100: plain pods, no filler annotation, ~2 KB of JSON each). `--variants`: proxy
 * process settings side by side (bench/support/proxy-variants.ts; default `shipped`, the CLI's
 * shebang; `before`: as shipped, the built CLI at `KCP_BENCH_BEFORE_CLI`, e.g. the base
 * branch's, beside this one's): a `cache` and a `json` proxy of each, every proxy row and memory row once per
 * variant, interleaved, the rows' names suffixed ` [variant]` when there are several. After
 * each phase (ready, watchers open, first LISTs, each repetition) every proxy's smaps summary
 * (brk heap, anonymous, file-backed MiB) and CPU seconds since its start are printed.
 * With `KCP_HEAP_SNAPSHOT_DIR` set, each proxy writes a heap snapshot there at the end.
 * Prints one JSON line per measurement to stderr as it goes and Markdown tables at the end.
 */
import { readFileSync } from 'node:fs';
import { type Dispatcher, request } from 'undici';
import { createUpstream } from '../../src/upstream/connection.ts';
import { startFixture } from '../../test/fixture/index.ts';
import { writeKubeconfig } from '../../test/fixture/kubeconfig.ts';
import { startProbe } from '../../test/support/informer-probe.ts';
import { toolArgs } from '../support/args.ts';
import { listSize, memoryRow } from '../support/memory.ts';
import { cpuSeconds, peakRssBytes } from '../support/proc.ts';
import { buildDist, DIST_CLI, type ProxyProcess, startProxy } from '../support/proxy-process.ts';
import { proxyVariant } from '../support/proxy-variants.ts';
import { nsName, podName, seedPods } from '../support/seed.ts';

const args = toolArgs({ strings: { variants: 'shipped' } });
const [PODS = 10_000, REPS = 5, GETS = 200, POD_BYTES = 5000] = args.positionals.map(Number);
const VARIANTS = (args.variants ?? 'shipped').split(',');
/** How long the proxies sit idle after the rows before the settled sample (V8's memory reducer: 8 s). */
const SETTLE_MS = 12_000;
/** A row's name for variant `v`: unchanged with one variant, ` [v]` appended with several. */
const tag = (name: string, v: string) => (VARIANTS.length > 1 ? `${name} [${v}]` : name);
const PB = 'application/vnd.kubernetes.protobuf';
const log = (m: unknown) =>
  process.stderr.write(`protobuf-rows ${new Date().toISOString().slice(11, 19)} ${JSON.stringify(m)}\n`);

const f = await startFixture({ verbose: false });
const up = await createUpstream({ kubeconfig: f.kubeconfigs.adminToken });
const { Agent } = await import('undici');
const direct = new Agent({ connect: { ca: f.caPem } });
const auth = { authorization: `Bearer ${f.tokens.admin}` };
const apiserverPid = f.pids().apiserver;
const proxies: ProxyProcess[] = [];
const watchers: Array<{ destroy(): void }> = [];

/**
 * Where the process's resident memory is (/proc/PID/smaps, MiB): the brk heap (malloc's main
 * arena), glibc's thread arenas (an rw anonymous mapping at a 64 MiB-aligned address followed by
 * its PROT_NONE reserve), other anonymous mappings under 1 MiB (V8's heap pages are 256 KiB each;
 * malloc's mmapped blocks of 128 KiB or more) and of 1 MiB or more (V8's large objects, big
 * mmapped blocks and ArrayBuffers), and file-backed.
 */
function smapsSummary(pid: number): Record<string, number> {
  const out = { brkHeap: 0, arenas: 0, anonUnder1M: 0, anon1MOrMore: 0, file: 0 };
  type Map = { start: number; end: number; perms: string; kind: keyof typeof out; rss: number };
  const maps: Map[] = [];
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const m = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ (\d+)\s*(.*)$/.exec(line);
    if (m) {
      const start = Number.parseInt(m[1]!, 16);
      const end = Number.parseInt(m[2]!, 16);
      const name = m[5] ?? '';
      const kind =
        name === '[heap]'
          ? 'brkHeap'
          : name === '' && m[4] === '0'
            ? (end - start) / 2 ** 20 >= 1
              ? 'anon1MOrMore'
              : 'anonUnder1M'
            : 'file';
      maps.push({ start, end, perms: m[3]!, kind, rss: 0 });
      continue;
    }
    const r = /^Rss:\s+(\d+) kB/.exec(line);
    if (r && maps.length > 0) maps[maps.length - 1]!.rss = Number(r[1]) / 1024;
  }
  for (let i = 0; i < maps.length; i++) {
    const mp = maps[i]!;
    const next = maps[i + 1];
    const arena =
      mp.kind.startsWith('anon') &&
      mp.perms.startsWith('rw') &&
      mp.start % 2 ** 26 === 0 &&
      next !== undefined &&
      next.start === mp.end &&
      next.perms.startsWith('---');
    out[arena ? 'arenas' : mp.kind] += mp.rss;
  }
  for (const k of Object.keys(out) as Array<keyof typeof out>) out[k] = Math.round(out[k] * 10) / 10;
  return out;
}

/** V8's committed MiB: old space, large objects (old and code), code, new space, and the total. */
function v8Summary(spaces: Record<string, [number, number]> | undefined): Record<string, number> {
  const mib = (n: string) => r1((spaces?.[n]?.[1] ?? 0) / 2 ** 20);
  const total = r1(Object.values(spaces ?? {}).reduce((a, [, phys]) => a + phys, 0) / 2 ** 20);
  return {
    old: mib('old_space'),
    lo: r1(mib('lo_space') + mib('code_lo_space')),
    code: mib('code_space'),
    newS: r1(mib('new_space') + mib('new_lo_space')),
    total,
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const r1 = (x: number) => Math.round(x * 10) / 10;
const spread = (xs: number[]) => `${r1(median(xs))} (${r1(Math.min(...xs))}–${r1(Math.max(...xs))})`;

try {
  buildDist();
  log(`seeding ${PODS} pods`);
  await seedPods(up, { pods: PODS, namespaces: 100, nodes: 50, podBytes: POD_BYTES });
  const size = await listSize(up, '/api/v1/pods');
  const start = (resources: string, variant: string, extraArgs: string[] = []) =>
    startProxy({
      kubeconfig: f.kubeconfigs.adminToken,
      resources: [resources],
      cpu: '1',
      memoryHook: true,
      cli: DIST_CLI,
      extraArgs,
      ...proxyVariant(variant),
    });
  const memoryOf = async (p: ProxyProcess) => {
    const at2s = await p.memory('sample');
    const peak = peakRssBytes(p.pid);
    const afterGc = await p.memory('gc');
    log({ pid: p.pid, at2s, afterGc, smaps: smapsSummary(p.pid) });
    return { readyMs: p.readyMs, peak, at2s, afterGc };
  };
  // Per variant: an empty-cache proxy (the baseline of its per-byte figures), then a `cache`
  // and a `json` proxy of pods.
  type Pair = {
    variant: string;
    cache: ProxyProcess;
    json: ProxyProcess;
    emptyMem: Awaited<ReturnType<typeof memoryOf>>;
  };
  const pairs: Pair[] = [];
  for (const variant of VARIANTS) {
    const empty = await start('limitranges', variant);
    await new Promise((r) => setTimeout(r, 2000));
    const emptyMem = await memoryOf(empty);
    await empty.stop();
    const cache = await start('pods', variant, ['--protobuf-answers=cache']);
    proxies.push(cache);
    const json = await start('pods', variant, ['--protobuf-answers=json']);
    proxies.push(json);
    pairs.push({ variant, cache, json, emptyMem });
  }
  await new Promise((r) => setTimeout(r, 2000));
  const memRows: ReturnType<typeof memoryRow>[] = [];
  // Where each proxy's RSS is after each phase (the brk heap's growth names the phase).
  const smapsRows: string[] = [];
  const phase = async (name: string) => {
    for (const { variant, cache, json } of pairs)
      for (const [mode, p] of [
        ['cache', cache],
        ['json', json],
      ] as const) {
        const sm = smapsSummary(p.pid);
        const mem = await p.memory('sample');
        const v8s = v8Summary(mem.spaces);
        const ab = r1(mem.arrayBuffers / 2 ** 20);
        const rss = r1(mem.rss / 2 ** 20);
        log({
          phase: name,
          variant,
          mode,
          rss,
          smaps: sm,
          v8: v8s,
          arrayBuffers: ab,
          cpuS: r1(cpuSeconds(p.pid)),
        });
        smapsRows.push(
          `| ${name} | ${variant} | ${mode} | ${rss} | ${sm.brkHeap} | ${sm.arenas} | ${sm.anonUnder1M} | ${sm.anon1MOrMore} | ${sm.file} | ${v8s.old} | ${v8s.lo} | ${v8s.total} | ${ab} | ${r1(cpuSeconds(p.pid))} |`,
        );
      }
  };
  await phase('ready');
  for (const { variant, cache, json, emptyMem } of pairs) {
    for (const [mode, p] of [
      ['cache', cache],
      ['json', json],
    ] as const) {
      const what = tag(`proxy pods, --protobuf-answers=${mode}, no clients`, variant);
      memRows.push(memoryRow(what, 'pods', size, await memoryOf(p), emptyMem));
      log(memRows.at(-1));
    }
  }

  // 10 protobuf and 10 JSON watchers of all pods on each proxy, open until the end.
  const rvOf = async (base: string) => {
    const r = await request(`${base}/api/v1/pods?limit=1`, { headers: { accept: 'application/json' } });
    return (JSON.parse(await r.body.text()) as { metadata: { resourceVersion: string } }).metadata
      .resourceVersion;
  };
  for (const p of proxies) {
    const rv = await rvOf(p.url);
    for (let i = 0; i < 20; i++) {
      const accept = i % 2 === 0 ? `${PB}, application/json` : 'application/json';
      const r = await request(`${p.url}/api/v1/pods?watch=1&allowWatchBookmarks=true&resourceVersion=${rv}`, {
        headers: { accept },
      });
      if (r.statusCode !== 200) throw new Error(`watch ${accept}: ${r.statusCode}`);
      r.body.on('data', () => {});
      r.body.on('error', () => {});
      watchers.push(r.body);
    }
  }

  await phase('watchers open');
  type Form = { name: string; base: string; accept: string; pid: number; dispatcher?: Dispatcher };
  const forms: Form[] = [
    ...pairs.map(({ variant, cache }) => ({
      name: tag('proxy protobuf', variant),
      base: cache.url,
      accept: PB,
      pid: cache.pid,
    })),
    { name: 'direct protobuf', base: f.server, accept: PB, pid: apiserverPid, dispatcher: direct },
    ...pairs.map(({ variant, cache }) => ({
      name: tag('proxy JSON', variant),
      base: cache.url,
      accept: 'application/json',
      pid: cache.pid,
    })),
    {
      name: 'direct JSON',
      base: f.server,
      accept: 'application/json',
      pid: apiserverPid,
      dispatcher: direct,
    },
  ];
  const fetchOnce = async (fm: Form, path: string) => {
    const r = await request(`${fm.base}${path}`, {
      headers: { ...auth, accept: fm.accept },
      ...(fm.dispatcher ? { dispatcher: fm.dispatcher } : {}),
    });
    const b = Buffer.from(await r.body.arrayBuffer());
    if (r.statusCode !== 200)
      throw new Error(`${fm.name} ${path}: ${r.statusCode} ${b.toString().slice(0, 200)}`);
    if (fm.base !== f.server && r.headers['audit-id'] !== undefined)
      throw new Error(`${fm.name}: not from the cache`);
    const type = String(r.headers['content-type']);
    if (fm.accept === PB && !type.startsWith(PB)) throw new Error(`${fm.name}: answered ${type}`);
    return b.length;
  };
  const reqRows: Record<string, { wall: number[]; cpu: number[]; bytes: number }> = {};
  const listPath = '/api/v1/pods?resourceVersion=0';
  const getPath = `/api/v1/namespaces/${nsName(1)}/pods/${podName(1)}`;
  // Warm-up, measured once: the proxy's first protobuf LIST encodes every pod's message and
  // keeps it (the later ones write the kept messages).
  const firstRows: string[] = [];
  for (const fm of forms) {
    const c0 = cpuSeconds(fm.pid);
    const t0 = performance.now();
    const bytes = await fetchOnce(fm, listPath);
    const wall = performance.now() - t0;
    const cpu = (cpuSeconds(fm.pid) - c0) * 1000;
    log({ key: `first LIST all pods, ${fm.name}`, wallMs: r1(wall), cpuMs: r1(cpu), bytes });
    firstRows.push(`| first LIST all pods, ${fm.name} | ${r1(wall)} | ${r1(cpu)} | ${bytes} |`);
  }
  await phase('first LISTs');
  for (let rep = 0; rep < REPS; rep++) {
    for (const fm of forms) {
      for (const [what, path, n] of [
        ['LIST all pods', listPath, 1],
        ['GET one pod', getPath, GETS],
      ] as const) {
        const key = `${what}, ${fm.name}`;
        const c0 = cpuSeconds(fm.pid);
        const t0 = performance.now();
        let bytes = 0;
        for (let i = 0; i < n; i++) bytes = await fetchOnce(fm, path);
        const wall = (performance.now() - t0) / n;
        const cpu = ((cpuSeconds(fm.pid) - c0) * 1000) / n;
        reqRows[key] ??= { wall: [], cpu: [], bytes };
        const row = reqRows[key]!;
        row.wall.push(wall);
        row.cpu.push(cpu);
        log({ rep, key, wallMs: r1(wall), cpuMs: r1(cpu), bytes });
      }
    }
    await phase(`LIST/GET rep ${rep + 1}`);
  }

  // Informer cold sync, typed client-go with protobuf,json: protobuf from the cache proxy, JSON
  // from the json proxy (it answers that Accept JSON), protobuf direct.
  const kc = async (name: string, server: string) =>
    writeKubeconfig(`${f.dir}/pbrows-${name}.kubeconfig`, {
      server,
      ...(server.startsWith('https:') ? { caFile: f.caFile } : {}),
      user: { token: f.tokens.admin },
    });
  const probeForms: Array<{ name: string; kubeconfig: string; pid: number }> = [];
  for (const { variant, cache, json } of pairs) {
    probeForms.push({
      name: tag('protobuf from the proxy (cache)', variant),
      kubeconfig: await kc(`cache-${variant}`, cache.url),
      pid: cache.pid,
    });
    probeForms.push({
      name: tag('JSON from the proxy (json)', variant),
      kubeconfig: await kc(`json-${variant}`, json.url),
      pid: json.pid,
    });
  }
  probeForms.push({ name: 'protobuf direct', kubeconfig: await kc('direct', f.server), pid: apiserverPid });
  const probeRows: Record<
    string,
    { clientCpu: number[]; syncMs: number[]; serverCpu: number[]; items: number }
  > = {};
  for (let rep = 0; rep < REPS; rep++) {
    for (const pf of probeForms) {
      const s0 = cpuSeconds(pf.pid);
      const p = startProbe(f.bin.probe, {
        kubeconfig: pf.kubeconfig,
        resource: 'pods',
        contentType: 'protobuf',
        quiet: true,
        untilStopped: true,
      });
      const synced = await p.synced.then(
        () => true,
        (err: unknown) => {
          log({ rep, probe: pf.name, failed: String(err).slice(0, 200) });
          p.done.catch(() => {});
          return false;
        },
      );
      if (!synced) continue; // the probe's 1-minute sync timeout on a loaded machine: no figure
      const clientCpu = cpuSeconds(p.pid) * 1000;
      const serverCpu = (cpuSeconds(pf.pid) - s0) * 1000;
      p.stop();
      const res = await p.done;
      probeRows[pf.name] ??= {
        clientCpu: [],
        syncMs: [],
        serverCpu: [],
        items: res.store.length,
      };
      const row = probeRows[pf.name]!;
      row.clientCpu.push(clientCpu);
      row.syncMs.push(res.syncedMs);
      row.serverCpu.push(serverCpu);
      log({
        rep,
        probe: pf.name,
        clientCpuMs: clientCpu,
        syncMs: res.syncedMs,
        serverCpuMs: serverCpu,
        items: res.store.length,
      });
    }
    await phase(`informer rep ${rep + 1}`);
  }

  // Where each proxy settles with nothing asked of it (watchers still open, no GC forced): V8's
  // memory reducer starts 8 s after the allocation rate drops (--gc-memory-reducer-start-delay-ms)
  // and frees what the last GC left (dead Buffers' memory, emptied pages). Sampled first: the
  // rows below force GCs.
  const ended = new Map<ProxyProcess, Awaited<ReturnType<ProxyProcess['memory']>>>();
  for (const p of proxies) ended.set(p, await p.memory('sample'));
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  const settled = new Map<ProxyProcess, Awaited<ReturnType<ProxyProcess['memory']>>>();
  for (const p of proxies) settled.set(p, await p.memory('sample'));
  await phase(`${SETTLE_MS / 1000} s idle after the rows`);
  for (const { variant, cache, json, emptyMem } of pairs) {
    for (const [mode, p] of [
      ['cache', cache],
      ['json', json],
    ] as const) {
      const what = tag(
        `proxy pods, --protobuf-answers=${mode}, after the rows, 10 protobuf-first + 10 JSON watchers open`,
        variant,
      );
      const m = await memoryOf(p);
      memRows.push(memoryRow(what, 'pods', size, { ...m, at2s: ended.get(p)! }, emptyMem));
      log(memRows.at(-1));
      memRows.push(
        memoryRow(
          `${what}, ${SETTLE_MS / 1000} s idle`,
          'pods',
          size,
          { ...m, at2s: settled.get(p)! },
          emptyMem,
        ),
      );
      log(memRows.at(-1));
    }
  }
  // KCP_HEAP_SNAPSHOT_DIR: after the figures (writing one grows the RSS), a heap snapshot of each
  // proxy (cache[-variant].heapsnapshot, json[-variant].heapsnapshot) for bench/tools/heap-classes.ts.
  const snapDir = process.env.KCP_HEAP_SNAPSHOT_DIR;
  if (snapDir)
    for (const { variant, cache, json } of pairs)
      for (const [name, p] of [
        ['cache', cache],
        ['json', json],
      ] as const)
        await p.memory(`snapshot ${snapDir}/${pairs.length > 1 ? `${name}-${variant}` : name}.heapsnapshot`);

  console.log(
    `\n${PODS} pods, ${size.jsonBytes} bytes of JSON LIST; ${REPS} repetitions interleaved, median (min–max)\n`,
  );
  console.log('| request | wall ms | CPU ms of the answering process | bytes |');
  console.log('| --- | --- | --- | --- |');
  for (const [k, v] of Object.entries(reqRows).sort(([a], [b]) => a.localeCompare(b)))
    console.log(`| ${k} | ${spread(v.wall)} | ${spread(v.cpu)} | ${v.bytes} |`);
  for (const row of firstRows) console.log(row);
  console.log(
    '\n| informer cold sync (typed, protobuf,json) | client CPU ms | sync ms | server CPU ms | items |',
  );
  console.log('| --- | --- | --- | --- | --- |');
  for (const [k, v] of Object.entries(probeRows))
    console.log(
      `| ${k} | ${spread(v.clientCpu)} | ${spread(v.syncMs)} | ${spread(v.serverCpu)} | ${v.items} |`,
    );
  console.log(
    '\n| memory | RSS MiB 2 s | RSS MiB GC | heap used MiB GC | ArrayBuffers MiB GC | RSS per JSON byte | RSS per JSON byte, GC | live per JSON byte |',
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const m of memRows)
    console.log(
      `| ${m.what} | ${m.rssMiB} | ${m.rssGcMiB} | ${m.heapUsedGcMiB} | ${m.arrayBuffersGcMiB} | ${m.rssPerJsonByte} | ${m.rssPerJsonByteGc} | ${m.livePerJsonByte} |`,
    );
  console.log(
    '\n| after | variant | proxy | RSS MiB | brk heap | thread arenas | anon < 1 MiB | anon ≥ 1 MiB | file | V8 old space | V8 large objects | V8 total | ArrayBuffers | proxy CPU s since start |',
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const row of smapsRows) console.log(row);
} finally {
  for (const w of watchers) w.destroy();
  for (const p of proxies) await p.stop();
  await direct.close();
  await up.close();
  await f.stop();
}
process.exit(0);
