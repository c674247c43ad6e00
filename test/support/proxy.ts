/**
 * The one way tests start a kube-cache-proxy: {@link startProxy} in front of a fixture apiserver,
 * run one of three ways (`run`):
 *
 * - `'in-process'` (default): the whole proxy as `npm start` runs it (config → `createParts` →
 *   `runProxy` of src/main.ts) in this process, so a test can read its parts (status source,
 *   caches); resolves once every configured resource is synced.
 * - `'cli'`: `src/cli.ts` as a child process, its stdout (pino JSON lines) and stderr captured;
 *   resolves once it listens (poll its ops listener's `/readyz` for readiness), `stop()` resolves
 *   to the exit code.
 * - `'passthrough'`: only the API server of src/server/app.ts (no reflector, no ops listener) with
 *   `pods` registered as cached but backed by a real watch cache that is never filled, so it never
 *   syncs: every request that passes the proxy's own validation (with the real selector parsers
 *   and Status errors) goes upstream. For validation parity and pass-through fidelity.
 *
 * Every mode writes a kubeconfig whose server is the proxy (plain HTTP on loopback, or HTTPS
 * trusting the fixture CA with `tls`) and whose user is the fixture's admin bearer token. The building blocks {@link runProxyInProcess} and
 * {@link spawnProxyCli} are for proxies without a fixture (a scripted upstream) and for starts that
 * must fail.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent } from 'undici';
import { cacheCodec } from '../../src/cache/codec.ts';
import { WatchCache } from '../../src/cache/watch-cache.ts';
import { type Config, loadConfig } from '../../src/config/config.ts';
import { createParts, type ProxyParts, type RunningProxy, runProxy } from '../../src/main.ts';
import { buildServer } from '../../src/server/app.ts';
import { silentLogger } from '../../src/util/logger.ts';
import { type Fixture, writeKubeconfig } from '../fixture/index.ts';
import { peopleFlags, servingTlsFlags } from '../fixture/proxy-flags.ts';
import { resourceInfo } from './resource-info.ts';

const cliPath = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));

/** What every mode answers. */
export interface TestProxy {
  /** `http://127.0.0.1:PORT` (`https://` with `tls`) of the Kubernetes API listener. */
  url: string;
  /** kubeconfig whose server is the proxy, user the fixture's admin bearer token. */
  kubeconfig: string;
  /** The fixture admin's bearer header, for raw requests. */
  auth: { authorization: string };
  /** Stops the proxy; idempotent. */
  stop(): Promise<unknown>;
}

/** `run: 'in-process'`. */
export interface InProcessProxy extends TestProxy {
  proxy: RunningProxy;
  parts: ProxyParts;
  /** `http://127.0.0.1:PORT` of the ops listener. */
  ops: string;
  stop(): Promise<void>;
}

/** `run: 'cli'`. */
export interface CliProxy extends TestProxy, CliProcess {
  /** `http://127.0.0.1:PORT` of the ops listener. */
  ops: string;
  /** SIGTERM (unless it already exited), then its exit code; idempotent. */
  stop(): Promise<number | null>;
}

/** `run: 'passthrough'`. */
export interface PassthroughProxy extends TestProxy {
  stop(): Promise<void>;
}

/** Flags of the started proxy (`in-process` and `cli`). */
export interface ProxyFlags {
  /** `--resources`, e.g. `configmaps,pods`. */
  resources: string;
  /** `--kubeconfig`, the proxy's own identity; default the fixture's admin bearer token. */
  kubeconfig?: string;
  /** `--listen`; default an ephemeral loopback port. The ops listener always gets one. */
  listen?: string;
  /**
   * Serve the API listener over TLS with the fixture's proxy serving certificate and verify client
   * certificates against the apiserver's client CA (`--tls-cert-file`, `--tls-private-key-file`,
   * `--client-ca-file`).
   */
  tls?: boolean;
  /** `--delegated-auth` (implies `tls`). */
  delegatedAuth?: boolean;
  /** Further flags, after the ones above. */
  args?: string[];
}

/** The TLS and delegated-auth flags of `o` for fixture `f` (see {@link ProxyFlags.tls}); with both, `npm start`'s mode for people. */
export function authFlags(f: Fixture, o: Pick<ProxyFlags, 'tls' | 'delegatedAuth'>): string[] {
  if (o.delegatedAuth) return peopleFlags(f);
  return o.tls ? servingTlsFlags(f) : [];
}

/** `run: 'in-process'` (the default). */
export interface InProcessOptions extends ProxyFlags {
  run?: 'in-process';
  /** How long to wait for every resource to sync, ms; default 120 000 (a bound for a hang: at a load average of 30-45 one proxy took more than 30 s to sync configmaps). */
  syncTimeoutMs?: number;
}

/** `run: 'cli'`. */
export interface CliOptions extends ProxyFlags {
  run: 'cli';
  /** The child's environment (PATH is always passed). */
  env?: NodeJS.ProcessEnv;
}

/** `run: 'passthrough'`: always `pods`, as the fixture's admin. */
export interface PassthroughOptions {
  run: 'passthrough';
}

let seq = 0;

/** Starts a proxy in front of `f` (see the module docstring for the modes). */
export async function startProxy(f: Fixture, o: InProcessOptions): Promise<InProcessProxy>;
export async function startProxy(f: Fixture, o: CliOptions): Promise<CliProxy>;
export async function startProxy(f: Fixture, o: PassthroughOptions): Promise<PassthroughProxy>;
export async function startProxy(
  f: Fixture,
  o: InProcessOptions | CliOptions | PassthroughOptions,
): Promise<InProcessProxy | CliProxy | PassthroughProxy> {
  const client = async (url: string) => ({
    kubeconfig: await writeKubeconfig(join(f.dir, `proxy-${process.pid}-${++seq}.kubeconfig`), {
      server: url,
      ...(url.startsWith('https:') ? { caFile: f.caFile } : {}),
      user: { token: f.tokens.admin },
    }),
    auth: { authorization: `Bearer ${f.tokens.admin}` },
  });
  if (o.run === 'passthrough') {
    const p = await startPassthrough(f);
    return { ...p, ...(await client(p.url)) };
  }
  const argv = [
    '--kubeconfig',
    o.kubeconfig ?? f.kubeconfigs.adminToken,
    '--resources',
    o.resources,
    '--listen',
    o.listen ?? '127.0.0.1:0',
    '--ops-listen',
    '127.0.0.1:0',
    ...authFlags(f, o),
    ...(o.args ?? []),
  ];
  if (o.run === 'cli') {
    const c = spawnProxyCli(argv, o.env);
    const { address, ops } = await c.listening().catch(async (err: unknown) => {
      await c.stop();
      throw err;
    });
    return { ...c, url: address, ops, ...(await client(address)) };
  }
  const { config, parts, proxy } = await runProxyInProcess(argv);
  const deadline = Date.now() + (o.syncTimeoutMs ?? 120_000);
  for (;;) {
    const st = parts.statusSource.resources();
    if (st.length === config.resources.length && st.every((s) => s.synced)) break;
    if (Date.now() > deadline) {
      await proxy.stop();
      throw new Error(`proxy not synced: ${JSON.stringify(st.map((s) => [s.gvr, s.synced, s.lastError]))}`);
    }
    await new Promise((res) => setTimeout(res, 50));
  }
  return {
    proxy,
    parts,
    url: proxy.address,
    ops: proxy.opsAddress,
    ...(await client(proxy.address)),
    stop: () => proxy.stop(),
  };
}

/**
 * src/main.ts in this process with the CLI flags `argv` (environment empty, logs silent): loads
 * the config (asserting it is valid), builds the parts and starts listening; waits for nothing.
 */
export async function runProxyInProcess(
  argv: string[],
): Promise<{ config: Config; parts: ProxyParts; proxy: RunningProxy }> {
  const r = loadConfig({ argv, env: {} });
  assert.equal(r.kind, 'config');
  const config = (r as { config: Config }).config;
  const parts = await createParts(config, silentLogger);
  const proxy = await runProxy(config, parts, silentLogger);
  return { config, parts, proxy };
}

/** A `src/cli.ts` child process. */
export interface CliProcess {
  child: ChildProcess;
  /** Everything written to stdout so far. */
  stdout(): string;
  /** Everything written to stderr so far. */
  stderr(): string;
  /** Parsed JSON log lines so far. */
  logs(): Array<Record<string, unknown>>;
  /** Resolves to the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
  /**
   * Resolves to the listener URLs of its `kube-cache-proxy listening` log line; rejects when it
   * exits first or does not listen within 30 s.
   */
  listening(): Promise<{ address: string; ops: string }>;
  /** SIGTERM (unless it already exited), then its exit code; idempotent. */
  stop(): Promise<number | null>;
}

/** Starts `src/cli.ts` with `args` and the environment `env` plus PATH; waits for nothing. */
export function spawnProxyCli(args: string[], env: NodeJS.ProcessEnv = {}): CliProcess {
  const child = spawn(process.execPath, [cliPath, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH, ...env },
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr!.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
  let stopping: Promise<number | null> | undefined;
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    logs: () =>
      out
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>),
    exited,
    listening: () =>
      new Promise((resolve, reject) => {
        // A bound, not a wait: the check below resolves as soon as it listens. Loading the bundle
        // took more than 30 s at load average 50 on 2 cores.
        const timer = setTimeout(
          () => reject(new Error(`proxy did not listen in 120 s: ${out}${err}`)),
          120_000,
        );
        const check = () => {
          const m = /"address":"(https?:\/\/[^"]+)","ops":"(https?:\/\/[^"]+)"/.exec(out);
          if (m) {
            clearTimeout(timer);
            child.stdout!.off('data', check);
            resolve({ address: m[1]!, ops: m[2]! });
          }
        };
        child.stdout!.on('data', check);
        check();
        void exited.then((c) => {
          clearTimeout(timer);
          reject(new Error(`proxy exited ${c}: ${err}`));
        });
      }),
    stop() {
      stopping ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
        return exited;
      })();
      return stopping;
    },
  };
}

/** The `'passthrough'` mode: the API server alone, `pods` cached by a watch cache never filled. */
async function startPassthrough(f: Fixture): Promise<{ url: string; stop(): Promise<void> }> {
  const short = new Agent({ connect: { ca: f.caPem } });
  const long = new Agent({ connect: { ca: f.caPem }, bodyTimeout: 0 });
  const cache = new WatchCache({
    resource: resourceInfo('v1', 'pods', 'Pod', {
      verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
    }),
  });
  const server = buildServer({
    upstream: {
      server: new URL(f.server),
      dispatcher: short,
      longRunningDispatcher: long,
      authorization: () => `Bearer ${f.tokens.admin}`,
    },
    caches: [cache],
    codec: cacheCodec,
    consistentReads: 'cache',
    syncWaitMs: 1,
    logger: silentLogger,
  });
  await server.app.listen({ host: '127.0.0.1', port: 0 });
  const addr = server.app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  let stopping: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${port}`,
    stop() {
      stopping ??= (async () => {
        await server.shutdown();
        cache.close();
        await short.close();
        await long.close();
      })();
      return stopping;
    },
  };
}
