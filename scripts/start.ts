/**
 * `npm start`: the README's main command. Starts the fixture apiserver (real kube-apiserver +
 * etcd on loopback, test/fixture) and kube-cache-proxy in front of it (the real `createParts` +
 * `runProxy` of src/main.ts) in the mode for people (docs/design.md §4): TLS on loopback with
 * `--delegated-auth`, serving with the fixture's proxy certificate (signed by the fixture CA) and
 * verifying client certificates against the apiserver's client CA. It writes one kubeconfig per
 * identity, each with the CA and that identity's own bearer token (kubectl sends a credential only
 * to an https:// server: over http:// every command would run as the proxy), prints how to use
 * them, and runs until Ctrl-C / SIGTERM, then stops both and removes the data:
 *
 * - `admin.kubeconfig`: the fixture's cluster-admin ServiceAccount;
 * - `limited.kubeconfig`: the fixture's namespace-limited ServiceAccount (anything in namespace
 *   `limited`, nothing elsewhere): refused through the proxy exactly where the apiserver refuses it.
 *
 *   npm start                                   # --resources=auto (caches started on demand) on https://127.0.0.1:8001
 *   npm start -- --listen 127.0.0.1:9001 --resources configmaps --log-level debug
 *   npm start -- --pods                         # the pods fixture: pods run (exec, logs, cp, port-forward)
 *
 * Extra arguments are kube-cache-proxy flags (`--help` lists them); they override the defaults
 * below (the TLS files and `--delegated-auth` are always set), except `--pods`, which is ours: the
 * apiserver is then the pods fixture (test/fixture/pods-fixture.ts: kube-controller-manager,
 * kube-scheduler and a KWOK node, built on first use), whose `kubectl exec` runs the command ON
 * THIS MACHINE. Proxy logs (pino JSON) go to stderr so stdout keeps the instructions.
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
import { KWOK_NODE, type PodsFixture, startPodsFixture } from '../test/fixture/pods-fixture.ts';
import { peopleFlags } from '../test/fixture/proxy-flags.ts';
import { busyListenAddress } from './free-ports.ts';

/** Proxy defaults of `npm start`; any of them can be overridden by an extra argument. */
export const START_DEFAULTS = ['--resources', 'auto'];

/** `--pods`: the pods fixture (not a proxy flag). */
export const PODS_FLAG = '--pods';

const pods = process.argv.includes(PODS_FLAG);
const extra = process.argv.slice(2).filter((a) => a !== PODS_FLAG);
if (extra.includes('--help')) {
  process.stdout.write(renderHelp());
  process.exit(0);
}

// Validate the proxy flags before spending ~10 s on the apiserver; the kubeconfig and the TLS
// files are ours (they exist once the fixture runs).
function proxyConfig(kubeconfig: string, mode: string[] = []): Config {
  const r = loadConfig({
    argv: ['--kubeconfig', kubeconfig, ...START_DEFAULTS, ...mode, ...extra],
    env: process.env,
  });
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

/**
 * What `npm start` prints once both run: where they listen, the two kubeconfigs and the commands
 * of the README's quick start (the limited user refused where the apiserver refuses it).
 */
export function startText(
  fixture: Pick<Fixture, 'version' | 'server' | 'bin' | 'kubeconfigs' | 'limitedNamespace'>,
  proxy: Pick<RunningProxy, 'address' | 'opsAddress'>,
  config: Config,
  people: { admin: string; limited: string },
  more: string[] = [],
): string {
  const ns = fixture.limitedNamespace;
  return [
    '',
    `kube-apiserver ${fixture.version} (fixture) is ready at ${fixture.server}`,
    `kube-cache-proxy is listening at ${proxy.address} (TLS, --delegated-auth: every client is itself) (ops: ${proxy.opsAddress}/metrics, /readyz, /debug/cache)`,
    `caching: ${cachingText(config)}`,
    '',
    'kubeconfigs through the proxy, each with the fixture CA and its own bearer token:',
    `  admin (cluster-admin):                 ${people.admin}`,
    `  limited (anything in namespace ${ns} only): ${people.limited}`,
    '',
    `  alias kubectl=${fixture.bin.kubectl}    # the fixture's kubectl, if you have none`,
    `  export KUBECONFIG=${people.admin}`,
    '  kubectl auth whoami                    # system:serviceaccount:kcp-system:admin',
    `  kubectl get configmaps -A -o yaml      # LIST from the cache${config.auto ? ' (the first one starts it, passed upstream)' : ''}; without -o, the table is printed by the cache too`,
    '  kubectl create configmap demo --from-literal=a=1 && kubectl get configmaps -w -o name   # WATCH from the cache',
    `  export KUBECONFIG=${people.limited}`,
    `  kubectl get configmaps -o name         # namespace ${ns}: allowed, from the cache`,
    '  kubectl get configmaps -n kube-system  # Error from server (Forbidden): … User "system:serviceaccount:kcp-system:limited" cannot list …',
    '  kubectl auth can-i list secrets -n kube-system   # no, as direct',
    '  kubectl get pods --as=someone-else     # Forbidden by the apiserver: limited may not impersonate',
    `  curl -s ${proxy.opsAddress}/debug/cache`,
    '',
    ...more,
    `direct to the apiserver (for comparison): ${fixture.kubeconfigs.adminToken}, ${fixture.kubeconfigs.limited}`,
    'Ctrl-C stops both and removes their data.',
    '',
  ].join('\n');
}

/** What `--pods` adds to the instructions: the pods to try, and where exec runs. */
function podsText(f: PodsFixture, adminKubeconfig: string): string[] {
  return [
    `pods run on the simulated node ${KWOK_NODE} (KWOK), through the proxy:`,
    `  export KUBECONFIG=${adminKubeconfig}`,
    '  kubectl create deployment demo --image=demo && kubectl rollout status deployment/demo',
    '  kubectl logs deployment/demo                  # three fixed lines',
    '  kubectl exec deployment/demo -- ls -la        # runs ON THIS MACHINE (see below)',
    '  kubectl cp README.md "$(kubectl get pod -l app=demo -o name | cut -d/ -f2)":README.md',
    `  kubectl port-forward deployment/demo 18080:80 # any port reaches a local echo server (127.0.0.1:${f.echoPort})`,
    `WARNING: KWOK's exec runs the command on THIS machine, as ${process.env.USER ?? 'this user'}, in ${f.workDir}`,
    '(no container, no isolation: a command can read and write anything this user can); cp copies there.',
    '',
  ];
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
  fixture = pods ? await startPodsFixture({ verbose: true }) : await startFixture({ verbose: true });
  const config = proxyConfig(fixture.kubeconfigs.adminToken, peopleFlags(fixture));
  const logger = createLogger({ level: config.logLevel, destination: process.stderr });
  const metrics = createMetrics();
  const parts = await createParts(config, logger, metrics);
  try {
    proxy = await runProxy(config, parts, logger, metrics);
  } catch (err) {
    await parts.close().catch(() => {});
    throw err;
  }
  const people = {
    admin: await writeKubeconfig(join(fixture.dir, 'admin.proxy.kubeconfig'), {
      server: proxy.address,
      caFile: fixture.caFile,
      user: { token: fixture.tokens.admin },
      name: 'kube-cache-proxy-admin',
    }),
    limited: await writeKubeconfig(join(fixture.dir, 'limited.proxy.kubeconfig'), {
      server: proxy.address,
      caFile: fixture.caFile,
      user: { token: fixture.tokens.limited },
      namespace: fixture.limitedNamespace,
      name: 'kube-cache-proxy-limited',
    }),
  };
  process.stdout.write(
    startText(fixture, proxy, config, people, pods ? podsText(fixture as PodsFixture, people.admin) : []),
  );
} catch (err) {
  process.stderr.write(
    `npm start: ${err instanceof ConfigError ? err.message : ((err as Error).stack ?? String(err))}\n`,
  );
  await shutdown(err instanceof ConfigError ? EXIT_CONFIG : EXIT_FAILURE);
}
