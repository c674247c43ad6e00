/**
 * The encodings a LIST served from the cache can go out in, side by side (issue 12, "gzip to
 * clients that ask"):  node bench/tools/gzip-forms.ts [pods=10000] [seconds=5]  → a Markdown table and
 * one JSON line.
 *
 * One HTTP server in this process, pinned to CPU 1 (its zlib thread-pool work too), holding
 * `pods` pods of ~5.4 KB as real store entries (`src/cache/store.ts`) over 50 nodes, answers:
 * - `identity`: the cache's LIST body as it writes it today (a corked writev of the item buffers);
 * - `gzip`: the same body through `src/server/compress.ts` (one gzip member, level 1, compressed
 *   per request — what `--response-compression=gzip` sends);
 * - `members`: per-object gzip members (`,` + the list item, level 1) built once per entry and
 *   concatenated, with the list header and the first item compressed per request (RFC 1952
 *   multi-member; only for readers that decode every member: Go's and Node's gunzip do, curl
 *   `--compressed`, browsers and kube-rs stop after the first).
 * for LIST all pods and LIST one node's pods (`spec.nodeName`, ~200). autocannon on CPU 0,
 * 4 connections, `Accept-Encoding: gzip`; bytes are the body on the wire.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync, gzipSync } from 'node:zlib';
import { bufferItems } from '../../src/apimachinery/list-items.ts';
import type { UpstreamObject } from '../../src/apimachinery/object.ts';
import { encodeList } from '../../src/cache/encoding.ts';
import { Store, type StoreEntry } from '../../src/cache/store.ts';
import { writeGzip } from '../../src/server/compress.ts';
import { resourceInfo } from '../../test/support/resource-info.ts';
import { toolArgs } from '../support/args.ts';
import { runLoad } from '../support/load.ts';
import { fillerText, nodeName, nsName, podName } from '../support/seed.ts';

const [podsArg = '10000', secondsArg = '5'] = toolArgs({}).positionals;
const N = Number(podsArg);
const SECONDS = Number(secondsArg);
const PODS = resourceInfo('v1', 'pods', 'Pod');

/** A pod about as the apiserver returns the bench's (defaults, managedFields): ~5.4 KB. */
function podJson(i: number): string {
  const ns = nsName(i % 100);
  return JSON.stringify({
    kind: 'Pod',
    apiVersion: 'v1',
    metadata: {
      name: podName(i),
      namespace: ns,
      uid: `6f1c${String(i).padStart(8, '0')}-aaaa-bbbb-cccc-0123456789ab`,
      resourceVersion: String(1000 + i),
      creationTimestamp: '2026-12-01T10:00:00Z',
      labels: { app: `app-${i % 20}`, tier: i % 2 ? 'web' : 'worker', seeded: 'true' },
      annotations: { 'bench.kcp/filler': fillerText(i, 3300) },
      managedFields: [
        {
          manager: 'bench',
          operation: 'Update',
          apiVersion: 'v1',
          time: '2026-12-01T10:00:00Z',
          fieldsType: 'FieldsV1',
          fieldsV1: { 'f:metadata': { 'f:annotations': { '.': {}, 'f:bench.kcp/filler': {} } } },
        },
      ],
    },
    spec: {
      nodeName: nodeName(i % 50),
      containers: [
        {
          name: 'main',
          image: 'registry.example/bench/app:1.0',
          env: Array.from({ length: 4 }, (_, k) => ({ name: `BENCH_VAR_${k}`, value: `value-${i}-${k}` })),
          resources: { requests: { cpu: '10m', memory: '16Mi' } },
          terminationMessagePath: '/dev/termination-log',
          terminationMessagePolicy: 'File',
          imagePullPolicy: 'IfNotPresent',
        },
      ],
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 30,
      dnsPolicy: 'ClusterFirst',
      serviceAccountName: 'default',
      schedulerName: 'default-scheduler',
      tolerations: [
        {
          key: 'node.kubernetes.io/not-ready',
          operator: 'Exists',
          effect: 'NoExecute',
          tolerationSeconds: 300,
        },
      ],
      priority: 0,
      enableServiceLinks: true,
      preemptionPolicy: 'PreemptLowerPriority',
    },
    status: { phase: 'Pending', qosClass: 'Burstable' },
  });
}

const store = new Store(PODS);
let jsonBytes = 0;
for (let i = 0; i < N; i++) {
  const text = podJson(i);
  jsonBytes += text.length;
  const object = JSON.parse(text) as UpstreamObject['object'];
  store.put(store.entry({ raw: Buffer.from(text), object }));
}
const all = [...store.values()].sort((a, b) => (a.key < b.key ? -1 : 1));
const oneNode = all.filter((e) => e.fields['spec.nodeName'] === nodeName(7));
const members = new WeakMap<StoreEntry, Buffer>();
let memberBytes = 0;
const member = (e: StoreEntry): Buffer => {
  let m = members.get(e);
  if (!m) {
    m = gzipSync(Buffer.concat([Buffer.from(','), e.listItem]), { level: 1 });
    memberBytes += m.length;
    members.set(e, m);
  }
  return m;
};

/** The JSON LIST of `entries` as chunks: its head, each item's view with commas between, its tail. */
function body(entries: StoreEntry[]): Buffer[] {
  const items = entries.map((e) => e.listItem);
  const { head, tail } = encodeList(PODS, { resourceVersion: '99999', items: bufferItems(items) });
  return [head, ...items.flatMap((b, i) => (i > 0 ? [COMMA, b] : [b])), tail];
}

const COMMA = Buffer.from(',');

function writeIdentity(res: ServerResponse, chunks: Buffer[]): void {
  let len = 0;
  for (const c of chunks) len += c.length;
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': len });
  res.cork();
  for (const c of chunks) res.write(c);
  res.uncork();
  res.end();
}

/** The multi-member body: header + first item compressed now, the rest from the entries' members. */
function memberChunks(entries: StoreEntry[]): Buffer[] {
  const chunks = body(entries.slice(0, 1));
  // chunks = [header, item0, footer]: header+item0 in one member, the footer in another.
  const out: Buffer[] = [gzipSync(Buffer.concat(chunks.slice(0, -1)), { level: 1 })];
  for (let i = 1; i < entries.length; i++) out.push(member(entries[i]!));
  out.push(gzipSync(chunks[chunks.length - 1]!, { level: 1 }));
  return out;
}

const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://x');
  const entries = url.searchParams.get('sel') === 'node' ? oneNode : all;
  const form = url.pathname.slice(1);
  if (form === 'identity') return writeIdentity(res, body(entries));
  if (form === 'gzip') return writeGzip(res, { 'content-type': 'application/json' }, body(entries));
  if (form === 'members') {
    const chunks = memberChunks(entries);
    let len = 0;
    for (const c of chunks) len += c.length;
    res.writeHead(200, {
      'content-type': 'application/json',
      'content-encoding': 'gzip',
      'content-length': len,
    });
    res.cork();
    for (const c of chunks) res.write(c);
    res.uncork();
    res.end();
    return;
  }
  res.writeHead(404).end();
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const port = (server.address() as AddressInfo).port;

// Correctness first: every form decodes (Node reads every member) to the identity body.
for (const entries of [all, oneNode]) {
  const id = Buffer.concat(body(entries));
  const mem = gunzipSync(Buffer.concat(memberChunks(entries)));
  if (!mem.equals(id)) throw new Error('members body differs from identity');
}

/**
 * CPU per answer, measured without the network or a load generator (what a shared, loaded
 * machine still measures fairly): building the body in each form `reps` times, process CPU
 * time (user + system, zlib's thread work included) per answer, ms. gzip = zlib level 1 over the
 * whole body as `writeGzip` feeds it; members = the per-request part (header + first item + footer).
 */
function cpuPerAnswer(entries: StoreEntry[], reps: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const e of entries) member(e); // built once, before (what a warm cache holds)
  const forms: Record<string, () => unknown> = {
    identity: () => body(entries),
    gzip: () => gzipSync(Buffer.concat(body(entries)), { level: 1 }),
    members: () => memberChunks(entries),
  };
  for (const [form, fn] of Object.entries(forms)) {
    fn();
    const c0 = process.cpuUsage();
    for (let i = 0; i < reps; i++) fn();
    const c = process.cpuUsage(c0);
    out[form] = Math.round(((c.user + c.system) / 1000 / reps) * 100) / 100;
  }
  return out;
}
const cpu = {
  all: cpuPerAnswer(all, 5),
  node: cpuPerAnswer(oneNode, 50),
};
console.log(`CPU ms per answer: ${JSON.stringify(cpu)}`);
if (process.env.KCP_GZIP_FORMS_CPU_ONLY === '1') process.exit(0);

const rows = [];
for (const [label, sel] of [
  [`LIST all ${N} pods`, 'all'],
  [`LIST one node (${oneNode.length} pods)`, 'node'],
] as const) {
  for (const form of ['identity', 'gzip', 'members']) {
    const url = `http://127.0.0.1:${port}/${form}?sel=${sel}`;
    const probe = await fetch(url, { headers: { 'accept-encoding': 'gzip' } });
    const wire = Buffer.from(await probe.arrayBuffer()).length; // fetch decodes; count the raw below
    const raw = await new Promise<number>((resolve, reject) => {
      import('node:http').then(({ get }) =>
        get(url, { headers: { 'accept-encoding': 'gzip' } }, (r) => {
          let n = 0;
          r.on('data', (d: Buffer) => {
            n += d.length;
          });
          r.on('end', () => resolve(n));
        }).on('error', reject),
      );
    });
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const load = await runLoad(
      { url, connections: 4, durationS: SECONDS, headers: { 'accept-encoding': 'gzip' } },
      '0',
    );
    const wallS = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    rows.push({
      query: label,
      form,
      bodyBytes: raw,
      decodedBytes: wire,
      rps: Math.round(load.rps * 10) / 10,
      p50Ms: load.p50Ms,
      p99Ms: load.p99Ms,
      serverCores: Math.round(((cpu.user + cpu.system) / 1e6 / wallS) * 100) / 100,
      errors: load.errors + load.non2xx,
    });
    console.error(JSON.stringify(rows[rows.length - 1]));
  }
}
server.close();
const KiB = 1024;
console.log('| query | form | body on the wire | req/s | p50 ms | p99 ms | server cores | errors |');
console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
for (const r of rows)
  console.log(
    `| ${r.query} | ${r.form} | ${(r.bodyBytes / KiB).toFixed(1)} KiB | ${r.rps} | ${r.p50Ms} | ${r.p99Ms} | ${r.serverCores} | ${r.errors} |`,
  );
console.log(
  JSON.stringify({
    pods: N,
    jsonBytesPerPod: Math.round(jsonBytes / N),
    memberBytesPerPod: Math.round(memberBytes / Math.max(1, N - 1)),
    rows,
  }),
);
