/**
 * The store's bytes per entry, in process, without an apiserver (issue 12: what a small object
 * costs beyond its JSON):
 *   node --expose-gc bench/tools/store-memory.ts [configmaps|widgets] [n=100000] [snapshot.heapsnapshot]
 * Fills a WatchCache as a watch-list sync does (each object's bytes decoded alone, `compact`,
 * then `replace`), with objects shaped like what kube-apiserver v1.37 returns for the bench's
 * seeded ConfigMaps (1,298 JSON bytes, `bench/support/sync-support.ts` `seedConfigMaps`) and Widgets
 * (`bench/support/memory.ts` `seedWidgets`). Prints one JSON line: heap, ArrayBuffer and RSS bytes per
 * entry after two full GCs (RSS includes malloc's per-allocation overhead), JSON bytes per
 * object, and the ms of LIST all (`list` + `encodeList`, 10 runs, median) and of 10,000 GETs.
 * With a file name, also writes a heap snapshot and prints its classes (bench/tools/heap-classes.ts).
 */
import { readFileSync } from 'node:fs';
import { setFlagsFromString, writeHeapSnapshot } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { ResourceInfo } from '../../src/apimachinery/gvr.ts';
import type { KubeObject } from '../../src/apimachinery/object.ts';
import { everythingFields, everythingLabels } from '../../src/apimachinery/selectors.ts';
import { encodeList } from '../../src/cache/encoding.ts';
import { WatchCache } from '../../src/cache/watch-cache.ts';
import { itemsBody } from '../../src/server/filled-body.ts';
import { toolArgs } from '../support/args.ts';
import { heapClasses } from './heap-classes.ts';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const [kind = 'configmaps', nArg = '100000', snapshot] = toolArgs({}).positionals;
const n = Number(nArg);
const NS = 'bench-cm-k2x7q';

const CONFIGMAPS: ResourceInfo = {
  gvr: { group: '', version: 'v1', resource: 'configmaps' },
  kind: 'ConfigMap',
  listKind: 'ConfigMapList',
  apiVersion: 'v1',
  namespaced: true,
  verbs: ['list', 'watch', 'get'],
  builtIn: true,
};
const WIDGETS: ResourceInfo = {
  gvr: { group: 'bench.kcp.io', version: 'v1', resource: 'widgets' },
  kind: 'Widget',
  listKind: 'WidgetList',
  apiVersion: 'bench.kcp.io/v1',
  namespaced: true,
  verbs: ['list', 'watch', 'get'],
  builtIn: false,
};
const resource = kind === 'widgets' ? WIDGETS : CONFIGMAPS;

/** Object `i` as the apiserver writes it (key order of its typed or unstructured encoding). */
function json(i: number): string {
  const name = `${kind === 'widgets' ? 'w' : 'cm'}-${String(i).padStart(6, '0')}`;
  const uid = `5f0c${String(i).padStart(4, '0').slice(-4)}-1a2b-4c3d-9e8f-${String(i).padStart(12, '0')}`;
  const rv = String(1_000_000 + i);
  const ts = '2026-12-02T00:01:02Z';
  if (kind === 'widgets')
    return JSON.stringify({
      apiVersion: 'bench.kcp.io/v1',
      kind: 'Widget',
      metadata: {
        creationTimestamp: ts,
        generation: 1,
        labels: { seeded: 'true' },
        managedFields: [
          {
            apiVersion: 'bench.kcp.io/v1',
            fieldsType: 'FieldsV1',
            fieldsV1: {
              'f:metadata': { 'f:labels': { '.': {}, 'f:seeded': {} } },
              'f:spec': { '.': {}, 'f:filler': {}, 'f:i': {} },
            },
            manager: 'undici',
            operation: 'Update',
            time: ts,
          },
        ],
        name,
        namespace: NS,
        resourceVersion: rv,
        uid,
      },
      spec: { filler: 'w'.repeat(774), i },
    });
  return JSON.stringify({
    kind: 'ConfigMap',
    apiVersion: 'v1',
    metadata: {
      name,
      namespace: NS,
      uid,
      resourceVersion: rv,
      creationTimestamp: ts,
      labels: { seeded: 'true' },
      managedFields: [
        {
          manager: 'undici',
          operation: 'Update',
          apiVersion: 'v1',
          time: ts,
          fieldsType: 'FieldsV1',
          fieldsV1: {
            'f:data': { '.': {}, 'f:filler': {}, 'f:i': {} },
            'f:metadata': { 'f:labels': { '.': {}, 'f:seeded': {} } },
          },
        },
      ],
    },
    data: { filler: 'x'.repeat(824), i: String(i) },
  });
}

function held() {
  gc();
  gc();
  const m = process.memoryUsage();
  return { heap: m.heapUsed, arrayBuffers: m.arrayBuffers, rss: m.rss };
}

const before = held();
const cache = new WatchCache({ resource });
const objects = [];
let jsonBytes = 0;
for (let i = 0; i < n; i++) {
  const raw = Buffer.from(json(i));
  jsonBytes += raw.length;
  objects.push(cache.compact({ raw, object: JSON.parse(raw.toString('utf8')) as KubeObject }));
}
cache.replace(objects, String(2_000_000));
objects.length = 0;
const after = held();
const per = (k: 'heap' | 'arrayBuffers' | 'rss') => Math.round((after[k] - before[k]) / n);

const ALL = { labelSelector: everythingLabels, fieldSelector: everythingFields };
const listMs: number[] = [];
let listBytes = 0;
for (let r = 0; r < 10; r++) {
  const t0 = performance.now();
  listBytes += itemsBody(encodeList(resource, cache.list(ALL))).length;
  listMs.push(performance.now() - t0);
}
listMs.sort((a, b) => a - b);
const t0 = performance.now();
for (let i = 0; i < 10_000; i++) {
  const e = cache.get(NS, `${kind === 'widgets' ? 'w' : 'cm'}-${String((i * 7919) % n).padStart(6, '0')}`);
  if (!e) throw new Error('missing');
  for (const c of e.wire) listBytes += c.length;
}
const getMs = performance.now() - t0;
const out: Record<string, unknown> = {
  kind,
  objects: n,
  jsonBytesPerObject: Math.round(jsonBytes / n),
  heapPerEntry: per('heap'),
  arrayBuffersPerEntry: per('arrayBuffers'),
  rssPerEntry: per('rss'),
  rssPerJsonByte: Math.round(((after.rss - before.rss) / jsonBytes) * 100) / 100,
  listAllMedianMs: Math.round(listMs[5]! * 10) / 10,
  get10kMs: Math.round(getMs * 10) / 10,
};
if (snapshot) {
  const file = writeHeapSnapshot(snapshot);
  out.heap = heapClasses(JSON.parse(readFileSync(file, 'utf8')), 14);
}
process.stdout.write(`${JSON.stringify(out)}\n`);
if (listBytes === 0) cache.close();
