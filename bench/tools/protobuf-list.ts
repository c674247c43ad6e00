/**
 * A protobuf LIST of many pods, proxy ÷ direct, side by side on one fixture (issue 32): `PODS`
 * pods (test/support/churn-objects.ts `churnPod`, ~6.4 KB of JSON each) in one namespace, then
 * `ROUNDS` alternating LISTs of them in protobuf and in JSON, through an in-process proxy (the
 * cache) and directly (the apiserver's watch cache, RV=0). Prints per form the median and the
 * min–max wall time of one LIST, and the bytes. The proxy shares the process with this client.
 *
 * usage: node bench/tools/protobuf-list.ts [PODS=2000] [ROUNDS=9]
 */
import { Agent, request } from 'undici';
import { sharedFixture } from '../../test/fixture/index.ts';
import { startProxy } from '../../test/support/proxy.ts';
import { createChurnPods } from '../support/churn-pods.ts';

const PODS = Number(process.argv[2] ?? 2000);
const ROUNDS = Number(process.argv[3] ?? 9);
const PB = 'application/vnd.kubernetes.protobuf';

const f = await sharedFixture();
const agent = new Agent({ connect: { ca: f.caPem } });
const auth = { authorization: `Bearer ${f.tokens.admin}` };
const ns = await f.newNamespace('pblist');
await createChurnPods(f.server, agent, f.tokens.admin, ns, PODS);
const proxy = await startProxy(f, { resources: 'pods', args: ['--protobuf-answers=cache'] });
const path = `/api/v1/namespaces/${ns}/pods?resourceVersion=0`;
const list = async (base: string, accept: string, dispatcher?: Agent) => {
  const t0 = performance.now();
  const r = await request(`${base}${path}`, {
    headers: { ...auth, accept },
    ...(dispatcher ? { dispatcher } : {}),
  });
  const b = Buffer.from(await r.body.arrayBuffer());
  if (r.statusCode !== 200) throw new Error(`${r.statusCode} ${b.toString().slice(0, 200)}`);
  return { ms: performance.now() - t0, bytes: b.length, cache: r.headers['audit-id'] === undefined };
};
const forms = [
  ['proxy protobuf', () => list(proxy.url, PB)],
  ['direct protobuf', () => list(f.server, PB, agent)],
  ['proxy JSON', () => list(proxy.url, 'application/json')],
  ['direct JSON', () => list(f.server, 'application/json', agent)],
] as const;
const times = new Map<string, number[]>();
let bytes = new Map<string, number>();
for (let r = 0; r < ROUNDS + 1; r++) {
  for (const [name, fn] of forms) {
    const a = await fn();
    if (name.startsWith('proxy') && !a.cache) throw new Error(`${name}: not from the cache`);
    if (r === 0) continue; // warm-up
    times.set(name, [...(times.get(name) ?? []), a.ms]);
    bytes = bytes.set(name, a.bytes);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`${PODS} pods, ${ROUNDS} LISTs each (alternating):`);
for (const [name] of forms) {
  const xs = times.get(name)!;
  console.log(
    `${name.padEnd(16)} median ${median(xs).toFixed(0)} ms (min ${Math.min(...xs).toFixed(0)}, max ${Math.max(...xs).toFixed(0)}), ${bytes.get(name)} bytes`,
  );
}
const ratio = (a: string, b: string) => (median(times.get(a)!) / median(times.get(b)!)).toFixed(2);
console.log(
  `protobuf proxy ÷ direct ${ratio('proxy protobuf', 'direct protobuf')}; JSON proxy ÷ direct ${ratio('proxy JSON', 'direct JSON')}`,
);
await proxy.stop();
await agent.close();
process.exit(0);
