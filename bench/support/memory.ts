/**
 * The memory rows of bench/run.ts (bench/scenarios/cold.ts): one proxy process per resource (pods, ConfigMaps, one custom
 * resource), started with `--expose-gc` and bench/workers/memory-hook.js, caching only that resource —
 * the built CLI (dist/, as the image runs it) when bench/run.ts could build it.
 *
 * Definitions (every figure in bytes or MiB of the proxy process):
 * - "2 s": RSS (VmRSS) and V8 heapUsed 2 s after `/readyz` first answered 200, no forced GC —
 *   what an operator's dashboard shows;
 * - "after GC": the same after two forced full collections (`global.gc()`), i.e. what is live;
 * - per object = (row − empty-cache row) / objects, the empty-cache row being a proxy caching one
 *   empty resource (limitranges) measured the same way;
 * - RSS per JSON byte = RSS per object ÷ JSON bytes per object, the JSON bytes being the
 *   apiserver's own identity LIST (`resourceVersion=0`) of the resource divided by its items.
 * Optionally a heap snapshot after the GC, summarised by class (bench/tools/heap-classes.ts).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import type { Upstream } from '../../src/upstream/connection.ts';
import type { HeapClasses, MemoryRow } from '../report/results.ts';
import { peakRssBytes, round } from './proc.ts';
import { type MemoryUsage, startProxy } from './proxy-process.ts';

const MiB = 2 ** 20;

/** The group, kind and resource of the bench's custom resource. */
export const WIDGETS = { group: 'bench.kcp.io', resource: 'widgets', kind: 'Widget' } as const;

async function call(up: Upstream, method: 'GET' | 'POST', path: string, body?: unknown) {
  const auth = await up.authorization();
  const res = await request(up.baseUrl + path, {
    method,
    dispatcher: up.dispatcher,
    headers: { 'content-type': 'application/json', ...(auth ? { authorization: auth } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.statusCode, text: await res.body.text() };
}

/**
 * Creates the `widgets.bench.kcp.io` CustomResourceDefinition (namespaced, schemaless) and `n`
 * Widgets of about `bytes` bytes in `namespace`, `concurrency` at a time; throws on a failed POST.
 */
export async function seedWidgets(up: Upstream, namespace: string, n: number, bytes = 1024): Promise<void> {
  const crdPath = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
  const name = `${WIDGETS.resource}.${WIDGETS.group}`;
  const crd = await call(up, 'POST', crdPath, {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name },
    spec: {
      group: WIDGETS.group,
      names: { plural: WIDGETS.resource, singular: 'widget', kind: WIDGETS.kind, listKind: 'WidgetList' },
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
  });
  if (crd.status !== 201 && crd.status !== 409) throw new Error(`seed CRD: ${crd.status} ${crd.text}`);
  const filler = 'w'.repeat(Math.max(0, bytes - 250));
  const base = `/apis/${WIDGETS.group}/v1/namespaces/${namespace}/${WIDGETS.resource}`;
  let next = 0;
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= n) return;
      const obj = {
        apiVersion: `${WIDGETS.group}/v1`,
        kind: WIDGETS.kind,
        metadata: { name: `widget-${String(i).padStart(6, '0')}`, labels: { seeded: 'true' } },
        spec: { i, size: 'small', filler },
      };
      // The new group is served a moment after the CRD is created (404 until then).
      for (let attempt = 0; ; attempt++) {
        const r = await call(up, 'POST', base, obj);
        if (r.status === 201) break;
        if (r.status !== 404 || attempt > 100)
          throw new Error(`seed widget ${i}: ${r.status} ${r.text.slice(0, 200)}`);
        await new Promise((res) => setTimeout(res, 200));
      }
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
}

/** Objects and identity JSON bytes of the apiserver's `resourceVersion=0` LIST at `path`. */
export async function listSize(up: Upstream, path: string): Promise<{ objects: number; jsonBytes: number }> {
  const r = await call(up, 'GET', `${path}?resourceVersion=0`);
  if (r.status !== 200) throw new Error(`LIST ${path}: ${r.status} ${r.text.slice(0, 200)}`);
  return {
    objects: (JSON.parse(r.text) as { items: unknown[] }).items.length,
    jsonBytes: Buffer.byteLength(r.text),
  };
}

const heapScript = fileURLToPath(new URL('../tools/heap-classes.ts', import.meta.url));

function summariseSnapshot(file: string): Promise<HeapClasses> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--max-old-space-size=6144', heapScript, file, '15'],
      { maxBuffer: 16 * MiB, timeout: 600_000 },
      (err, stdout, stderr) =>
        err
          ? reject(new Error(`heap-classes: ${err.message} ${stderr.slice(-500)}`))
          : resolve(JSON.parse(stdout)),
    );
  });
}

/** The raw figures of one proxy process caching `resource`. */
export async function measureProxy(opts: {
  kubeconfig: string;
  resource: string;
  cpu: string;
  heapSnapshot: boolean;
  /** The CLI to run (bench/support/proxy-process.ts; default src/cli.ts). */
  cli?: string;
  /** Node/V8 flags of the proxy process (bench/support/proxy-process.ts). */
  nodeArgs?: string[];
  env?: NodeJS.ProcessEnv;
  /** Further proxy flags. */
  extraArgs?: string[];
  /**
   * After the figures: {@link exerciseClients} of this LIST path (`/api/v1/pods`), then the same
   * figures again as `withClients` (its watchers still open).
   */
  clientsPath?: string;
}): Promise<{
  readyMs: number;
  peak: number;
  at2s: MemoryUsage;
  afterGc: MemoryUsage;
  heap?: HeapClasses;
  withClients?: { readyMs: number; peak: number; at2s: MemoryUsage; afterGc: MemoryUsage };
}> {
  const p = await startProxy({
    kubeconfig: opts.kubeconfig,
    resources: [opts.resource],
    cpu: opts.cpu,
    memoryHook: true,
    ...(opts.cli ? { cli: opts.cli } : {}),
    ...(opts.nodeArgs ? { nodeArgs: opts.nodeArgs } : {}),
    ...(opts.env ? { env: opts.env } : {}),
    ...(opts.extraArgs ? { extraArgs: opts.extraArgs } : {}),
  });
  const dir = mkdtempSync(join(tmpdir(), 'kcp-bench-heap-'));
  try {
    await new Promise((r) => setTimeout(r, 2000));
    const at2s = await p.memory('sample');
    const peak = peakRssBytes(p.pid);
    const afterGc = await p.memory('gc');
    let withClients: { readyMs: number; peak: number; at2s: MemoryUsage; afterGc: MemoryUsage } | undefined;
    if (opts.clientsPath !== undefined) {
      const clients = await exerciseClients(p.url, opts.clientsPath);
      try {
        await new Promise((r) => setTimeout(r, 2000));
        const at = await p.memory('sample');
        withClients = {
          readyMs: p.readyMs,
          peak: peakRssBytes(p.pid),
          at2s: at,
          afterGc: await p.memory('gc'),
        };
      } finally {
        clients.close();
      }
    }
    // After the figures: writing a snapshot grows the RSS.
    const file = join(dir, 'proxy.heapsnapshot');
    if (opts.heapSnapshot) await p.memory(`snapshot ${file}`);
    await p.stop();
    const heap = opts.heapSnapshot ? await summariseSnapshot(file) : undefined;
    return {
      readyMs: p.readyMs,
      peak,
      at2s,
      afterGc,
      ...(heap ? { heap } : {}),
      ...(withClients ? { withClients } : {}),
    };
  } finally {
    await p.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const PROTOBUF = 'application/vnd.kubernetes.protobuf';

/**
 * JSON and protobuf clients both active on the proxy at `base` (issue 32's memory goal): 10
 * protobuf-first (`Accept: protobuf, json`, as client-go's typed clients) and 10 JSON watchers of
 * `path` (all namespaces) opened and left open, then `lists` LISTs of everything (RV=0) in each
 * format, read whole, one at a time. A resource without protobuf (custom resources) answers those
 * JSON, as the apiserver. Resolves once the LISTs were read; `close()` ends the watchers.
 * @throws Error on an answer other than 200.
 */
export async function exerciseClients(base: string, path: string, lists = 3): Promise<{ close(): void }> {
  const bodies: Array<{ destroy(): void }> = [];
  const close = () => {
    for (const b of bodies) b.destroy();
  };
  try {
    const first = await request(`${base}${path}?limit=1`, { headers: { accept: 'application/json' } });
    const rv = (JSON.parse(await first.body.text()) as { metadata: { resourceVersion: string } }).metadata
      .resourceVersion;
    for (let i = 0; i < 20; i++) {
      const accept = i % 2 === 0 ? `${PROTOBUF}, application/json` : 'application/json';
      const r = await request(`${base}${path}?watch=1&allowWatchBookmarks=true&resourceVersion=${rv}`, {
        headers: { accept },
      });
      bodies.push(r.body);
      if (r.statusCode !== 200) throw new Error(`watch ${path} ${accept}: ${r.statusCode}`);
      r.body.on('data', () => {});
      r.body.on('error', () => {});
    }
    for (let i = 0; i < lists; i++)
      for (const accept of [`${PROTOBUF}, application/json`, 'application/json']) {
        const r = await request(`${base}${path}?resourceVersion=0`, { headers: { accept } });
        for await (const _ of r.body); // read whole, kept nowhere
        if (r.statusCode !== 200) throw new Error(`LIST ${path} ${accept}: ${r.statusCode}`);
      }
    return { close };
  } catch (err) {
    close();
    throw err;
  }
}

/** A {@link MemoryRow} from the figures of one resource and of the empty cache. */
export function memoryRow(
  what: string,
  resource: string,
  size: { objects: number; jsonBytes: number },
  m: Awaited<ReturnType<typeof measureProxy>>,
  empty: Awaited<ReturnType<typeof measureProxy>> | undefined,
): MemoryRow {
  const n = size.objects;
  const jsonPer = n > 0 ? size.jsonBytes / n : 0;
  const per = (x: number, base: number | undefined) => (n > 0 && base !== undefined ? (x - base) / n : 0);
  const perJson = (x: number) => (jsonPer > 0 ? round(x / jsonPer, 2) : 0);
  const live = (u: MemoryUsage) => u.heapUsed + u.arrayBuffers;
  const rssPer = per(m.at2s.rss, empty?.at2s.rss);
  return {
    what,
    resource,
    objects: n,
    readyMs: m.readyMs,
    peakRssMiB: round(m.peak / MiB),
    rssMiB: round(m.at2s.rss / MiB),
    heapUsedMiB: round(m.at2s.heapUsed / MiB),
    rssGcMiB: round(m.afterGc.rss / MiB),
    heapUsedGcMiB: round(m.afterGc.heapUsed / MiB),
    arrayBuffersGcMiB: round(m.afterGc.arrayBuffers / MiB),
    jsonPerObjectBytes: Math.round(jsonPer),
    rssPerObjectBytes: Math.round(rssPer),
    rssPerJsonByte: perJson(rssPer),
    rssPerJsonByteGc: perJson(per(m.afterGc.rss, empty?.afterGc.rss)),
    livePerJsonByte: perJson(per(live(m.afterGc), empty ? live(empty.afterGc) : undefined)),
    ...(m.heap ? { heap: m.heap } : {}),
  };
}
