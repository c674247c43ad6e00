/**
 * Starts the proxy's API server in front of the fixture apiserver for e2e tests. Until the
 * real watch cache is on main, the cached resource is backed by the unit tests' fake cache
 * (kept unsynced, so every request that passes validation goes upstream): the tests here are
 * about validation parity and pass-through fidelity.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent } from 'undici';
import { buildServer, type KubeServer } from '../../src/server/app.ts';
import type { CacheCodec } from '../../src/server/cache-api.ts';
import { silentLogger } from '../../src/util/logger.ts';
import type { Fixture } from '../fixture/index.ts';
import { FakeCache, fakeCodec } from '../unit/server/fake-cache.ts';

export interface ProxyHarness {
  server: KubeServer;
  url: string;
  /** Whether the real selector parsers of `src/cache/` are in use (else the fake's). */
  realSelectors: boolean;
  close(): Promise<void>;
}

const root = join(fileURLToPath(import.meta.url), '..', '..', '..');

/** The real selector parsers and list encoder once `src/cache/` is merged (paths in variables: see main.ts). */
async function realCodec(): Promise<CacheCodec | undefined> {
  const selPath = join(root, 'src', 'cache', 'selectors.ts');
  const wcPath = join(root, 'src', 'cache', 'watch-cache.ts');
  if (!existsSync(selPath) || !existsSync(wcPath)) return undefined;
  // biome-ignore lint/suspicious/noExplicitAny: loaded dynamically until merged
  const sel: any = await import(selPath);
  // biome-ignore lint/suspicious/noExplicitAny: idem
  const wc: any = await import(wcPath);
  return {
    parseLabelSelector: sel.parseLabelSelector,
    parseFieldSelector: sel.parseFieldSelector,
    encodeList: wc.encodeList,
  };
}

export async function startProxy(f: Fixture): Promise<ProxyHarness> {
  const real = await realCodec();
  const short = new Agent({ connect: { ca: f.caPem } });
  const long = new Agent({ connect: { ca: f.caPem }, bodyTimeout: 0 });
  const cache = new FakeCache();
  cache.synced = false;
  const server = buildServer({
    upstream: {
      server: new URL(f.server),
      dispatcher: short,
      longRunningDispatcher: long,
      authorization: () => `Bearer ${f.tokens.admin}`,
    },
    caches: [cache],
    codec: real ?? fakeCodec,
    consistentReads: 'cache',
    syncWaitMs: 1,
    logger: silentLogger,
  });
  await server.app.listen({ host: '127.0.0.1', port: 0 });
  const addr = server.app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  return {
    server,
    url: `http://127.0.0.1:${port}`,
    realSelectors: real !== undefined,
    async close() {
      await server.shutdown();
      await short.close();
      await long.close();
    },
  };
}
