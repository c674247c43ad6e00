/**
 * The restart row (issue 33): one proxy with `--objects` configmaps synced (scaled down from the
 * issue's 10k pods / 1k Services / 1k EndpointSlices to fit the shared 2-core bench machine) and
 * `--watchers` raw watchers on it, writes continuing (`--rate`/s); the proxy gets SIGTERM and a
 * new one starts after each `--downs` seconds, COLD (no snapshot) and WARM (`--snapshot-dir`).
 * Per restart: the bytes the apiserver sent the proxy (a counting relay, wire bytes), the LISTs the
 * apiserver served (its own `apiserver_request_total`, which also counts the warm resume check's
 * LIST of one item), and the watchers' relists (a 410, then a LIST, as client-go's reflector). Each
 * watcher resumes from the last RV it got whenever its stream ends (the proxy going away), as
 * client-go does. Counted from the SIGTERM until the new proxy is live and every watcher has the
 * last write. Starts a private fixture; the proxy runs src/cli.ts pinned to CPU 1, the fixture to 0.
 *   node bench/tools/restart.ts [--objects 3000] [--kib 1] [--watchers 20] [--rate 10] [--downs 5,30]
 * Prints one JSON line per restart, then a Markdown table.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { startFixture, writeKubeconfig } from '../../test/fixture/index.ts';
import { apiserverRequests } from '../../test/support/apiserver-metrics.ts';
import { metricSum } from '../../test/support/prometheus-text.ts';
import { startByteRelay } from '../support/byte-relay.ts';
import { pin } from '../support/proc.ts';
import { type ProxyProcess, startProxy } from '../support/proxy-process.ts';

const argv = process.argv.slice(2);
const opt = (name: string, d: string) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1]! : d;
};
const OBJECTS = Number(opt('objects', '3000'));
const KIB = Number(opt('kib', '1'));
const WATCHERS = Number(opt('watchers', '20'));
const RATE = Number(opt('rate', '10'));
const DOWNS = opt('downs', '5,30').split(',').map(Number);
const NS = 'kcp-restart';
const log = (m: string) => process.stderr.write(`${m}\n`);

pin(process.pid, '1');
const f = await startFixture({ verbose: false });
for (const p of Object.values(f.pids())) pin(p, '0');
const agent = new Agent({ connect: { ca: f.caPem }, connections: 32 });
const auth = { authorization: `Bearer ${f.tokens.admin}` };
const api = `${f.server}/api/v1/namespaces/${NS}/configmaps`;
const work = await mkdtemp(join(tmpdir(), 'kcp-restart-'));
const relay = await startByteRelay('127.0.0.1', Number(new URL(f.server).port));
const kubeconfig = await writeKubeconfig(join(work, 'relay.kubeconfig'), {
  server: `https://127.0.0.1:${relay.port}`,
  caFile: f.caFile,
  user: { token: f.tokens.admin },
});

const apiserverLists = () =>
  apiserverRequests(
    { server: f.server, dispatcher: agent, token: f.tokens.admin },
    { verb: 'LIST', resource: 'configmaps' },
  );

async function send(method: string, url: string, body?: unknown): Promise<string> {
  const r = await request(url, {
    dispatcher: agent,
    method: method as 'GET',
    headers: { ...auth, 'content-type': 'application/json' },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const j = (await r.body.json()) as { metadata?: { resourceVersion?: string } };
  if (r.statusCode >= 300) throw new Error(`${method} ${url}: ${r.statusCode}`);
  return j.metadata?.resourceVersion ?? '';
}

await send('POST', `${f.server}/api/v1/namespaces`, { metadata: { name: NS } });
const pad = 'x'.repeat(KIB * 1024);
for (let i = 0; i < OBJECTS; i += 32)
  await Promise.all(
    Array.from({ length: Math.min(32, OBJECTS - i) }, (_, j) =>
      send('POST', api, { metadata: { name: `cm-${i + j}` }, data: { pad, v: '0' } }),
    ),
  );
log(`created ${OBJECTS} configmaps of ${KIB} KiB`);

/** A raw watcher as client-go's reflector (see the module comment). */
class Watcher {
  rv = '';
  relists = 0;
  #stop = false;
  readonly done: Promise<void>;
  readonly url: () => string;
  constructor(url: () => string) {
    this.url = url;
    this.done = this.#run();
  }
  async #list(): Promise<void> {
    const r = await request(`${this.url()}/api/v1/namespaces/${NS}/configmaps?resourceVersion=0`, {
      headers: auth,
    });
    const l = (await r.body.json()) as { metadata: { resourceVersion: string } };
    this.rv = l.metadata.resourceVersion;
  }
  async #run(): Promise<void> {
    while (!this.#stop && this.rv === '')
      await this.#list().catch(() => new Promise((r) => setTimeout(r, 100)));
    while (!this.#stop) {
      try {
        const r = await request(
          `${this.url()}/api/v1/namespaces/${NS}/configmaps?watch=1&allowWatchBookmarks=true&timeoutSeconds=300&resourceVersion=${this.rv}`,
          { headers: auth },
        );
        let buf = '';
        for await (const c of r.body) {
          buf += c.toString();
          for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
            const e = JSON.parse(buf.slice(0, i)) as {
              type: string;
              object: { code?: number; metadata: { resourceVersion: string } };
            };
            buf = buf.slice(i + 1);
            if (e.type === 'ERROR') {
              if (e.object.code === 410) {
                this.relists++;
                await this.#list();
              }
              break;
            }
            this.rv = e.object.metadata.resourceVersion;
          }
        }
      } catch {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }
  stop(): void {
    this.#stop = true;
  }
}

let lastRV = 0n;
let writing = true;
const writer = (async () => {
  let n = 0;
  while (writing) {
    const t = Date.now();
    const rv = await send('PUT', `${api}/cm-${n % OBJECTS}`, {
      metadata: { name: `cm-${n % OBJECTS}` },
      data: { pad, v: String(n) },
    }).catch(() => '');
    if (rv) lastRV = BigInt(rv);
    n++;
    await new Promise((r) => setTimeout(r, Math.max(0, 1000 / RATE - (Date.now() - t))));
  }
})();

async function live(p: ProxyProcess): Promise<void> {
  for (;;) {
    const r = await request(`${p.opsUrl}/metrics`).catch(() => undefined);
    if (
      r &&
      metricSum(await r.body.text(), 'kube_cache_proxy_reflector_upstream_live', {
        resource: 'configmaps',
      }) === 1
    )
      return;
    await new Promise((res) => setTimeout(res, 100));
  }
}

const rows: Record<string, unknown>[] = [];
for (const mode of ['cold', 'warm'] as const) {
  for (const down of DOWNS) {
    const dir = await mkdtemp(join(work, `${mode}-`));
    const extraArgs = mode === 'warm' ? [`--snapshot-dir=${join(dir, 's')}`, '--snapshot-interval=5s'] : [];
    const start = () =>
      startProxy({ kubeconfig, resources: ['configmaps'], cpu: '1', extraArgs, readyTimeoutMs: 120_000 });
    let proxy = await start();
    await live(proxy);
    const watchers = Array.from({ length: WATCHERS }, () => new Watcher(() => proxy.url));
    const caughtUp = async () => {
      const target = lastRV;
      while (watchers.some((w) => w.rv === '' || BigInt(w.rv) < target))
        await new Promise((r) => setTimeout(r, 50));
    };
    await caughtUp();
    const relistsBefore = watchers.reduce((n, w) => n + w.relists, 0);
    const bytes0 = relay.bytes().down;
    const lists0 = await apiserverLists();
    const t0 = Date.now();
    await proxy.stop();
    await new Promise((r) => setTimeout(r, down * 1000));
    proxy = await start();
    await live(proxy);
    await caughtUp();
    const row = {
      mode,
      downS: down,
      objects: OBJECTS,
      watchers: WATCHERS,
      upstreamBytes: relay.bytes().down - bytes0,
      apiserverLists: (await apiserverLists()) - lists0,
      watcherRelists: watchers.reduce((n, w) => n + w.relists, 0) - relistsBefore,
      restartToCaughtUpMs: Date.now() - t0 - down * 1000,
    };
    console.log(JSON.stringify(row));
    rows.push(row);
    for (const w of watchers) w.stop();
    await proxy.stop();
    await Promise.all(watchers.map((w) => w.done.catch(() => {})));
  }
}
writing = false;
await writer;
console.log(
  '\n| restart | down | upstream bytes | apiserver LISTs | watcher relists | restart → caught up |',
);
console.log('|---|---:|---:|---:|---:|---:|');
for (const r of rows)
  console.log(
    `| ${r.mode} | ${r.downS} s | ${r.upstreamBytes} | ${r.apiserverLists} | ${r.watcherRelists} / ${r.watchers} | ${r.restartToCaughtUpMs} ms |`,
  );
await relay.close();
await agent.close();
await f.stop();
process.exit(0);
