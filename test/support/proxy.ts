/**
 * The whole proxy as `npm start` runs it (config → `createParts` → `runProxy` of src/main.ts) in
 * front of a fixture apiserver, for e2e tests: a kubeconfig for it (admin bearer token, plain
 * HTTP on loopback) and a wait until every configured resource is synced.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { type Config, loadConfig } from '../../src/config.ts';
import { createParts, type ProxyParts, type RunningProxy, runProxy } from '../../src/main.ts';
import { silentLogger } from '../../src/util/logger.ts';
import { type Fixture, writeKubeconfig } from '../fixture/index.ts';

/** A running real proxy. */
export interface RealProxy {
  proxy: RunningProxy;
  parts: ProxyParts;
  /** `http://127.0.0.1:PORT` */
  url: string;
  /** kubeconfig whose server is the proxy, user the fixture's admin bearer token. */
  kubeconfig: string;
  /** Bearer header for raw requests. */
  auth: { authorization: string };
  stop(): Promise<void>;
}

let seq = 0;

/**
 * Starts the proxy for `resources` (e.g. `configmaps,pods`) on `listen` (default an ephemeral
 * loopback port), as the proxy identity in `kubeconfig` (default: the fixture's admin bearer
 * token), and waits ≤ `syncTimeoutMs` (default 30 000) until all of them are synced.
 */
export async function startRealProxy(
  f: Fixture,
  opts: {
    resources: string;
    listen?: string;
    extraArgs?: string[];
    syncTimeoutMs?: number;
    kubeconfig?: string;
  },
): Promise<RealProxy> {
  const r = loadConfig({
    argv: [
      '--kubeconfig',
      opts.kubeconfig ?? f.kubeconfigs.adminToken,
      '--resources',
      opts.resources,
      '--listen',
      opts.listen ?? '127.0.0.1:0',
      '--ops-listen',
      '127.0.0.1:0',
      ...(opts.extraArgs ?? []),
    ],
    env: {},
  });
  assert.equal(r.kind, 'config');
  const config = (r as { config: Config }).config;
  const parts = await createParts(config, silentLogger);
  const proxy = await runProxy(config, parts, silentLogger);
  const deadline = Date.now() + (opts.syncTimeoutMs ?? 30_000);
  for (;;) {
    const st = parts.statusSource.resources();
    if (st.length === config.resources.length && st.every((s) => s.synced)) break;
    if (Date.now() > deadline) {
      await proxy.stop();
      throw new Error(`proxy not synced: ${JSON.stringify(st.map((s) => [s.gvr, s.synced, s.lastError]))}`);
    }
    await new Promise((res) => setTimeout(res, 50));
  }
  const kubeconfig = await writeKubeconfig(join(f.dir, `real-proxy-${process.pid}-${++seq}.kubeconfig`), {
    server: proxy.address,
    user: { token: f.tokens.admin },
  });
  return {
    proxy,
    parts,
    url: proxy.address,
    kubeconfig,
    auth: { authorization: `Bearer ${f.tokens.admin}` },
    stop: () => proxy.stop(),
  };
}
