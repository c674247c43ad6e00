/**
 * The LIST/GET rows of bench/run.ts: each query of `P.listQueries` (all pods at RV=0 and RV="",
 * one namespace, one node's pods by field selector, one pod by name) under autocannon load, DIRECT
 * to the apiserver (asking gzip, and identity), through the PROXY (gzip), and for the RV=0 list
 * against the CEILING (bench/workers/ceiling-server.ts serving the proxy's own LIST bytes from one
 * Buffer: the physical limit of those bytes over loopback). Per row: req/s, latencies, the
 * response's encoding and bytes, the cores of the server under test and of apiserver+etcd, and the
 * server's RSS. Pinning: bench/support/context.ts.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import type { Fixture } from '../../test/fixture/index.ts';
import { type BenchContext, loadCpu, MiB, PROXY_CPU } from '../support/context.ts';
import { clientHeaders, type LoadResult, runLoad } from '../support/load.ts';
import { cpuMeter, round, rssBytes } from '../support/proc.ts';
import type { ProxyProcess } from '../support/proxy-process.ts';
import { nodeName, nsName, podName } from '../support/seed.ts';

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));

const QUERY_LABEL: Record<string, string> = {
  'all-rv0': 'LIST all pods, RV=0',
  'all-rv': 'LIST all pods, RV=""',
  namespace: 'LIST one namespace',
  node: 'LIST spec.nodeName=X',
  get: 'GET one pod',
};

/** The Kubernetes API path of each LIST/GET query. */
function queryPath(q: string): string {
  switch (q) {
    case 'all-rv0':
      return '/api/v1/pods?resourceVersion=0';
    case 'all-rv':
      return '/api/v1/pods';
    case 'namespace':
      return `/api/v1/namespaces/${nsName(1)}/pods?resourceVersion=0`;
    case 'node':
      return `/api/v1/pods?resourceVersion=0&fieldSelector=spec.nodeName%3D${nodeName(7)}`;
    default:
      return `/api/v1/namespaces/${nsName(3)}/pods/${podName(3)}`;
  }
}

/** One response's wire facts: Content-Encoding and body bytes as received. */
async function probeResponse(url: string, headers: Record<string, string>) {
  const dispatcher = new Agent({ connect: { rejectUnauthorized: false } });
  const res = await request(url, { dispatcher, headers });
  const body = Buffer.from(await res.body.arrayBuffer());
  await dispatcher.close();
  return {
    status: res.statusCode,
    encoding: String(res.headers['content-encoding'] ?? 'identity'),
    bytes: body.length,
    body,
  };
}

interface ListRow extends LoadResult {
  query: string;
  target: string;
  encoding: string;
  responseBytes: number;
  /** Cores used by the server under test (apiserver+etcd for direct, proxy for proxy). */
  serverCores: number;
  /** Cores used by apiserver+etcd during a proxy/ceiling run (should be ~0 when served from cache). */
  apiserverCores: number;
  serverRssMiB: number;
}

export async function listScenario(
  { P, failures, log }: BenchContext,
  f: Fixture,
  proxy: ProxyProcess,
  apiPids: number[],
): Promise<ListRow[]> {
  const rows: ListRow[] = [];
  const token = f.tokens.admin;
  const run = async (query: string, target: string, base: string, gzip: boolean, pids: number[]) => {
    const url = base + queryPath(query);
    const headers = clientHeaders(token, gzip);
    const wire = await probeResponse(url, headers);
    if (wire.status !== 200)
      throw new Error(`${target} ${url}: ${wire.status} ${wire.body.toString().slice(0, 300)}`);
    const server = cpuMeter(pids);
    const api = cpuMeter(apiPids);
    const r = await runLoad(
      { url, connections: P.connections, durationS: P.listS, headers },
      loadCpu(target),
    );
    const row: ListRow = {
      query,
      target,
      encoding: wire.encoding,
      responseBytes: wire.bytes,
      ...r,
      serverCores: server(),
      apiserverCores: api(),
      serverRssMiB: round(pids.reduce((s, p) => s + rssBytes(p), 0) / MiB),
    };
    log(
      `list ${query} ${target}: ${round(r.rps)} req/s p50 ${r.p50Ms} p99 ${r.p99Ms} ms ${wire.encoding} ${wire.bytes} B`,
    );
    rows.push(row);
    return wire;
  };
  const attempt = (q: string, target: string, fn: () => Promise<unknown>) =>
    failures.attempt('LIST/GET', `${QUERY_LABEL[q] ?? q} ${target}`, fn, (P.listS + 180) * 1000);
  for (const q of P.listQueries) {
    await attempt(q, 'direct (gzip)', () => run(q, 'direct (gzip)', f.server, true, apiPids));
    await attempt(q, 'direct (identity)', () => run(q, 'direct (identity)', f.server, false, apiPids));
    await attempt(q, 'proxy', () => run(q, 'proxy', proxy.url, true, [proxy.pid]));
    if (q === 'all-rv0') {
      await attempt(q, 'ceiling', async () => {
        const file = join(mkdtempSync(join(tmpdir(), 'kcp-bench-')), 'list.json');
        try {
          const plain = await probeResponse(proxy.url + queryPath(q), clientHeaders(token, false));
          writeFileSync(file, plain.body);
          const ceiling = await startCeiling(file);
          try {
            await run(q, 'ceiling', ceiling.url, true, [ceiling.child.pid!]);
          } finally {
            ceiling.child.kill('SIGKILL');
          }
        } finally {
          rmSync(dirname(file), { recursive: true, force: true });
        }
      });
    }
  }
  return rows;
}

async function startCeiling(file: string): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(
    'taskset',
    ['-c', PROXY_CPU, process.execPath, here('../workers/ceiling-server.ts'), file],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim()));
    child.once('exit', (c) => reject(new Error(`ceiling server exited ${c}`)));
  });
  return { url, child };
}
