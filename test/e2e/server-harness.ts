/**
 * Starts the proxy's API server in front of the fixture apiserver for e2e tests about
 * validation parity and pass-through fidelity: `pods` is "cached" by the unit tests' fake cache
 * kept unsynced (so every request that passes validation goes upstream), with the real
 * selector parsers of `src/cache/` (their errors are part of the comparison).
 */

import { Agent } from 'undici';
import { cacheCodec } from '../../src/cache/codec.ts';
import { buildServer, type KubeServer } from '../../src/server/app.ts';
import { silentLogger } from '../../src/util/logger.ts';
import type { Fixture } from '../fixture/index.ts';
import { FakeCache } from '../support/fake-cache.ts';

export interface ProxyHarness {
  server: KubeServer;
  url: string;
  close(): Promise<void>;
}

export async function startProxy(f: Fixture): Promise<ProxyHarness> {
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
    codec: cacheCodec,
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
    async close() {
      await server.shutdown();
      await short.close();
      await long.close();
    },
  };
}
