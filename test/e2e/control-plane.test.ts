/**
 * kube-controller-manager (every default controller) and kube-scheduler through ONE kube-cache-proxy
 * (sidecar mode, `--resources=auto` with the default `--auto-max-resources`, or with `KCP_CP_RESOURCES=list` the
 * configured list of test/support/control-plane/proxy-modes.ts), compared with the same
 * control plane talking to the apiserver directly, each on a fresh pods fixture with 3 KWOK nodes
 * (test/support/control-plane/side.ts), both running the scripted workload
 * (test/support/control-plane/workload.ts; `KCP_CP_STEPS=a,b` runs only those steps). Checks:
 * the same final state object for object (normalised: final-state.ts); neither component exited
 * nor lost its Lease; the proxy stayed up, its caches equal the apiserver's, its caches serve the
 * informers' watches (none passed upstream once every informer ran, after the first step), and
 * every LIST and WATCH it passed upstream carries a reason from the expected list below; each step's time
 * through the proxy is reported next to its direct time and fails only beyond 2× plus a noise
 * allowance (see STEP_SLACK_MS).
 */
import assert from 'node:assert/strict';
import { loadavg } from 'node:os';
import { test } from 'node:test';
import { compareStates } from '../support/control-plane/final-state.ts';
import { proxyMode } from '../support/control-plane/proxy-modes.ts';
import { upstreamSince } from '../support/control-plane/proxy-reads.ts';
import { runSide, type SideResult } from '../support/control-plane/side.ts';
import { STEPS } from '../support/control-plane/workload.ts';

/**
 * Added to 2× the direct time before a slow step fails: on the shared 2-core machine one step's
 * time varies by several seconds between two runs of the same side, so a step of a few seconds
 * cannot be held to 2× (the times are printed either way).
 */
const STEP_SLACK_MS = 15_000;

/**
 * Why a LIST or WATCH of the components may pass upstream (docs/delegation.md), and when:
 * `not-cached` — the first request of a resource while `--resources=auto` starts its cache (its
 * watch is handed over to the cache at sync), and the Secrets `--auto-exclude` keeps out;
 * `write-pending` — a `resourceVersion=""` read after a write through the proxy the cache had
 * not seen within 3 s (the namespace controller's check LIST after a deletecollection whose items
 * its cache still holds, e.g. a Pod the controllers were still updating);
 * `not-synced`, `not-live`, `behind-upstream` — a read while a cache starts, or at
 * `resourceVersion=""` while the upstream watch is not proven live or behind an answer already
 * given (the namespace controller's check LIST after a deletecollection that matched nothing, of
 * a resource with no later event).
 */
const EXPECTED_UPSTREAM_READ_REASONS = new Set([
  'not-cached',
  'write-pending',
  'not-synced',
  'not-live',
  'behind-upstream',
]);

const steps = process.env.KCP_CP_STEPS
  ? STEPS.filter((s) => process.env.KCP_CP_STEPS!.split(',').includes(s.name))
  : STEPS;
const mode = process.env.KCP_CP_RESOURCES === 'list' ? 'list' : 'auto';

test('control plane through the proxy: the workload ends in the same state as direct', {
  timeout: 1_500_000,
}, async (t) => {
  const direct = await runSide({ kind: 'direct' }, { steps });
  const viaProxy = await runSide({ kind: 'proxy', ...proxyMode(mode) }, { steps });

  const rows = direct.times.map((d, i) => {
    const p = viaProxy.times[i]!;
    return `${d.step}: direct ${d.ms} ms, proxy ${p.ms} ms (${(p.ms / Math.max(d.ms, 1)).toFixed(2)}×)`;
  });
  t.diagnostic(
    `load average ${loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')}`,
  );
  t.diagnostic(`start-up: direct ${direct.startupMs} ms, proxy ${viaProxy.startupMs} ms`);
  t.diagnostic(
    `stale-informer requeues (KEP-5647): direct ${direct.staleReads}, proxy ${viaProxy.staleReads}`,
  );
  for (const r of rows) t.diagnostic(r);
  const reads = viaProxy.proxy!.reads;
  t.diagnostic(
    `proxy reads from the cache: ${JSON.stringify(reads.cache)}, watches open on the caches: ${reads.openCacheWatchers}`,
  );
  t.diagnostic(`proxy caches (${viaProxy.proxy!.cached.length}): ${viaProxy.proxy!.cached.join(',')}`);
  for (const [k, n] of Object.entries(reads.upstream).sort()) t.diagnostic(`proxy read upstream: ${k} ×${n}`);

  assert.deepEqual(compareStates(direct.state, viaProxy.state), [], 'final state direct vs proxy');
  for (const side of [direct, viaProxy] as SideResult[]) {
    const name = side.via.kind;
    assert.deepEqual(side.exited, [], `${name}: no component exited`);
    assert.deepEqual(side.leadershipLogLines, [], `${name}: no lost leadership in the logs`);
    assert.deepEqual(side.leases.end, side.leases.start, `${name}: the Leases kept their holders`);
  }
  assert.equal(viaProxy.proxy!.exitedEarly, false, 'the proxy stayed up');
  assert.deepEqual(viaProxy.proxy!.mismatches, [], 'every cache equals the apiserver');
  assert.ok(
    reads.openCacheWatchers >= 50,
    `the informers watch the caches (${reads.openCacheWatchers} open)`,
  );
  // Steady state: once every cache is synced and its passed-through watches are handed over, a
  // cached resource never sends a WATCH upstream again but the excluded Secrets'; a resource
  // whose informer started later (its first WATCH passes as `not-cached` and starts its cache)
  // is cached at the end.
  const steady = viaProxy.proxy!.steady;
  if (steps.length > 2) assert.ok(steady, 'the proxy reached a steady state before the last step');
  t.diagnostic(`steady state from step ${steady?.step}`);
  const later = steady ? upstreamSince(steady.reads, reads) : {};
  t.diagnostic(`in the steady state, ${Object.keys(later).length} kinds of upstream reads`);
  for (const [k, n] of Object.entries(later).sort())
    t.diagnostic(`in the steady state, upstream: ${k} ×${n}`);
  const cachedThen = new Set(steady?.caches ?? []);
  const cachedAtEnd = new Set(viaProxy.proxy!.cached);
  const watches = Object.keys(later).filter((k) => k.startsWith('WATCH ') && !k.endsWith(' secrets'));
  const resourceOf = (k: string) => k.split(' ')[2]!;
  assert.deepEqual(
    watches.filter((k) => cachedThen.has(resourceOf(k))),
    [],
    'no WATCH of a cached resource passed upstream in the steady state',
  );
  assert.deepEqual(
    watches.filter((k) => !cachedAtEnd.has(resourceOf(k)) || !/^WATCH not-(cached|synced) /.test(k)),
    [],
    'a resource first watched later passed upstream only until its cache started, and is cached at the end',
  );
  const unexpected = Object.keys(reads.upstream).filter((k) => {
    const [verb, reason] = k.split(' ');
    return (verb === 'LIST' || verb === 'WATCH') && !EXPECTED_UPSTREAM_READ_REASONS.has(reason!);
  });
  assert.deepEqual(unexpected, [], 'LIST/WATCH passed upstream for an unexpected reason');
  const slow = direct.times.filter((d, i) => viaProxy.times[i]!.ms > 2 * d.ms + STEP_SLACK_MS);
  assert.deepEqual(
    slow.map((d) => d.step),
    [],
    `steps slower than 2× direct + ${STEP_SLACK_MS} ms`,
  );
});
