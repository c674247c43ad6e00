/**
 * `npm start`: the README's main command. Starts the fixture apiserver (real kube-apiserver +
 * etcd on loopback, test/fixture) and kube-cache-proxy in front of it (the real `createParts` +
 * `runProxy` of src/main.ts), writes a kubeconfig whose `server:` is the proxy and whose user is
 * the fixture's admin bearer token (a client certificate cannot cross the plain-HTTP hop), prints
 * how to use it, and runs until Ctrl-C / SIGTERM, then stops both and removes the data.
 *
 *   npm start                                   # --resources=auto (caches started on demand) on 127.0.0.1:8001
 *   npm start -- --listen 127.0.0.1:9001 --resources configmaps --log-level debug
 *
 * Extra arguments are kube-cache-proxy flags (`--help` lists them); they override the defaults
 * below. Proxy logs (pino JSON) go to stderr so stdout keeps the instructions.
 */
import { join } from 'node:path';
import { scopeString } from '../src/apimachinery/resource-scope.ts';
import { type Config, loadConfig, renderHelp } from '../src/config/config.ts';
import { createParts, EXIT_CONFIG, EXIT_FAILURE, type RunningProxy, runProxy } from '../src/main.ts';
import { createMetrics } from '../src/ops/metrics.ts';
import { ConfigError } from '../src/util/errors.ts';
import { createLogger } from '../src/util/logger.ts';
import { type Fixture, startFixture, writeKubeconfig } from '../test/fixture/index.ts';
import { onParentExit } from '../test/fixture/parent-watch.ts';
import { busyListenAddress } from './free-ports.ts';

/** Proxy defaults of `npm start`; any of them can be overridden by an extra argument. */
export const START_DEFAULTS = ['--resources', 'auto'];

const extra = process.argv.slice(2);
if (extra.includes('--help')) {
  process.stdout.write(renderHelp());
  process.exit(0);
}

// Validate the proxy flags before spending ~10 s on the apiserver; the kubeconfig is ours.
function proxyConfig(kubeconfig: string): Config {
  const r = loadConfig({ argv: ['--kubeconfig', kubeconfig, ...START_DEFAULTS, ...extra], env: process.env });
  if (r.kind !== 'config') throw new ConfigError('--version/--help are not start options');
  return r.config;
}
let checked: Config;
try {
  checked = proxyConfig('/dev/null');
} catch (err) {
  if (!(err instanceof ConfigError)) throw err;
  process.stderr.write(`npm start: ${err.message}\n`);
  process.exit(EXIT_CONFIG);
}
// Both ports before the apiserver: a second `npm start` names the flag to change at once.
const busy = await busyListenAddress([
  { flag: 'listen', ...checked.listen },
  { flag: 'ops-listen', ...checked.opsListen },
]);
if (busy) {
  process.stderr.write(`npm start: ${busy}\n`);
  process.exit(EXIT_CONFIG);
}

/** The `caching:` line: the configured resources and, with `auto`, that others are cached on demand. */
function cachingText(config: Config): string {
  const entries = config.resources.map((r) => `${r.name}${scopeString(r)}`);
  if (config.auto) entries.unshift('auto (on demand: each resource a client lists or watches)');
  return entries.length > 0 ? entries.join(', ') : 'nothing (every request is passed upstream)';
}

let fixture: Fixture | undefined;
let proxy: RunningProxy | undefined;
let stopping = false;
async function shutdown(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    await proxy?.stop().catch(() => {});
    await fixture?.stop().catch(() => {});
  }
  process.exit(code);
}
process.once('SIGINT', () => void shutdown(0));
process.once('SIGTERM', () => void shutdown(0));
onParentExit(() => void shutdown(0));

try {
  fixture = await startFixture({ verbose: true });
  const config = proxyConfig(fixture.kubeconfigs.adminToken);
  const logger = createLogger({ level: config.logLevel, destination: process.stderr });
  const metrics = createMetrics();
  const parts = await createParts(config, logger, metrics);
  try {
    proxy = await runProxy(config, parts, logger, metrics);
  } catch (err) {
    await parts.close().catch(() => {});
    throw err;
  }
  const kubeconfig = await writeKubeconfig(join(fixture.dir, 'proxy.kubeconfig'), {
    server: proxy.address,
    user: { token: fixture.tokens.admin },
    name: 'kube-cache-proxy',
  });
  const k = `KUBECONFIG=${kubeconfig}`;
  process.stdout.write(
    [
      '',
      `kube-apiserver ${fixture.version} (fixture) is ready at ${fixture.server}`,
      `kube-cache-proxy is listening at ${proxy.address} (ops: ${proxy.opsAddress}/metrics, /readyz, /debug/cache)`,
      `caching: ${cachingText(config)}`,
      `kubeconfig for kubectl (through the proxy): ${kubeconfig}`,
      '',
      `  export ${k}`,
      `  alias kubectl=${fixture.bin.kubectl}    # the fixture's kubectl, if you have none`,
      `  kubectl get configmaps -A -o yaml      # LIST from the cache${config.auto ? ' (the first one starts it, passed upstream)' : ''}; table output is rendered upstream`,
      '  kubectl create configmap demo --from-literal=a=1 && kubectl get configmaps -w -o name   # WATCH from the cache',
      '  curl -s -A demo -H "Authorization: Bearer $(kubectl config view --raw -o jsonpath=\'{.users[0].user.token}\')" \\',
      `       '${proxy.address}/api/v1/configmaps'   # curl's own User-Agent asks for pretty JSON: passed upstream`,
      `  curl -s ${proxy.opsAddress}/debug/cache`,
      '',
      `direct to the apiserver (for comparison): KUBECONFIG=${fixture.kubeconfigs.adminToken}`,
      'Ctrl-C stops both and removes their data.',
      '',
    ].join('\n'),
  );
} catch (err) {
  process.stderr.write(
    `npm start: ${err instanceof ConfigError ? err.message : ((err as Error).stack ?? String(err))}\n`,
  );
  await shutdown(err instanceof ConfigError ? EXIT_CONFIG : EXIT_FAILURE);
}
