/**
 * The V8 heap a cache LIST leaves behind, in process (issue 32's memory goal): a WatchCache of
 * `N` ConfigMaps of ~1.3 KB (the memory rows' size), then per form (JSON, protobuf after a first
 * LIST that keeps the messages) 5 LISTs, each body filled into two 256 KiB batches as
 * `server/filled-body.ts` writes it, a full GC before each: the old + large-object space's growth
 * per LIST (what a LIST promotes and leaves for a major GC) and its CPU (`process.cpuUsage`);
 * then heapUsed and heapTotal around 5 LISTs in a row without a forced GC. `ROOT`: the source
 * tree to load the cache and encoders from (another worktree's, e.g. the base branch's, for
 * before/after figures from one command; its test/support too), default this one.
 *
 * usage: node --expose-gc --max-semi-space-size=2 bench/tools/list-garbage.ts [ROOT=.] [N=100000]
 *   (with MALLOC_MMAP_THRESHOLD_=131072, as the proxy ships)
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { getHeapSpaceStatistics } from 'node:v8';
import { toolArgs } from '../support/args.ts';

type Body = { fill(into: Buffer): number };
const [rootArg = '.', nArg = '100000'] = toolArgs({}).positionals;
const root = resolve(rootArg);
const N = Number(nArg);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');

const { everythingFields, everythingLabels } = await import(`${root}/src/apimachinery/selectors.ts`);
const { cacheCodec } = await import(`${root}/src/cache/codec.ts`);
const { WatchCache } = await import(`${root}/src/cache/watch-cache.ts`);
const filledBody = await import(`${root}/src/server/filled-body.ts`);
const { protobufList } = await import(`${root}/src/server/protobuf-answers.ts`);
const { FakeClock } = await import(`${root}/test/support/fake-clock.ts`);
const { resourceInfo } = await import(`${root}/test/support/resource-info.ts`);

const CM = resourceInfo('v1', 'configmaps', 'ConfigMap');
const objects = [];
for (let i = 0; i < N; i++) {
  const object = {
    kind: 'ConfigMap',
    apiVersion: 'v1',
    metadata: {
      name: `cm-${String(i).padStart(6, '0')}`,
      namespace: 'bench',
      uid: `0000-${i}-aaaa-bbbb-cccc`,
      resourceVersion: String(1000 + i),
      creationTimestamp: '2026-12-07T00:00:00Z',
      labels: { app: 'bench', idx: String(i % 100) },
    },
    data: { payload: 'x'.repeat(1000) + String(i) },
  };
  objects.push({ raw: Buffer.from(JSON.stringify(object)), object });
}
const cache = new WatchCache({ resource: CM, clock: new FakeClock() });
cache.replace(objects, String(1000 + N));
objects.length = 0;
const page = () => cache.list({ labelSelector: everythingLabels, fieldSelector: everythingFields });
// The JSON body: chunks before the items were addressed in the slabs, an items body after.
const jsonBody = (b: unknown): Body =>
  Array.isArray(b) ? filledBody.chunksBody(b) : filledBody.itemsBody(b);
const batches = [
  Buffer.allocUnsafeSlow(filledBody.BATCH_BYTES),
  Buffer.allocUnsafeSlow(filledBody.BATCH_BYTES),
];
const drain = (body: Body) => {
  for (let i = 0; body.fill(batches[i & 1]!) > 0; i++);
};
const oldSpace = () =>
  getHeapSpaceStatistics()
    .filter((s) => s.space_name === 'old_space' || s.space_name === 'large_object_space')
    .reduce((n, s) => n + s.space_used_size, 0);
const MiB = (x: number) => (x / 1048576).toFixed(1);

drain(protobufList(CM, page())); // the first protobuf LIST encodes and keeps every message
const forms: Record<string, () => void> = {
  JSON: () => drain(jsonBody(cacheCodec.encodeList(CM, page()))),
  protobuf: () => drain(protobufList(CM, page())),
};
console.log(`${root}: ${N} ConfigMaps; load ${readFileSync('/proc/loadavg', 'utf8').trim()}`);
for (const [name, list] of Object.entries(forms)) {
  const grew: string[] = [];
  const cpu: string[] = [];
  for (let r = 0; r < 5; r++) {
    gc();
    const o0 = oldSpace();
    const c0 = process.cpuUsage();
    list();
    const c = process.cpuUsage(c0);
    grew.push(MiB(oldSpace() - o0));
    cpu.push(((c.user + c.system) / 1000).toFixed(0));
  }
  const h0 = process.memoryUsage();
  for (let r = 0; r < 5; r++) list();
  const h1 = process.memoryUsage();
  console.log(
    `${name}: old-space growth per LIST ${grew.join(' ')} MiB; CPU ${cpu.join(' ')} ms; ` +
      `5 LISTs: heapUsed ${MiB(h0.heapUsed)} → ${MiB(h1.heapUsed)}, heapTotal ${MiB(h0.heapTotal)} → ${MiB(h1.heapTotal)} MiB`,
  );
}
