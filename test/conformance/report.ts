/**
 * docs/conformance.md, rendered from the runs of scripts/conformance.ts: what was run (e2e.test
 * version, seed, focus, skip, feature gates, date, commit) so the table can be regenerated, the
 * totals per mode, every difference from direct, one row per spec, and the skipped families.
 */
import { type Difference, differences, passed, type Row, rows } from './compare.ts';
import type { SpecResult } from './junit.ts';
import { LISTED_RESOURCES, MODES, type Mode } from './runner.ts';
import type { SkipFamily } from './skips.ts';

/** What a report page says about how its runs were made. */
export interface ReportMeta {
  /** e2e.test's version (the fixture's, test/apiserver/VERSION). */
  version: string;
  seed: number;
  focus: string;
  /** Shown instead of the focus expression when set (a named list, whose specs the table lists). */
  focusLabel?: string;
  /** The `--ginkgo.skip` given besides the families (or ''). */
  extraSkip: string;
  /** ISO date of the run. */
  date: string;
  /** `git describe`-like commit of the proxy that ran. */
  commit: string;
  /** The fixture apiserver's feature gates ('' = the defaults). */
  featureGates: string;
  /** The fixture apiserver's flags beside its defaults ('' or absent: none). */
  apiserverFlags?: string;
  /** kube-controller-manager's flags beside the pods fixture's ('' or absent: none). */
  kcmFlags?: string;
  /** The extra flags every proxied mode ran with (`--proxy-arg`), space-separated ('' or absent: none). */
  proxyArgs?: string;
  /** Runs per mode. */
  repeat: number;
  /** The exact command that regenerates the page. */
  command: string;
}

/** The note of the two API Streaming specs that compare a metadata client's LIST items with its GETs or its informer's store. */
const METADATA_AS_JSON =
  "deliberate, where `secrets` are cached (listed) with the default `--protobuf-answers=json`: client-go's metadata client asks protobuf first; the apiserver answers protobuf, the proxy JSON, byte for byte the apiserver's answer to the JSON-only Accept of the same request. JSON list items carry `kind`/`apiVersion` (`PartialObjectMetadata`), protobuf ones none, and client-go clears the TypeMeta of a GET's object and of each watch event's, not of list items, so the spec's `cmp.Equal` of LIST items with GETs (or with the informer's store) fails on TypeMeta alone. With `--protobuf-answers=cache` the proxy answers the apiserver's protobuf bytes and the spec passes (2/2, docs/conformance-metadata-protobuf.md; design.md, \"Deliberate differences from the apiserver\")";

/**
 * Known differences: a spec name (exact) → what it is and why it is not fixed here. They still
 * count as differences in the totals.
 */
export const KNOWN_DIFFERENCES: Record<string, string> = {
  '[sig-auth] SelfSubjectReview should support SelfSubjectReview API operations':
    'deliberate, in the plain-HTTP modes (sidecar, listed): the spec creates a SelfSubjectReview as an impersonated user (`Impersonate-User`, `-Uid`, `-Extra-*`) and no credential of its own; the apiserver answers its first request (`authentication.k8s.io/v1alpha1`, not served by default) 404 NotFound, on which the spec returns as passed; the proxy answers 403 ("Impersonate-* headers arrived without a credential …"), as for the API priority and fairness classification spec (design.md, "Deliberate differences from the apiserver")',
  "[sig-api-machinery] API Streaming (aka. WatchList) [FeatureGate:WatchList] should NOT be requested by metadata client's List method when WatchListClient is enabled [Beta]":
    METADATA_AS_JSON,
  '[sig-api-machinery] API Streaming (aka. WatchList) [FeatureGate:WatchList] should be requested by metadatainformer when WatchListClient is enabled [Beta]':
    METADATA_AS_JSON,
  '[sig-api-machinery] API priority and fairness should ensure that requests can be classified by adding FlowSchema and PriorityLevelConfiguration':
    'deliberate, in the plain-HTTP modes (sidecar, listed): the spec sends `GET /version` with `Impersonate-User: noxu` and no credential of its own (client-go sends none to an http:// server); the apiserver answers 200 with the `X-Kubernetes-PF-*` headers of the FlowSchema that matched `noxu`, the proxy a 403 Status ("Impersonate-* headers arrived without a credential, and kube-cache-proxy never lends its own credentials to impersonate …"), since passing them on would lend the proxy\'s rights to every local user; with TLS + `--delegated-auth` the client\'s token travels with them and the spec passes (design.md, "Deliberate differences from the apiserver")',
  '[sig-api-machinery] Servers with support for API chunking should support continue listing from the last key if the original version has been compacted away, though the list is inconsistent [Conformance] [Slow]':
    'fixed since this difference was found: the proxy answered a continue token at a revision etcd had compacted from its cache (200) where the apiserver answers 410 Expired with an "inconsistent" continue token; such reads now go upstream below the compaction floor the proxy learns (test/e2e/proxy-compaction.test.ts)',
  '[sig-api-machinery] MutatingAdmissionPolicy [Privileged:ClusterAdmin] should support MutatingAdmissionPolicy API operations [Conformance]':
    'fixed since this difference was found: the GET right after a PATCH through the proxy returned the object without the PATCH (the spec then panicked on a nil annotations map, mutatingadmissionpolicy.go:328): the PATCH was sent while the on-demand cache of mutatingadmissionpolicies was starting and was not tracked for read-your-writes; tracking is now decided when the answer arrives (test/e2e/on-demand-read-your-writes.test.ts, test/integration/on-demand-writes.test.ts)',
  '[sig-api-machinery] Garbage collector should delete jobs and pods created by cronjob':
    "not a difference of the proxy: the spec's CronJob is scheduled `*/1 * * * ?`, so its first Job comes at the next minute boundary, and the spec waits for it; its duration is the time left in the minute it started plus about 1 s. In the 3-run matrix of 2026-12-06 21:21 UTC each of the 12 runs took 60 s minus the second of the minute it started at, within 2.5 s (direct 49.6, 6.2, 7.2 s starting at seconds 11, 54, 54; sidecar 20.6, 1.1, 5.9 s at 40, 59.9, 56.6; delegated 34.9, 33.2, 54.2 s at 25.9, 27.1, 6.7; listed 41.7, 56.1, 47.2 s at 18.8, 4.9, 13.4; e2e.log step times), so which mode's median comes out longer is where its runs fell in the minute. Focused reruns, 3 per mode: docs/conformance-timing-gc.md",
  '[sig-api-machinery] ResourceQuota should apply changes to a resourcequota status [Conformance]':
    "not a difference of the proxy: after its last status patch the spec polls (every 5 s, immediately first, up to 6 min) until kube-controller-manager's quota controller resets the status, which it does only at its full resync (`--resource-quota-sync-period`); the steps before took about 0.1 s in each mode. With the default 5 min the spec's duration was where it fell in that cycle (5.1 s direct against 295.3 s through the proxy in one focused pair, 15.4 s direct against 50.9 and 85.2 s in one matrix run), direct as through the proxy; the runner now sets 2 s (the page's kube-controller-manager flags), so the reset comes before the second poll. Run on its own with the default it found a real difference, since fixed: its first LIST of resourcequotas started the on-demand cache (answered upstream at RV N), and its watch from N got 410 from the cache where the apiserver streams the events (test/e2e/on-demand-watch-resume.test.ts). Focused reruns: docs/conformance-timing-quota.md",
  '[sig-api-machinery] ResourceQuota should create a ResourceQuota and capture the life of a custom resource.':
    "not a difference of the proxy: the spec creates a CRD, then updates a quota every 2 s until kube-controller-manager's quota controller counts the new resource, which it learns at its discovery sync, every 30 s from its start (`ResourceQuotaController.Sync(…, 30*time.Second)`, hardcoded in `cmd/kube-controller-manager/app/core.go`; the spec's comment: \"needs to take 30 seconds at most\"), so its duration is its steps plus the time to that controller's next sync. In the 3-run matrix the controller's log (kept for runs 2 and 3) shows the CRD's count evaluator created 150.3 to 181.6 s (5 or 6 × 30 s) after its first ones, 1.5 to 24.3 s after the spec created the CRD (direct #3 7.7 s, sidecar #3 3.8, delegated #2 1.5 and #3 24.3, listed #2 18.4 and #3 6.9); the CRD step took 4.6 to 8.6 s direct and 24.5 to 26.9 s in sidecar runs 1 and 2 (no controller log kept), where the proxy answered each of the spec's GETs of the quota from its cache in 1 to 159 ms and each following PUT was accepted (200), so no read was stale",
  '[sig-api-machinery] ResourceQuota should verify ResourceQuota with cross namespace pod affinity scope using scope-selectors.':
    "not a difference of the proxy: the spec creates a quota and polls (every 2 s) until kube-controller-manager's quota controller writes its status; the controller pauses its workers while it waits, up to 30 s, for the informers of the resources its discovery sync just found, and a CRD of the spec before it (CustomResourcePublishOpenAPI) deleted before its informer synced makes that wait run out. In listed #3 the controller logged that CRD's evaluator at 21:47:32.3 and `Timed out waiting for quota monitor sync` at 21:48:02.3, then wrote the quota's status at once (the spec saw it at 21:48:03.6, 28.5 s after creating the quota); in listed #1 (no controller log kept) it waited 26.4 s, the proxy forwarding each of its 14 GETs (resourcequotas are not in the listed mode's list) and the apiserver answering them in 4 to 122 ms without a status; the other 10 runs waited 0 to 2 s. Whether the discovery sync falls in that CRD's few seconds of life is the phase of the controller's 30 s cycle, in any mode",
  '[sig-api-machinery] CustomResourcePublishOpenAPI [Privileged:ClusterAdmin] removes definition from spec when one version gets changed to not be served [Conformance]':
    "not a difference of the proxy (1 of 3 listed runs, under load average 39 to 46): the spec's cleanup deletes its CRD (200 at 21:53:58.2 in listed #3) and then waits up to 30 s for the version to leave discovery; the proxy forwarded all 60 of its `GET /apis/crd-publish-openapi-test-multi-to-single-ver.example.com/v5` (a discovery path, never cached) and the apiserver answered each 200 until the spec gave up (`failed to delete CustomResourceDefinition …: context deadline exceeded`), so it was the apiserver's CRD finalizer that had not finished; the two other listed runs and all 9 others passed",
  '[sig-storage] CSIStorageCapacity should support CSIStorageCapacities API operations [Conformance]':
    "not shown to be the proxy's, not explained either: the spec is a dozen sequential API calls (0.2 s direct); in listed #2 and #3 (45.8 and 20.0 s; #1 1.3 s) and sidecar #3 (13.4 s) it ran during a stall of its whole stack at load average 39 to 46 (the second wave, 21:54 to 21:58 UTC), right after the previous spec's namespace was deleted: for 10 to 45 s requests took seconds whether the proxy answered them from its cache (the new namespace's ServiceAccount LIST, 4.2, 5.3 and 8.2 s in the three runs) or passed them on (`GET /api`, `/apis/storage.k8s.io`: 0.6 to 4.2 s; the namespace POST 1.1 to 3.1 s), the proxy logging nothing else and its request lines ending spread over the stall, not bunched (no single long block of its event loop), then all took milliseconds again. direct #3 ran the spec at the same moment in 0.3 s, so the stall was in the proxied stacks (the proxy's process, or its cache waiting for the apiserver's watch to reach a fresh resourceVersion, or that apiserver), not traced further. Run on its own, 3 runs per mode at load average 12 to 16 (2026-12-06 from 22:11 UTC, `--focus='CSIStorageCapacity should support CSIStorageCapacities API operations' --modes=direct,listed,sidecar --repeat=3`), it took 0.24 to 0.28 s direct, 0.21 to 0.50 s listed and 0.30 to 0.31 s in sidecar mode: the stall did not come back without the load",
  '[sig-api-machinery] StorageVersionMigration CRUD Tests storagemigration.k8s.io/v1 StorageVersionMigration [Conformance]':
    "not a difference of the proxy's answers: the spec's duration swings with its update conflicts against kube-controller-manager's storage-version-migrator, which writes the object's status right after each of the spec's writes; each conflict costs a 2 s poll (the e2e framework's Eventually interval), and so does a first informer check that misses a write's event. Measured: direct 6.7 and 16.5 s (1 and 3 conflicts), through the proxy 11.2 and 17.1 s (3 and 4), with an experimental proxy that held each write's answer until its cache had the event (no faster than an earlier run without it, direct 7.2 s and proxy 16.9 s, so it was not kept)",
};

const cellText = (c: Row['cells'][Mode]) => {
  if (!c) return '—';
  const ok = c.states.filter((s) => s === 'passed').length;
  const verdict = c.states.length === 1 ? c.states[0]! : `${ok}/${c.states.length} passed`;
  return `${verdict} ${c.seconds.toFixed(1)} s`;
};

const esc = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** One totals line per mode: passed/failed/other, and the shortfalls against direct. */
function totals(
  all: readonly Row[],
  modes: readonly Mode[],
  diffs: readonly Difference[],
  health: Partial<Record<Mode, string>>,
): string[] {
  const out = [
    '| mode | how | specs | passed | failed | differences from direct (result) | slower than allowed | the proxy after each run |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const m of modes) {
    const cells = all.map((r) => r.cells[m]).filter((c) => c !== undefined);
    const ok = cells.filter((c) => passed(c)).length;
    const failed = cells.filter((c) => c.states.some((s) => s !== 'passed' && s !== 'skipped')).length;
    const res =
      m === 'direct' ? '—' : String(diffs.filter((d) => d.mode === m && d.kind === 'result').length);
    const slow = m === 'direct' ? '—' : String(diffs.filter((d) => d.mode === m && d.kind === 'time').length);
    const how = MODES[m].describe.replace('$LISTED', LISTED_RESOURCES);
    out.push(
      `| ${m} | ${how} | ${cells.length} | ${ok} | ${failed} | ${res} | ${slow} | ${health[m] ?? '—'} |`,
    );
  }
  return out;
}

/** The totals as one sentence (the README's status line quotes it). */
export function totalsSentence(runs: Partial<Record<Mode, SpecResult[][]>>): string {
  const all = rows(runs);
  const modes = Object.keys(runs) as Mode[];
  const diffs = differences(all);
  const parts = modes.map((m) => {
    const cells = all.map((r) => r.cells[m]).filter((c) => c !== undefined);
    return `${m} ${cells.filter((c) => passed(c)).length} of ${cells.length} passed`;
  });
  const res = diffs.filter((d) => d.kind === 'result').length;
  const slow = diffs.filter((d) => d.kind === 'time').length;
  return `${parts.join(', ')}; ${res} result difference${res === 1 ? '' : 's'}, ${slow} over the time allowance`;
}

/**
 * The whole page. `runs`: mode → the spec lists of its repeats (direct first); `health`: per
 * proxied mode, how the proxy came out of its runs (up or not, caches equal to the apiserver's).
 */
export function renderReport(
  meta: ReportMeta,
  runs: Partial<Record<Mode, SpecResult[][]>>,
  families: readonly SkipFamily[],
  health: Partial<Record<Mode, string>> = {},
): string {
  const modes = (['direct', 'sidecar', 'delegated', 'listed'] as const).filter((m) => runs[m]);
  const all = rows(runs);
  const diffs = differences(all);
  const lines = [
    '# Upstream e2e suite: direct and through the proxy',
    '',
    'Generated by `npm run conformance` (scripts/conformance.ts; how to run it: [testing.md](testing.md#the-upstream-e2e-suite));',
    'do not edit by hand. Each mode ran against its own fresh pods fixture (kube-apiserver, etcd,',
    'kube-controller-manager with every default controller, kube-scheduler, one KWOK node whose exec',
    'runs nothing). Goal: every spec that passes direct passes through the proxy in every mode, in',
    'at most max(2 × its direct time, direct + 10 s).',
    '',
    '| run | value |',
    '| --- | --- |',
    `| e2e.test | ${meta.version} (\`k8s.io/kubernetes/test/e2e\`) |`,
    `| date | ${meta.date} |`,
    `| commit | ${meta.commit} |`,
    `| seed | ${meta.seed} |`,
    `| focus | ${meta.focusLabel ?? `\`${esc(meta.focus)}\``} |`,
    `| skip | the families below${meta.extraSkip ? `, and \`${esc(meta.extraSkip)}\`` : ''} |`,
    `| feature gates | ${meta.featureGates || `the defaults of kube-apiserver ${meta.version} (none set)`} |`,
    ...(meta.apiserverFlags
      ? [`| apiserver flags | \`${esc(meta.apiserverFlags)}\` (besides the defaults) |`]
      : []),
    ...(meta.kcmFlags
      ? [`| kube-controller-manager flags | \`${esc(meta.kcmFlags)}\` (besides the pods fixture's) |`]
      : []),
    `| proxy flags | ${meta.proxyArgs ? `\`${esc(meta.proxyArgs)}\` in every proxied mode, after the mode's own` : "each mode's own (below), no others"} |`,
    `| runs per mode | ${meta.repeat} (durations are medians) |`,
    `| command | \`${esc(meta.command)}\` |`,
    '',
    '## Totals',
    '',
    ...totals(all, modes, diffs, health),
    '',
    '## Differences',
    '',
  ];
  if (diffs.length === 0) lines.push('None.');
  for (const d of diffs) {
    const what =
      d.kind === 'result'
        ? `passed direct (${d.direct.seconds.toFixed(1)} s), ${d.proxied.states.join('/')} through the proxy (${d.proxied.seconds.toFixed(1)} s)`
        : `${d.proxied.seconds.toFixed(1)} s through the proxy, ${d.direct.seconds.toFixed(1)} s direct (allowed ${d.allowed.toFixed(1)} s)`;
    lines.push(`- **${d.mode}**: ${esc(d.name)}: ${what}.`);
    const known = KNOWN_DIFFERENCES[d.name];
    if (known) lines.push(`  ${known}.`);
    if (d.proxied.message)
      lines.push(`  Failure: \`${esc(d.proxied.message.split('\n')[0]!.slice(0, 300))}\``);
  }
  lines.push(
    '',
    '## Per spec',
    '',
    `| spec | ${modes.join(' | ')} |`,
    `| --- | ${modes.map(() => '---').join(' | ')} |`,
    ...all.map((r) => `| ${esc(r.name)} | ${modes.map((m) => cellText(r.cells[m])).join(' | ')} |`),
    '',
    '## Skipped families',
    '',
    '| family | pattern | reason |',
    '| --- | --- | --- |',
    ...families.map((f) => `| ${f.family} | \`${esc(f.pattern)}\` | ${esc(f.reason)} |`),
    '',
  );
  return lines.join('\n');
}
