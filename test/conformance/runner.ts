/**
 * One run of the upstream e2e suite (`e2e.test`, built by `test/apiserver/build.sh --e2e` from
 * k8s.io/kubernetes `test/e2e` at the fixture's version) against its own fresh pods fixture
 * (test/fixture/pods-fixture.ts: every default controller, the scheduler, one KWOK node whose
 * exec runs NOTHING on this machine; {@link APISERVER_FLAGS}, {@link KCM_FLAGS}), either DIRECT or THROUGH a kube-cache-proxy started as a
 * child process (`src/cli.ts`) in one of the {@link MODES}. Returns the parsed JUnit report
 * (test/conformance/junit.ts), whether the proxy survived and its caches still equal the
 * apiserver (test/conformance/cache-state.ts), and what the report page needs to regenerate the run.
 *
 * e2e.test flags: `--provider=skeleton` (no cloud), `--kubeconfig` (the fixture admin's bearer
 * token, direct or with the proxy as server), `--report-dir`, `--ginkgo.focus/skip/seed`,
 * `--kubectl-path` (the fixture's kubectl), `--dump-logs-on-failure=false` and
 * `--disable-log-dump` (no node logs to fetch); its defaults otherwise (protobuf-first clients,
 * watch-list informers, `--minStartupPods=0`).
 */
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runBuildScript } from '../fixture/fixture.ts';
import { type PodsFixture, startPodsFixture } from '../fixture/pods-fixture.ts';
import { metricSum } from '../support/prometheus-text.ts';
import { type CliProxy, startProxy } from '../support/proxy.ts';
import { type CacheMismatch, cacheMismatches } from './cache-state.ts';
import { parseJUnit, type SpecResult } from './junit.ts';

/** How e2e.test reaches the apiserver. */
export type Mode = 'direct' | 'sidecar' | 'delegated' | 'listed';

/** The proxy flags of each mode (direct: no proxy), as the report page shows them. */
export const MODES: Record<Mode, { proxy: boolean; describe: string }> = {
  direct: { proxy: false, describe: 'e2e.test → kube-apiserver' },
  sidecar: {
    proxy: true,
    describe: "loopback plain HTTP, the proxy's own identity (`--resources=auto`)",
  },
  delegated: {
    proxy: true,
    describe: 'TLS + `--delegated-auth` (`--resources=auto`)',
  },
  listed: {
    proxy: true,
    describe: `loopback plain HTTP, a configured resource list (\`--resources=${'$LISTED'}\`)`,
  },
};

/** The resource list of the `listed` mode: the resources the suite's clients read most. */
export const LISTED_RESOURCES =
  'pods,configmaps,secrets,services,endpoints,events,namespaces,serviceaccounts,nodes,deployments.apps,replicasets.apps,leases.coordination.k8s.io,customresourcedefinitions.apiextensions.k8s.io,endpointslices.discovery.k8s.io';

/** The proxy flags of a proxied mode. */
export function proxyFlags(mode: Exclude<Mode, 'direct'>): {
  resources: string;
  tls: boolean;
  delegatedAuth: boolean;
} {
  if (mode === 'listed') return { resources: LISTED_RESOURCES, tls: false, delegatedAuth: false };
  return { resources: 'auto', tls: mode === 'delegated', delegatedAuth: mode === 'delegated' };
}

/**
 * The fixture apiserver's flags beside its defaults, the same in every mode (the report shows
 * them). `--etcd-compaction-interval=1m` (default 5m): the `[Slow]` chunking spec ("… the original
 * version has been compacted away …") waits until etcd has compacted its continue token's
 * revision, and the apiserver compacts the revision it saw one interval earlier, so with the
 * default the spec waits about 10 minutes per mode; with 1m about 2. Younger revisions than one
 * interval are never compacted, so the other specs (which watch and read at revisions seconds
 * old) see no difference.
 */
export const APISERVER_FLAGS: readonly string[] = ['--etcd-compaction-interval=1m'];

/**
 * kube-controller-manager's flags beside the pods fixture's, the same in every mode (the report
 * shows them). `--resource-quota-sync-period=2s` (default 5m): `ResourceQuota should apply changes
 * to a resourcequota status` patches the quota's status away from its spec, then polls every 5 s
 * (immediately first, up to 6 min) until the quota controller resets it, which it does only at a
 * full resync (`enqueueAll` every period, k8s.io/kubernetes `pkg/controller/resourcequota`); with
 * the default the spec took where it fell in the 5-minute cycle (5 to 295 s), with 2 s the reset
 * comes before the spec's second poll, so it takes its steps plus one 5 s poll in every mode. A
 * full resync recomputes each live quota's usage from the controller's informers (a few quotas at
 * a time in this suite) and writes only what changed; no other spec of the matrix waits for it
 * (the other ResourceQuota specs wait for usage written when objects change: by the apiserver's
 * quota admission and the controller's replenishment).
 */
export const KCM_FLAGS: readonly string[] = ['--resource-quota-sync-period=2s'];

/** What {@link runSuite} runs. */
export interface RunOptions {
  mode: Mode;
  /** Ginkgo focus regular expression (matched against each spec's full text). */
  focus: string;
  /** Ginkgo skip regular expression ('' skips nothing). */
  skip: string;
  /** `--ginkgo.seed`: the order specs run in. */
  seed: number;
  /** Where the report, e2e.test's output and the proxy's log go (created). */
  dir: string;
  /** The e2e.test binary ({@link ensureE2eTest}). */
  e2eTest: string;
  /** Kill e2e.test after this long, ms; default 3 h. The run then has no report and throws. */
  timeoutMs?: number;
  /**
   * Interrupt e2e.test after this long, ms (SIGINT: Ginkgo stops the running spec, runs its
   * cleanup, skips the rest and still writes its report); a second SIGINT 2 min later, SIGKILL
   * 4 min later. The run then holds the specs that finished before ({@link SuiteRun.stoppedAfter}):
   * on a loaded machine a mode can be given the time left instead of none. Default: none.
   */
  timeBoxMs?: number;
  /**
   * Extra proxy flags of the proxied modes, after the mode's own (`--proxy-arg` of
   * scripts/conformance.ts, e.g. `--protobuf-answers=cache`); default none. Ignored direct.
   */
  proxyArgs?: readonly string[];
  /** Progress lines (default: none). */
  log?: (line: string) => void;
}

/** One finished run. */
export interface SuiteRun {
  mode: Mode;
  /** The specs that ran (the ones the filters left out are dropped). */
  specs: SpecResult[];
  /** e2e.test's exit code (1 when a spec failed). */
  exitCode: number | null;
  /** Wall time of e2e.test, s. */
  seconds: number;
  /** The fixture apiserver's `--feature-gates` values ('' when it sets none: the defaults). */
  featureGates: string;
  /** The fixture apiserver's flags beside its defaults ({@link APISERVER_FLAGS}), space-separated. */
  apiserverFlags: string;
  /**
   * kube-controller-manager's flags beside the pods fixture's ({@link KCM_FLAGS}), space-separated;
   * absent in runs saved before they were set (then none: the 5-minute quota resync).
   */
  kcmFlags?: string;
  /** The proxied modes: the extra proxy flags it ran with ({@link RunOptions.proxyArgs}); [] when none. */
  proxyArgs?: string[];
  /** The proxied modes: whether the proxy was still running after the suite (a crash fails it). */
  proxyAlive?: boolean;
  /**
   * The proxied modes, when the proxy survived: its caches that still differ from the apiserver
   * after the suite (test/conformance/cache-state.ts); [] when all equal.
   */
  cacheMismatches?: CacheMismatch[];
  /**
   * The proxied modes: requests the proxy answered from its cache and passed upstream during the
   * run (`kube_cache_proxy_requests_total` by `served_from`), so the report shows the cache was used.
   */
  served?: { cache: number; upstream: number };
  /** e2e.test's output file. */
  outputFile: string;
  /** The proxied modes: the proxy's log (its stdout and stderr, JSON lines), written after the suite. */
  proxyLogFile?: string;
  /**
   * Set when the time box ({@link RunOptions.timeBoxMs}) stopped the suite: its length, s. The
   * spec it interrupted and the ones it skipped are not in `specs` (they did not run to an end).
   */
  stoppedAfter?: number;
}

/**
 * Builds what the suite needs (`build.sh --pods --e2e`: the pods fixture's binaries and e2e.test);
 * resolves with the bin directory. Throws if the Go build fails.
 */
export async function ensureE2eTest(): Promise<{ bin: string; e2eTest: string }> {
  const bin = await runBuildScript(['--pods', '--e2e']);
  return { bin, e2eTest: join(bin, 'e2e.test') };
}

/** The e2e.test argument list of a run (see the module docstring). */
export function e2eArgs(o: {
  kubeconfig: string;
  kubectl: string;
  reportDir: string;
  focus: string;
  skip: string;
  seed: number;
}): string[] {
  return [
    '--provider=skeleton',
    `--kubeconfig=${o.kubeconfig}`,
    `--kubectl-path=${o.kubectl}`,
    `--report-dir=${o.reportDir}`,
    `--e2e-output-dir=${o.reportDir}`,
    '--dump-logs-on-failure=false',
    '--disable-log-dump',
    `--ginkgo.focus=${o.focus}`,
    ...(o.skip ? [`--ginkgo.skip=${o.skip}`] : []),
    `--ginkgo.seed=${o.seed}`,
    '--ginkgo.timeout=4h',
    '--ginkgo.no-color',
    '--ginkgo.v',
  ];
}

/**
 * Runs the suite once in `o.mode` on a fresh pods fixture (and proxy), then stops both. Throws
 * when the fixture or proxy does not start, or e2e.test writes no report (killed, crashed before
 * reporting).
 */
export async function runSuite(o: RunOptions): Promise<SuiteRun> {
  const log = o.log ?? (() => {});
  await mkdir(o.dir, { recursive: true });
  const t00 = Date.now();
  const since = () => `${((Date.now() - t00) / 1000).toFixed(0)} s`;
  const f: PodsFixture = await startPodsFixture({
    controllers: '*',
    exec: false,
    apiserverFlags: [...APISERVER_FLAGS],
    componentFlags: { kcm: [...KCM_FLAGS] },
  });
  let proxy: CliProxy | undefined;
  try {
    let kubeconfig = f.kubeconfigs.adminToken;
    if (o.mode !== 'direct') {
      proxy = await startProxy(f, { run: 'cli', ...proxyFlags(o.mode), args: [...(o.proxyArgs ?? [])] });
      kubeconfig = proxy.kubeconfig;
    }
    log(
      `${o.mode}: fixture ${f.server}${proxy ? `, proxy ${proxy.url}${o.proxyArgs?.length ? ` (${o.proxyArgs.join(' ')})` : ''}` : ''} up after ${since()}; running e2e.test`,
    );
    const outputFile = join(o.dir, 'e2e.log');
    const args = e2eArgs({ kubeconfig, kubectl: f.bin.kubectl, reportDir: o.dir, ...o });
    const t0 = Date.now();
    const { code: exitCode, interrupted } = await runLogged(
      o.e2eTest,
      args,
      o.dir,
      outputFile,
      o.timeoutMs ?? 3 * 3600_000,
      o.timeBoxMs,
    );
    const seconds = (Date.now() - t0) / 1000;
    log(`${o.mode}: e2e.test exited ${exitCode} after ${seconds.toFixed(0)} s`);
    const xml = await readFile(join(o.dir, 'junit_01.xml'), 'utf8').catch(() => '');
    if (!xml) throw new Error(`${o.mode}: e2e.test (exit ${exitCode}) wrote no report; see ${outputFile}`);
    // Interrupted by the time box: the spec it stopped is `interrupted`, the ones after it skipped
    // with no reason (Ginkgo's `skipped`, as a filtered spec): neither ran to an end.
    const specs = parseJUnit(xml).filter((s) => !s.filtered && !(interrupted && s.state === 'interrupted'));
    const proxyAlive = proxy ? proxy.child.exitCode === null && proxy.child.signalCode === null : undefined;
    if (proxy && !proxyAlive)
      log(`${o.mode}: THE PROXY EXITED during the suite: ${proxy.stderr().slice(-2000)}`);
    let mismatches: CacheMismatch[] | undefined;
    let served: SuiteRun['served'];
    if (proxy && proxyAlive) {
      const metrics = await (await fetch(`${proxy.ops}/metrics`)).text();
      served = {
        cache: metricSum(metrics, 'kube_cache_proxy_requests_total', { served_from: 'cache' }),
        upstream: metricSum(metrics, 'kube_cache_proxy_requests_total', { served_from: 'upstream' }),
      };
      mismatches = await cacheMismatches({
        ops: proxy.ops,
        proxy: proxy.url,
        server: f.server,
        authorization: proxy.auth.authorization,
        caPem: f.caPem,
      });
      for (const m of mismatches)
        log(`${o.mode}: cache ${m.resource} differs from the apiserver: ${JSON.stringify(m)}`);
    }
    let proxyLogFile: string | undefined;
    if (proxy) {
      proxyLogFile = join(o.dir, 'proxy.log');
      await writeFile(proxyLogFile, proxy.stdout() + proxy.stderr());
    }
    const gates = f.apiserverArgs.filter((a) => a.startsWith('--feature-gates=')).map((a) => a.slice(16));
    return {
      mode: o.mode,
      specs,
      exitCode,
      seconds,
      featureGates: gates.join(','),
      apiserverFlags: APISERVER_FLAGS.join(' '),
      kcmFlags: KCM_FLAGS.join(' '),
      ...(proxy ? { proxyArgs: [...(o.proxyArgs ?? [])], proxyLogFile } : {}),
      proxyAlive,
      cacheMismatches: mismatches,
      served,
      outputFile,
      ...(interrupted && o.timeBoxMs !== undefined ? { stoppedAfter: o.timeBoxMs / 1000 } : {}),
    };
  } finally {
    await proxy?.stop();
    await f.stop();
  }
}

/**
 * Runs `cmd args` in `cwd` with stdout+stderr to `file`; SIGKILL after `timeoutMs`; with
 * `timeBoxMs`, SIGINT then, again 2 min later (Ginkgo's interrupt levels), SIGKILL 4 min later.
 * Resolves with the exit code and whether the time box interrupted it.
 */
function runLogged(
  cmd: string,
  args: string[],
  cwd: string,
  file: string,
  timeoutMs: number,
  timeBoxMs?: number,
) {
  return new Promise<{ code: number | null; interrupted: boolean }>((resolve, reject) => {
    const out = createWriteStream(file);
    const child = spawn(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.pipe(out, { end: false });
    child.stderr.pipe(out, { end: false });
    let interrupted = false;
    const timers = [setTimeout(() => child.kill('SIGKILL'), timeoutMs)];
    if (timeBoxMs !== undefined)
      timers.push(
        setTimeout(() => {
          interrupted = true;
          child.kill('SIGINT');
        }, timeBoxMs),
        setTimeout(() => child.kill('SIGINT'), timeBoxMs + 120_000),
        setTimeout(() => child.kill('SIGKILL'), timeBoxMs + 240_000),
      );
    const clear = () => {
      for (const t of timers) clearTimeout(t);
    };
    child.on('error', (err) => {
      clear();
      reject(err);
    });
    child.on('close', (code) => {
      clear();
      out.end(() => resolve({ code, interrupted }));
    });
  });
}
