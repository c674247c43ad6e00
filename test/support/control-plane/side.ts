/**
 * One side of the control-plane comparison: a fresh pods fixture in the control-plane shape
 * (test/fixture/control-plane.ts; every default controller, leader election, 3 KWOK nodes) whose
 * kube-controller-manager and kube-scheduler talk to the apiserver directly or through ONE
 * kube-cache-proxy (`--resources` auto or a list), the workload (workload.ts) run on it, and what
 * the comparison checks read at the end: the final state, the components' Leases and processes,
 * the proxy's request counters and its caches against the apiserver.
 */
import { readFile } from 'node:fs/promises';
import { HANDOVER_WAIT_MS, MIN_WATCH_MS } from '../../../src/server/watch-relay.ts';
import { type CacheMismatch, cacheMismatches } from '../../conformance/cache-state.ts';
import type { Fixture } from '../../fixture/index.ts';
import { type PodsFixture, startPodsFixture } from '../../fixture/pods-fixture.ts';
import { type CliProxy, startProxy } from '../proxy.ts';
import { type ApiClient, adminClient } from './api-client.ts';
import { type FinalState, finalState } from './final-state.ts';
import { type ProxyReads, proxyReads } from './proxy-reads.ts';
import { runWorkload, STEPS, type StepTime, type WorkloadStep } from './workload.ts';

/** How the components reach the apiserver. */
export type Via = { kind: 'direct' } | { kind: 'proxy'; resources: string; args?: string[] };

/** A component's leader-election Lease in kube-system. */
export interface LeaseState {
  holder: string;
  transitions: number;
}

/** Hooks a bench uses to sample counters between the phases. */
export interface SideHooks {
  /** The apiserver is ready, the front (if any) listens, the components have not started. */
  beforeComponents?(f: Fixture, proxy: CliProxy | undefined): Promise<void>;
  /** Start-up done (nodes Ready, both Leases held), the workload not begun. */
  started?(f: PodsFixture, proxy: CliProxy | undefined): Promise<void>;
  /** The workload done, before the checks and the stop. */
  finished?(f: PodsFixture, proxy: CliProxy | undefined): Promise<void>;
}

/** What one side reports. */
export interface SideResult {
  via: Via;
  /** From starting the components to both Leases held and every KWOK node Ready, ms. */
  startupMs: number;
  times: StepTime[];
  state: FinalState;
  leases: { start: Record<string, LeaseState>; end: Record<string, LeaseState> };
  /** Components that exited before the end (name: exit), and leadership-loss lines in their logs. */
  exited: string[];
  leadershipLogLines: string[];
  /**
   * kube-controller-manager's "read version N is not as new as written version M" errors: a
   * controller that found its informer behind its own last write and requeued (KEP-5647's stale
   * controller check), a measure of the informers' lag.
   */
  staleReads: number;
  /** Through the proxy only. */
  proxy?: {
    reads: ProxyReads;
    mismatches: CacheMismatch[];
    exitedEarly: boolean;
    /**
     * The steady state: the reads counted and the synced caches (`resource.group`) at the first
     * step boundary where every cache had been synced for longer than a passed-through watch's
     * handover may take ({@link HANDOVER_BOUND_MS}; such a watch is counted only when it ends).
     * An informer started later (the garbage collector's and quota controller's monitors follow
     * discovery) makes its resource's first WATCH pass upstream as `not-cached`, as it should.
     */
    steady?: { step: string; reads: ProxyReads; caches: string[] };
    /** The proxy's caches at the end (`resource.group` of `/debug/cache`), sorted. */
    cached: string[];
  };
}

const COMPONENTS = ['kube-controller-manager', 'kube-scheduler'];

/**
 * How long after its cache synced a watch passed upstream may still be open (ms): a handover
 * waits out client-go's very short watch ({@link MIN_WATCH_MS}) and at most
 * {@link HANDOVER_WAIT_MS} for an event in flight; 5 s more for a loaded machine's timers.
 */
export const HANDOVER_BOUND_MS = MIN_WATCH_MS + HANDOVER_WAIT_MS + 5_000;

interface DebugCacheResources {
  resources: { group: string; resource: string; synced: boolean; lastSyncTime: string | null }[];
}

const nameOf = (r: { group: string; resource: string }) => `${r.resource}${r.group ? `.${r.group}` : ''}`;

/** The proxy's caches now, as `resource.group` of `/debug/cache`, sorted. */
async function proxyCaches(ops: string): Promise<string[]> {
  const debug = (await fetch(`${ops}/debug/cache`).then((r) => r.json())) as DebugCacheResources;
  return debug.resources.map(nameOf).sort();
}

/**
 * The proxy's caches (sorted `resource.group`) when every one is synced and synced for longer
 * than {@link HANDOVER_BOUND_MS}; undefined before.
 */
async function steadyCaches(ops: string): Promise<string[] | undefined> {
  const debug = (await fetch(`${ops}/debug/cache`).then((r) => r.json())) as DebugCacheResources;
  const settled = (r: DebugCacheResources['resources'][number]) =>
    r.synced && r.lastSyncTime !== null && Date.now() - Date.parse(r.lastSyncTime) > HANDOVER_BOUND_MS;
  return debug.resources.every(settled) ? debug.resources.map(nameOf).sort() : undefined;
}

async function leases(api: ApiClient): Promise<Record<string, LeaseState>> {
  const out: Record<string, LeaseState> = {};
  for (const name of COMPONENTS) {
    const l = await api.call('GET', `/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/${name}`);
    if (l.status === 200 && l.body.spec?.holderIdentity)
      out[name] = { holder: l.body.spec.holderIdentity, transitions: l.body.spec.leaseTransitions ?? 0 };
  }
  return out;
}

/**
 * Runs one side (see the file comment): starts its fixture (and proxy), waits for start-up, runs
 * `steps` (default all), reads the checks, stops everything. Throws when a step fails (after
 * stopping), naming the step.
 */
export async function runSide(
  via: Via,
  o: {
    steps?: WorkloadStep[];
    waitMs?: number;
    hooks?: SideHooks;
    onStep?: (name: string) => Promise<void> | void;
    /** Extra flags of the fixture's apiserver and components (a trace: audit log, `--vmodule`). */
    fixture?: { apiserverFlags?: string[]; componentFlags?: { kcm?: string[]; scheduler?: string[] } };
  } = {},
): Promise<SideResult> {
  let proxy: CliProxy | undefined;
  let componentsStarted = 0;
  const f = await startPodsFixture({
    kwokNodes: 3,
    readyTimeoutMs: 300_000,
    ...(o.fixture?.apiserverFlags ? { apiserverFlags: o.fixture.apiserverFlags } : {}),
    ...(o.fixture?.componentFlags ? { componentFlags: o.fixture.componentFlags } : {}),
    controlPlane: {
      front: async (fx) => {
        if (via.kind === 'proxy')
          proxy = await startProxy(fx, { run: 'cli', resources: via.resources, args: via.args ?? [] });
        await o.hooks?.beforeComponents?.(fx, proxy);
        componentsStarted = performance.now();
        return proxy
          ? { kubeconfig: proxy.kubeconfig, stop: () => proxy!.stop() }
          : { kubeconfig: fx.kubeconfigs.adminToken, stop: async () => {} };
      },
    },
  });
  const api = await adminClient(f);
  try {
    const waitMs = o.waitMs ?? 240_000;
    const ctx = { api, kubectl: f.kubectl, kwokNodes: f.kwokNodes, waitMs };
    const deadline = Date.now() + waitMs;
    let start: Record<string, LeaseState> = {};
    for (;;) {
      start = await leases(api);
      if (Object.keys(start).length === COMPONENTS.length) break;
      if (Date.now() > deadline) throw new Error(`control plane: leases not held: ${JSON.stringify(start)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    const startupMs = Math.round(performance.now() - componentsStarted);
    await o.hooks?.started?.(f, proxy);
    const stepList = o.steps ?? STEPS;
    let steady: { step: string; reads: ProxyReads; caches: string[] } | undefined;
    const times = await runWorkload(ctx, stepList, async (name) => {
      if (proxy && !steady && name !== stepList[0]?.name) {
        // The caches first: a cache started between the two reads then counts as not cached.
        const caches = await steadyCaches(proxy.ops);
        if (caches)
          steady = {
            step: name,
            caches,
            reads: proxyReads(await fetch(`${proxy.ops}/metrics`).then((r) => r.text())),
          };
      }
      await o.onStep?.(name);
    });
    await o.hooks?.finished?.(f, proxy);
    const state = await finalState(api);
    const end = await leases(api);
    const exited = f.components
      .filter((p) => p.child.exitCode !== null || p.child.signalCode !== null)
      .map((p) => `${p.name}: ${p.child.exitCode ?? p.child.signalCode}`);
    const leadershipLogLines: string[] = [];
    let staleReads = 0;
    for (const p of f.components.filter((c) => COMPONENTS.includes(c.name))) {
      const log = await readFile(p.logFile, 'utf8');
      staleReads += log.split('is not as new as written version').length - 1;
      for (const line of log.split('\n'))
        if (/leaderelection lost|failed to renew lease|Leader election lost/i.test(line))
          leadershipLogLines.push(`${p.name}: ${line.slice(0, 300)}`);
    }
    let proxySide: SideResult['proxy'];
    if (proxy) {
      const exitedEarly = proxy.child.exitCode !== null;
      const metrics = await fetch(`${proxy.ops}/metrics`).then((r) => r.text());
      const mismatches = await cacheMismatches({
        ops: proxy.ops,
        proxy: proxy.url,
        server: f.server,
        authorization: proxy.auth.authorization,
        caPem: f.caPem,
      });
      const cached = await proxyCaches(proxy.ops);
      proxySide = {
        reads: proxyReads(metrics),
        mismatches,
        exitedEarly,
        cached,
        ...(steady ? { steady } : {}),
      };
    }
    return {
      via,
      startupMs,
      times,
      state,
      leases: { start, end },
      exited,
      leadershipLogLines,
      staleReads,
      ...(proxySide ? { proxy: proxySide } : {}),
    };
  } finally {
    await api.close();
    await f.stop();
  }
}
