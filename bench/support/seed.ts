/**
 * The benchmark's pod dataset: `namespaces` namespaces `bench-000…`, each with the `default`
 * ServiceAccount (no controller-manager runs in the fixture, docs/testing.md), and `pods` pods of
 * about `podBytes` bytes of JSON spread round-robin over the namespaces and over `nodes` node
 * names (`node-00…`, set directly in spec.nodeName). Parallel POSTs through undici.
 */
import { request } from 'undici';
import type { Upstream } from '../../src/upstream/connection.ts';

/** Shape of the pod dataset. */
export interface PodDataset {
  pods: number;
  namespaces: number;
  nodes: number;
  podBytes: number;
}

/** Namespace name of index `i`. */
export const nsName = (i: number): string => `bench-${String(i).padStart(3, '0')}`;
/** Node name of index `i`. */
export const nodeName = (i: number): string => `node-${String(i).padStart(2, '0')}`;
/** Pod `i` lives in namespace `i % namespaces`. */
export const podName = (i: number): string => `pod-${String(i).padStart(6, '0')}`;

const WORDS =
  'app api auth batch cache cert cluster config container controller cron daemon data debug deploy disk dns edge env etcd event gateway grpc health host http image ingress init job kube label lease log main mesh metrics mount node operator pod policy port probe proxy queue quota redis region replica role route runtime scale secret service shard sidecar storage sync tenant token volume watch web worker zone'.split(
    ' ',
  );

/**
 * `len` characters of words and numbers from a per-pod PRNG (mulberry32 seeded by `i`): text
 * that gzips about as well as real object metadata (a run of one letter would gzip ~100×, which
 * flatters the apiserver's gzip path).
 */
export function fillerText(i: number, len: number): string {
  let s = (i + 1) * 0x9e3779b9;
  const rnd = () => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  let out = '';
  while (out.length < len) out += `${WORDS[Math.floor(rnd() * WORDS.length)]}-${Math.floor(rnd() * 1000)} `;
  return out.slice(0, len);
}

/** The JSON body of pod `i` (~`bytes` long once the apiserver adds defaults). */
export function podBody(i: number, d: PodDataset): string {
  // The apiserver adds defaults and managedFields (~2 KB for this pod): an annotation fills the
  // rest (none when `podBytes` ≤ 2100: plain pods).
  const filler = fillerText(i, Math.max(0, d.podBytes - 2100));
  const env = Array.from({ length: 4 }, (_, k) => ({ name: `BENCH_VAR_${k}`, value: `value-${i}-${k}` }));
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: podName(i),
      labels: { app: `app-${i % 20}`, tier: i % 2 ? 'web' : 'worker', seeded: 'true' },
      ...(filler ? { annotations: { 'bench.kcp/filler': filler } } : {}),
    },
    spec: {
      nodeName: nodeName(i % d.nodes),
      automountServiceAccountToken: false,
      containers: [
        {
          name: 'main',
          image: 'registry.example/bench/app:1.0',
          ports: [{ containerPort: 8080, name: 'http' }],
          resources: { requests: { cpu: '10m', memory: '16Mi' } },
          env,
        },
      ],
    },
  });
}

async function post(up: Upstream, path: string, body: string, okCodes = [201]): Promise<void> {
  const auth = await up.authorization();
  const res = await request(`${up.baseUrl}${path}`, {
    method: 'POST',
    dispatcher: up.dispatcher,
    headers: { 'content-type': 'application/json', ...(auth ? { authorization: auth } : {}) },
    body,
  });
  const text = await res.body.text();
  if (!okCodes.includes(res.statusCode))
    throw new Error(`POST ${path}: ${res.statusCode} ${text.slice(0, 300)}`);
}

/** Runs `fn(i)` for i in [0, n) with `concurrency` in flight. */
export async function parallel(
  n: number,
  concurrency: number,
  fn: (i: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < n; i = next++) await fn(i);
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/** Creates the namespaces, their ServiceAccounts and the pods. Throws on the first failure. */
export async function seedPods(up: Upstream, d: PodDataset, concurrency = 32): Promise<void> {
  await parallel(d.namespaces, 16, async (i) => {
    await post(up, '/api/v1/namespaces', JSON.stringify({ metadata: { name: nsName(i) } }), [201, 409]);
    await post(
      up,
      `/api/v1/namespaces/${nsName(i)}/serviceaccounts`,
      JSON.stringify({ metadata: { name: 'default' } }),
      [201, 409],
    );
  });
  await parallel(d.pods, concurrency, (i) =>
    post(up, `/api/v1/namespaces/${nsName(i % d.namespaces)}/pods`, podBody(i, d)),
  );
}
