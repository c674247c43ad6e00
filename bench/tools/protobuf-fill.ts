/**
 * In-process CPU of a LIST body and of a GET body from the cache, protobuf against JSON (issue
 * 32's CPU goal), without HTTP: a WatchCache of pods filled from an apiserver's LIST (a JSON file:
 * `kubectl get --raw '/api/v1/pods?resourceVersion=0'`), then rounds, interleaved, of
 *
 * - the protobuf LIST body (`protobufList`, filled into two 256 KiB batches in turn as
 *   `filled-body.ts` `pumpBody` fills them) and the JSON LIST body (`cacheCodec.encodeList`, the
 *   same way through `chunksBody`), the whole page of every pod;
 * - `GETS` protobuf GET bodies of one pod (`protobufGet`) and the JSON GET's chunks (the entry's
 *   wire and a newline, as `serve-read.ts` hands them to the socket), with each form's Accept
 *   negotiated (`answerEncoding`).
 *
 * The first protobuf LIST (which encodes and keeps every pod's message) is a warm-up. With a
 * `.pb` file beside the JSON (the apiserver's protobuf LIST of the same RV) the protobuf body is
 * checked byte-equal to it first. Prints the median (min–max) CPU ms per LIST and µs per GET
 * (`process.cpuUsage`, this thread only: no I/O happens), and the median per-round ratio.
 *
 * usage: node bench/tools/protobuf-fill.ts LIST.json [ROUNDS=15] [GETS=2000] [list|get: only those]
 */
import { existsSync, readFileSync } from 'node:fs';
import type { UpstreamObject } from '../../src/apimachinery/object.ts';
import { everythingFields, everythingLabels } from '../../src/apimachinery/selectors.ts';
import { cacheCodec } from '../../src/cache/codec.ts';
import { WatchCache } from '../../src/cache/watch-cache.ts';
import { BATCH_BYTES, type FilledBody, itemsBody } from '../../src/server/filled-body.ts';
import { answerEncoding, protobufGet, protobufList } from '../../src/server/protobuf-answers.ts';
import { FakeClock } from '../../test/support/fake-clock.ts';
import { resourceInfo } from '../../test/support/resource-info.ts';
import { toolArgs } from '../support/args.ts';

const [file, roundsArg = '15', getsArg = '2000', only] = toolArgs({}).positionals;
if (!file) throw new Error('usage: protobuf-fill.ts LIST.json [ROUNDS] [GETS]');
const ROUNDS = Number(roundsArg);
const GETS = Number(getsArg);
const PODS = resourceInfo('v1', 'pods', 'Pod');
const PB = 'application/vnd.kubernetes.protobuf';

const list = JSON.parse(readFileSync(file, 'utf8')) as {
  metadata: { resourceVersion: string };
  items: Array<Record<string, unknown>>;
};
const objects: UpstreamObject[] = list.items.map((item) => {
  const object = { kind: 'Pod', apiVersion: 'v1', ...item } as UpstreamObject['object'];
  return { raw: Buffer.from(JSON.stringify(object)), object };
});
const cache = new WatchCache({ resource: PODS, clock: new FakeClock() });
cache.replace(objects, list.metadata.resourceVersion);
const page = () => cache.list({ labelSelector: everythingLabels, fieldSelector: everythingFields });

const batches = [Buffer.allocUnsafeSlow(BATCH_BYTES), Buffer.allocUnsafeSlow(BATCH_BYTES)];
/** Fills `body` batch by batch; returns the bytes (and with `keep`, the whole body). */
function drain(body: FilledBody, keep?: Buffer[]): number {
  let total = 0;
  for (let i = 0; ; i++) {
    const b = batches[i & 1]!;
    const n = body.fill(b);
    if (n === 0) return total;
    keep?.push(Buffer.from(b.subarray(0, n)));
    total += n;
  }
}

const kept: Buffer[] = [];
const pbBytes = drain(protobufList(PODS, page()), kept);
const pbFile = `${file}.pb`;
if (existsSync(pbFile)) {
  const want = readFileSync(pbFile);
  if (!Buffer.concat(kept).equals(want)) throw new Error(`protobuf LIST differs from ${pbFile}`);
  console.log(`protobuf LIST equals ${pbFile} (${want.length} bytes)`);
}
const jsonBytes = drain(itemsBody(cacheCodec.encodeList(PODS, page())));

const entry =
  cache.get('bench-001', 'pod-000001') ??
  cache.get(
    String(list.items[0]!.metadata && (list.items[0]!.metadata as { namespace: string }).namespace),
    String((list.items[0]!.metadata as { name: string }).name),
  )!;
const NEWLINE = Buffer.from('\n');
const pbHeaders = { accept: PB };
const jsonHeaders = { accept: 'application/json' };
let sink = 0;
const forms: Record<string, () => void> = {
  'LIST protobuf': () => {
    sink += drain(protobufList(PODS, page()));
  },
  'LIST JSON': () => {
    sink += drain(itemsBody(cacheCodec.encodeList(PODS, page())));
  },
  'GET protobuf': () => {
    for (let i = 0; i < GETS; i++) {
      const enc = answerEncoding(pbHeaders, true, PODS);
      if (typeof enc === 'string' || enc.encoding !== 'protobuf') throw new Error('not protobuf');
      sink += protobufGet(PODS, entry.wire, enc.metadata, entry).length;
    }
  },
  'GET JSON': () => {
    for (let i = 0; i < GETS; i++) {
      const enc = answerEncoding(jsonHeaders, true, PODS);
      if (typeof enc === 'string' || enc.encoding !== 'json') throw new Error('not JSON');
      sink += [...entry.wire, NEWLINE].length;
    }
  },
};
const cpu: Record<string, number[]> = {};
const names = Object.keys(forms).filter((n) => only === undefined || n.toLowerCase().startsWith(only));
for (let r = -2; r < ROUNDS; r++) {
  for (let k = 0; k < names.length; k++) {
    const name = names[(k + Math.max(r, 0)) % names.length]!;
    const c0 = process.cpuUsage();
    forms[name]!();
    const c = process.cpuUsage(c0);
    if (r < 0) continue; // warm-up
    const per = name.startsWith('GET') ? GETS : 1;
    const xs = cpu[name] ?? [];
    xs.push((c.user + c.system) / per);
    cpu[name] = xs;
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const show = (xs: number[], list: boolean) => {
  const f = (x: number) => (list ? (x / 1000).toFixed(1) : x.toFixed(2));
  return `${f(median(xs))} (${f(Math.min(...xs))}–${f(Math.max(...xs))}) ${list ? 'ms' : 'µs'}`;
};
const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
console.log(
  `${objects.length} pods; LIST ${pbBytes} bytes protobuf, ${jsonBytes} JSON; ${ROUNDS} rounds; load ${load}`,
);
for (const name of names) console.log(`${name.padEnd(14)} ${show(cpu[name]!, name.startsWith('LIST'))}`);
for (const what of ['LIST', 'GET']) {
  if (!cpu[`${what} JSON`]) continue;
  const r = cpu[`${what} protobuf`]!.map((x, i) => x / cpu[`${what} JSON`]![i]!);
  console.log(
    `${what} protobuf ÷ JSON per round: ${median(r).toFixed(2)} (${Math.min(...r).toFixed(2)}–${Math.max(...r).toFixed(2)})`,
  );
}
if (sink < 0) console.log(sink);
