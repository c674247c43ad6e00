/**
 * Consistent reads (RV="") of writes made by ANOTHER client directly against the apiserver.
 * Starts a private fixture and one proxy caching configmaps (`--extra-args` passed to it, e.g.
 * "--consistent-reads=upstream"), then for each kind of read — a LIST with RV="", a GET, and a
 * consistent watch-list (RV="", resourceVersionMatch=NotOlderThan, sendInitialEvents=true: its
 * initial events up to the `k8s.io/initial-events-end` bookmark) — runs `--n` write→read pairs:
 * a second client PATCHes (even i) or creates (odd i) a ConfigMap on the apiserver directly and,
 * right after its answer, the read goes through the proxy. A miss: the written object is absent
 * from the answer or older than the write's RV. Then the same read directly (not timed against
 * any write) for the added latency, and the proxy's `upstream_requests_total` (configmaps)
 * before/after each kind: upstream requests per consistent read. Two watches of the namespace
 * (one through the proxy, one direct) time when each write's event arrives after its answer.
 *   node bench/tools/consistent-read-misses.ts [--n N] [--extra-args "…"] [--churn] [--kinds list,get,watch-list] [--cli PATH]
 * `--churn`: a third client writes a Lease in a loop meanwhile, so etcd's revision moves without
 * configmap events (a real cluster's node heartbeats). `--kinds`: only these reads. `--cli`: the
 * proxy's entry file (default this checkout's src/cli.ts; an older checkout's to compare commits).
 */
import { request } from 'undici';
import { createUpstream } from '../../src/upstream/connection.ts';
import { startFixture } from '../../test/fixture/index.ts';
import { toolArgs, words } from '../support/args.ts';
import { pin, round } from '../support/proc.ts';
import { startProxy } from '../support/proxy-process.ts';

const args = toolArgs({
  numbers: { n: 200 },
  strings: { kinds: 'list,get,watch-list', cli: undefined },
  lists: ['extra-args'],
  flags: ['churn'],
});
const extraArgs = words(args['extra-args']);
const { n, churn, cli } = args;
const kinds = args.kinds!.split(',') as Kind[];
const log = (m: string) => process.stderr.write(`${m}\n`);
const NS = 'kcp-consistent';

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]! : Number.NaN;
}

type Kind = 'list' | 'get' | 'watch-list';
interface Seen {
  found: boolean;
  rv?: bigint;
}

pin(process.pid, '1');
const f = await startFixture({ verbose: false });
for (const p of Object.values(f.pids())) pin(p, '0');
const up = await createUpstream({ kubeconfig: f.kubeconfigs.adminToken });
const auth = (await up.authorization()) ?? '';
const direct = async (method: string, path: string, body?: unknown, contentType = 'application/json') => {
  const r = await request(`${up.baseUrl}${path}`, {
    method: method as 'GET',
    dispatcher: up.dispatcher,
    headers: { authorization: auth, 'content-type': contentType },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await r.body.text();
  if (r.statusCode >= 300) throw new Error(`${method} ${path}: ${r.statusCode} ${text.slice(0, 200)}`);
  return JSON.parse(text);
};
let stopChurn = false;
let churnDone: Promise<void> = Promise.resolve();
try {
  await direct('POST', '/api/v1/namespaces', { metadata: { name: NS } });
  await direct('POST', `/api/v1/namespaces/${NS}/configmaps`, {
    metadata: { name: 'patched' },
    data: { n: '0' },
  });
  if (churn) {
    await direct('POST', `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases`, {
      metadata: { name: 'churn' },
    });
    churnDone = (async () => {
      for (let i = 0; !stopChurn; i++) {
        await direct(
          'PATCH',
          `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases/churn`,
          { metadata: { annotations: { n: String(i) } } },
          'application/merge-patch+json',
        );
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
  }
  const p = await startProxy({
    kubeconfig: f.kubeconfigs.adminToken,
    resources: ['configmaps'],
    cpu: '1',
    extraArgs,
    ...(cli ? { cli } : {}),
  });
  const upstreamRequests = async () => {
    const r = await request(`${p.opsUrl}/metrics`);
    let sum = 0;
    for (const line of (await r.body.text()).split('\n'))
      if (
        line.startsWith('kube_cache_proxy_upstream_requests_total{') &&
        line.includes('resource="configmaps"')
      )
        sum += Number(line.slice(line.lastIndexOf(' ') + 1));
    return sum;
  };
  const reasons = async () => {
    const r = await request(`${p.opsUrl}/metrics`);
    return (await r.body.text())
      .split('\n')
      .filter((l) => l.startsWith('kube_cache_proxy_requests_total{') && l.includes('resource="configmaps"'));
  };
  const read = async (base: string, kind: Kind, name: string): Promise<{ seen: Seen; ms: number }> => {
    const coll = `/api/v1/namespaces/${NS}/configmaps`;
    const headers = { authorization: `Bearer ${f.tokens.admin}` };
    const opts =
      base === p.url ? { headers } : { headers: { authorization: auth }, dispatcher: up.dispatcher };
    const t0 = performance.now();
    if (kind === 'get') {
      const r = await request(`${base}${coll}/${name}`, opts);
      const text = await r.body.text();
      const ms = performance.now() - t0;
      if (r.statusCode === 404) return { seen: { found: false }, ms };
      return { seen: { found: true, rv: BigInt(JSON.parse(text).metadata.resourceVersion) }, ms };
    }
    if (kind === 'list') {
      const r = await request(`${base}${coll}`, opts);
      const body = JSON.parse(await r.body.text());
      const ms = performance.now() - t0;
      const it = body.items.find((o: { metadata: { name: string } }) => o.metadata.name === name);
      return { seen: it ? { found: true, rv: BigInt(it.metadata.resourceVersion) } : { found: false }, ms };
    }
    const r = await request(
      `${base}${coll}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=30`,
      opts,
    );
    let buf = '';
    let seen: Seen = { found: false };
    for await (const chunk of r.body) {
      buf += chunk.toString();
      let nl = buf.indexOf('\n');
      let done = false;
      while (nl >= 0) {
        const e = JSON.parse(buf.slice(0, nl));
        buf = buf.slice(nl + 1);
        nl = buf.indexOf('\n');
        if (
          e.type === 'BOOKMARK' &&
          e.object.metadata.annotations?.['k8s.io/initial-events-end'] === 'true'
        ) {
          done = true;
          break;
        }
        if (e.object.metadata.name === name)
          seen = { found: true, rv: BigInt(e.object.metadata.resourceVersion) };
      }
      if (done) break;
    }
    const ms = performance.now() - t0;
    r.body.destroy();
    return { seen, ms };
  };
  /**
   * When each RV's event reached a watch of the namespace's configmaps (performance.now()),
   * through the proxy and directly: how long after the write's answer its event arrives.
   */
  const arrivals = (base: string) => {
    const at = new Map<bigint, number>();
    const ac = new AbortController();
    const opts =
      base === p.url
        ? { headers: { authorization: `Bearer ${f.tokens.admin}` } }
        : { headers: { authorization: auth }, dispatcher: up.dispatcher };
    (async () => {
      const r = await request(`${base}/api/v1/namespaces/${NS}/configmaps?watch=1&resourceVersion=0`, {
        ...opts,
        signal: ac.signal,
      });
      let buf = '';
      for await (const chunk of r.body) {
        const now = performance.now();
        buf += chunk.toString();
        for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
          at.set(BigInt(JSON.parse(buf.slice(0, nl)).object.metadata.resourceVersion), now);
          buf = buf.slice(nl + 1);
        }
      }
    })().catch(() => {});
    return { at, stop: () => ac.abort() };
  };
  const eventsViaProxy = arrivals(p.url);
  const eventsDirect = arrivals(up.baseUrl);
  const out: string[] = [];
  try {
    for (const kind of kinds) {
      // Warm both paths.
      for (let i = 0; i < 5; i++) {
        await read(p.url, kind, 'patched');
        await read(up.baseUrl, kind, 'patched');
      }
      const u0 = await upstreamRequests();
      let misses = 0;
      const viaProxy: number[] = [];
      const viaDirect: number[] = [];
      /** Per write: its RV and when its answer was read. */
      const written: { rv: bigint; at: number }[] = [];
      for (let i = 0; i < n; i++) {
        let name: string;
        let wrote: { metadata: { resourceVersion: string } };
        if (i % 2 === 0) {
          name = 'patched';
          wrote = await direct(
            'PATCH',
            `/api/v1/namespaces/${NS}/configmaps/${name}`,
            { data: { n: `${kind}-${i}` } },
            'application/merge-patch+json',
          );
        } else {
          name = `${kind}-${i}`;
          wrote = await direct('POST', `/api/v1/namespaces/${NS}/configmaps`, { metadata: { name } });
        }
        const rv = BigInt(wrote.metadata.resourceVersion);
        written.push({ rv, at: performance.now() });
        const r = await read(p.url, kind, name);
        viaProxy.push(r.ms);
        if (!r.seen.found || r.seen.rv! < rv) misses++;
      }
      const u1 = await upstreamRequests();
      const delays = (at: Map<bigint, number>) =>
        written.flatMap((w) => (at.has(w.rv) ? [at.get(w.rv)! - w.at] : []));
      const [evProxy, evDirect] = [delays(eventsViaProxy.at), delays(eventsDirect.at)];
      for (let i = 0; i < n; i++) viaDirect.push((await read(up.baseUrl, kind, 'patched')).ms);
      const line =
        `${kind.padEnd(10)} misses ${misses}/${n}; proxy p50 ${round(pct(viaProxy, 50), 2)} p90 ${round(pct(viaProxy, 90), 2)} ` +
        `p99 ${round(pct(viaProxy, 99), 2)} ms; direct p50 ${round(pct(viaDirect, 50), 2)} p90 ${round(pct(viaDirect, 90), 2)} ` +
        `p99 ${round(pct(viaDirect, 99), 2)} ms; added p50 ${round(pct(viaProxy, 50) - pct(viaDirect, 50), 2)} ` +
        `p99 ${round(pct(viaProxy, 99) - pct(viaDirect, 99), 2)} ms; upstream requests/read ${round((u1 - u0) / n, 2)}; ` +
        `event after the write's answer: via proxy p50 ${round(pct(evProxy, 50), 2)} p90 ${round(pct(evProxy, 90), 2)} ms, ` +
        `direct p50 ${round(pct(evDirect, 50), 2)} p90 ${round(pct(evDirect, 90), 2)} ms`;
      log(line);
      out.push(line);
    }
    for (const l of await reasons()) log(l);
  } finally {
    eventsViaProxy.stop();
    eventsDirect.stop();
    await p.stop();
  }
  process.stdout.write(
    `${cli ? `cli: ${cli}, ` : ''}extra args: ${extraArgs.join(' ') || '(none)'}${churn ? ', lease churn' : ''}\n${out.join('\n')}\n`,
  );
} finally {
  stopChurn = true;
  await churnDone.catch(() => {});
  await up.close();
  await f.stop();
}
