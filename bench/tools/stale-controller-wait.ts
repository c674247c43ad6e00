/**
 * What a stale-controller-aware client (KEP-5647: kube-controller-manager's
 * `pkg/controller/util/consistency` store, which compares a write's RV with the informer store's
 * `LastStoreSyncResourceVersion`) waits after a write its informer never sees, directly vs
 * through the proxy. Starts a private fixture and one proxy caching configmaps (`--extra-args`
 * passed to it), then `--informers K` informers directly and K through the proxy, each a
 * watch-list of configmaps labelled `app=watched` (RV="", NotOlderThan, sendInitialEvents,
 * allowWatchBookmarks, a client-go-like timeout of 300–600 s, resumed from its last RV when it
 * ends). An informer's last-synced RV moves as client-go's reflector moves it
 * (`tools/cache/reflector.go` `handleAnyWatch`): with every event after the initial ADDED ones and
 * with every BOOKMARK (the store's `Bookmark`). Then `--n` times: a second client PATCHes an
 * UNLABELLED ConfigMap directly on the apiserver (outside every informer's selector) and the tool
 * waits until every informer's last-synced RV is ≥ the write's RV; each informer's wait is one
 * sample. Prints p50/p90/p99/max per path. Informers start at random moments within a minute and
 * each write comes a random 0–60 s after the previous one was seen, so writes fall at random
 * points of the watchers' bookmark periods (a write right after the last bookmark would always
 * wait a whole period).
 *   node bench/tools/stale-controller-wait.ts [--n N] [--informers K] [--extra-args "…"]
 */
import { request } from 'undici';
import { createUpstream } from '../../src/upstream/connection.ts';
import { startFixture } from '../../test/fixture/index.ts';
import { toolArgs, words } from '../support/args.ts';
import { pin, round } from '../support/proc.ts';
import { startProxy } from '../support/proxy-process.ts';

const args = toolArgs({ numbers: { n: 10, informers: 4 }, lists: ['extra-args'] });
const extraArgs = words(args['extra-args']);
const { n, informers: k } = args;
/** Give up on one write after this long, ms (the apiserver's bookmark period is about a minute). */
const WAIT_LIMIT_MS = 130_000;
/** The apiserver's bookmark period (`cacher.go` `defaultBookmarkFrequency`), ms. */
const PERIOD_MS = 60_000;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const log = (m: string) => process.stderr.write(`${new Date().toISOString()} ${m}\n`);
const NS = 'kcp-stale';

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]! : Number.NaN;
}

/** One informer's view: its last-synced RV, bookmarks received, and a stop switch. */
interface Informer {
  path: 'direct' | 'proxy';
  lastRv: bigint;
  bookmarks: number;
  synced: Promise<void>;
  stop(): void;
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

/** Starts an informer against `base` (the apiserver or the proxy). */
function informer(path: 'direct' | 'proxy', base: string): Informer {
  const ac = new AbortController();
  let markSynced!: () => void;
  const inf: Informer = {
    path,
    lastRv: 0n,
    bookmarks: 0,
    synced: new Promise((r) => {
      markSynced = r;
    }),
    stop: () => ac.abort(),
  };
  const coll = `/api/v1/namespaces/${NS}/configmaps`;
  const opts =
    path === 'proxy'
      ? { headers: { authorization: `Bearer ${f.tokens.admin}` } }
      : { headers: { authorization: auth }, dispatcher: up.dispatcher };
  (async () => {
    let initial = true;
    while (!ac.signal.aborted) {
      const timeout = 300 + Math.floor(Math.random() * 300);
      const q = initial
        ? 'sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion='
        : `resourceVersion=${inf.lastRv}`;
      try {
        const r = await request(
          `${base}${coll}?watch=1&labelSelector=app%3Dwatched&allowWatchBookmarks=true&timeoutSeconds=${timeout}&${q}`,
          { ...opts, signal: ac.signal },
        );
        if (r.statusCode !== 200) throw new Error(`${path} watch ${r.statusCode}`);
        let buf = '';
        let pastInitial = !initial;
        for await (const chunk of r.body) {
          buf += chunk.toString();
          for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
            const e = JSON.parse(buf.slice(0, nl));
            buf = buf.slice(nl + 1);
            const rv = BigInt(e.object.metadata.resourceVersion);
            if (e.type === 'BOOKMARK') {
              inf.bookmarks++;
              pastInitial = true;
              if (e.object.metadata.annotations?.['k8s.io/initial-events-end'] === 'true') {
                initial = false;
                markSynced();
              }
            } else if (e.type !== 'ADDED') pastInitial = true;
            if (pastInitial && rv > inf.lastRv) inf.lastRv = rv;
          }
        }
      } catch (e) {
        if (!ac.signal.aborted) log(`${path} informer: ${(e as Error).message}`);
      }
    }
  })();
  return inf;
}

try {
  await direct('POST', '/api/v1/namespaces', { metadata: { name: NS } });
  await direct('POST', `/api/v1/namespaces/${NS}/configmaps`, {
    metadata: { name: 'watched', labels: { app: 'watched' } },
  });
  await direct('POST', `/api/v1/namespaces/${NS}/configmaps`, { metadata: { name: 'unseen' } });
  const p = await startProxy({
    kubeconfig: f.kubeconfigs.adminToken,
    resources: ['configmaps'],
    cpu: '1',
    extraArgs,
  });
  const informers: Informer[] = [];
  try {
    const starts: Promise<void>[] = [];
    for (let i = 0; i < 2 * k; i++) {
      const path = i % 2 === 0 ? 'direct' : 'proxy';
      starts.push(
        sleep(Math.random() * PERIOD_MS).then(() => {
          const inf = informer(path, path === 'direct' ? up.baseUrl : p.url);
          informers.push(inf);
          return inf.synced;
        }),
      );
    }
    await Promise.all(starts);
    const waits: Record<'direct' | 'proxy', number[]> = { direct: [], proxy: [] };
    let unseen = 0;
    for (let i = 0; i < n; i++) {
      await sleep(Math.random() * PERIOD_MS);
      const wrote = await direct(
        'PATCH',
        `/api/v1/namespaces/${NS}/configmaps/unseen`,
        { data: { n: String(i) } },
        'application/merge-patch+json',
      );
      const rv = BigInt(wrote.metadata.resourceVersion);
      const t0 = performance.now();
      const pending = new Set(informers);
      while (pending.size > 0 && performance.now() - t0 < WAIT_LIMIT_MS) {
        for (const inf of pending)
          if (inf.lastRv >= rv) {
            waits[inf.path].push(performance.now() - t0);
            pending.delete(inf);
          }
        await sleep(5);
      }
      unseen += pending.size;
      log(
        `write ${i + 1}/${n} rv ${rv}: direct ${waits.direct
          .slice(-k)
          .map((x) => round(x / 1000, 1))
          .join(' ')} s; proxy ${waits.proxy
          .slice(-k)
          .map((x) => round(x / 1000, 1))
          .join(' ')} s${pending.size ? `; ${pending.size} not within ${WAIT_LIMIT_MS / 1000} s` : ''}`,
      );
    }
    const line = (path: 'direct' | 'proxy') => {
      const w = waits[path];
      return (
        `${path.padEnd(6)} ${w.length} waits: p50 ${round(pct(w, 50), 0)} p90 ${round(pct(w, 90), 0)} ` +
        `p99 ${round(pct(w, 99), 0)} max ${round(Math.max(...w), 0)} ms; bookmarks ` +
        informers
          .filter((x) => x.path === path)
          .map((x) => x.bookmarks)
          .join(',')
      );
    };
    process.stdout.write(
      `extra args: ${extraArgs.join(' ') || '(none)'}; ${n} writes outside the selector, ${k} informers per path\n` +
        `${line('direct')}\n${line('proxy')}\n${unseen ? `${unseen} waits over ${WAIT_LIMIT_MS / 1000} s (not counted)\n` : ''}`,
    );
  } finally {
    for (const i of informers) i.stop();
    await p.stop();
  }
} finally {
  await up.close();
  await f.stop();
}
