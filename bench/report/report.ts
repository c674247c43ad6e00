/**
 * Renders bench/run.ts results: a Markdown report (tables + headline ratios) and a hand-written
 * SVG chart (LIST req/s by query and target, log scale; watch p99 delivery latency by watcher
 * count), and rewrites the generated blocks of the documentation ({@link updateDocs}).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { fmt, table as markdownTable } from './markdown.ts';
import { renderNodeLocal } from './node-local-report.ts';
import type { BenchResults, WatchRowView } from './results.ts';

const mib = (b: number) => fmt(b / 2 ** 20, 1);

/** A Markdown table (bench/report/markdown.ts) followed by a newline. */
const table = (header: string[], rows: Array<Array<string | number>>) => `${markdownTable(header, rows)}\n`;

const QUERY: Record<string, string> = {
  'all-rv0': 'LIST all pods, RV=0',
  'all-rv': 'LIST all pods, RV=""',
  namespace: 'LIST one namespace',
  node: 'LIST spec.nodeName=X',
  get: 'GET one pod',
};

/** The headline ratios, computed from the rows (NaN where a row is missing). */
export function headline(r: BenchResults) {
  const rps = (q: string, t: string) =>
    r.list.find((x) => x.query === q && x.target === t)?.rps ?? Number.NaN;
  const w1000 = (t: string) =>
    r.watch.find(
      (x) =>
        x.watchers === Math.max(...r.watch.map((y) => y.watchers)) &&
        x.target === t &&
        x.writer.target !== 'max',
    );
  const up = (t: string) =>
    r.upstream.find((x) => x.probes === Math.max(...r.upstream.map((y) => y.probes)) && x.target === t);
  const cold = r.cold.proxy.filter((x) => x.objects > 0);
  return {
    listProxyVsDirectGzip: rps('all-rv0', 'proxy') / rps('all-rv0', 'direct (gzip)'),
    listProxyVsDirectIdentity: rps('all-rv0', 'proxy') / rps('all-rv0', 'direct (identity)'),
    listProxyVsCeiling: rps('all-rv0', 'proxy') / rps('all-rv0', 'ceiling'),
    fanout: { watchers: w1000('proxy')?.watchers, proxy: w1000('proxy'), direct: w1000('direct') },
    upstream: { probes: up('proxy')?.probes, proxy: up('proxy'), direct: up('direct') },
    rssPerJsonByte: cold.map((c) => ({ what: c.what, ratio: c.rssPerJsonByte })),
    identity: ['get', 'namespace'].map((q) => {
      const row = (t: string) => r.identity?.find((x) => x.query === q && x.target === t);
      const d = row('proxy (delegated auth)');
      return {
        query: q,
        delegated: d,
        vsNoAuth: (d?.rps ?? Number.NaN) / (row('proxy (no auth)')?.rps ?? Number.NaN),
        vsDirect: (d?.rps ?? Number.NaN) / (row('direct')?.rps ?? Number.NaN),
      };
    }),
  };
}

/**
 * The headline ratios as Markdown bullets (no trailing newline): what the README shows between
 * its `bench-headline` markers and the report under "Headline".
 */
export function renderHeadline(r: BenchResults): string {
  const h = headline(r);
  const out: string[] = [
    `- LIST all pods (RV=0): proxy ${fmt(h.listProxyVsDirectGzip, 2)}× the req/s of direct with gzip (what client-go asks for), ${fmt(h.listProxyVsDirectIdentity, 2)}× direct without gzip; proxy = ${fmt(h.listProxyVsCeiling * 100, 0)} % of the loopback ceiling.`,
  ];
  const fp = h.fanout.proxy;
  const fd = h.fanout.direct;
  if (fp && fd)
    out.push(
      `- Watch fan-out at ${fp.watchers} watchers (${fp.writer.achievedRate} writes/s): delivery p50/p99 proxy ${fmt(fp.p50Ms)}/${fmt(fp.p99Ms)} ms vs direct ${fmt(fd.p50Ms)}/${fmt(fd.p99Ms)} ms; ${fmt(fp.eventsPerSec, 0)} vs ${fmt(fd.eventsPerSec, 0)} events/s delivered.`,
    );
  const up = h.upstream;
  if (up.proxy && up.direct)
    out.push(
      `- ${up.probes} client-go informers: upstream LIST+WATCH requests ${up.direct.lists + up.direct.watches} direct vs ${up.proxy.lists + up.proxy.watches} through the proxy (${up.direct.lists + up.direct.watches - up.proxy.lists - up.proxy.watches} saved), upstream bytes ${fmt(up.direct.upstreamMiB)} vs ${fmt(up.proxy.upstreamMiB)} MiB, apiserver CPU ${fmt(up.direct.apiserverCpuS)} vs ${fmt(up.proxy.apiserverCpuS)} s.`,
    );
  for (const x of h.identity) {
    if (!x.delegated) continue;
    out.push(
      `- ${x.delegated.identities} ServiceAccounts, ${QUERY[x.query] ?? x.query} over TLS with delegated auth: ${fmt(x.delegated.rps, 0)} req/s, p99 ${fmt(x.delegated.p99Ms, 0)} ms = ${fmt(x.vsNoAuth, 2)}× the proxy without auth, ${fmt(x.vsDirect, 1)}× direct; ${fmt(x.delegated.tokenReviewsPer1000, 2)} TokenReviews and ${fmt(x.delegated.subjectAccessReviewsPer1000, 2)} SubjectAccessReviews per 1,000 requests (TTLs ${x.delegated.ttlS} s, ${x.delegated.durationS} s run).`,
    );
  }
  out.push(
    `- Proxy RSS per byte of cached JSON: ${h.rssPerJsonByte.map((x) => `${x.what.replace('proxy ', '').replace(' (watch-list)', '')} ${fmt(x.ratio, 2)}`).join(', ')}.`,
  );
  const failed = r.failures ?? [];
  if (failed.length)
    out.push(
      `- **${failed.length} row${failed.length > 1 ? 's' : ''} FAILED** (no figures; errors in the report): ${failed.map((x) => `${x.scenario} / ${x.row}`).join('; ')}.`,
    );
  return out.join('\n');
}

/** The goals of issue 12 against this run's figures: [measure, value, goal]. */
export function goals(r: BenchResults): Array<[string, string, string]> {
  const out: Array<[string, string, string]> = [];
  const mem = r.cold.proxy.filter((x) => x.objects > 0);
  if (mem.length)
    out.push([
      'RSS per byte of cached JSON (2 s after ready)',
      mem
        .map(
          (x) => `${x.what.replace('proxy ', '').replace(' (watch-list)', '')} ${fmt(x.rssPerJsonByte, 2)}`,
        )
        .join('; '),
      '≤ 1.5',
    ]);
  const idle = r.cold.proxy.find((x) => x.objects === 0);
  if (idle) out.push(['idle RSS, empty cache (2 s after ready)', `${fmt(idle.rssMiB, 0)} MiB`, '≤ 80 MiB']);
  const one = (t: string) => r.upstream.find((x) => x.probes === 1 && x.target === t);
  const [up1, d1] = [one('proxy'), one('direct')];
  if (up1 && d1)
    out.push([
      "upstream bytes of one informer's cold sync, proxy ÷ direct",
      `${fmt(up1.upstreamMiB / d1.upstreamMiB, 2)} (${fmt(up1.upstreamMiB)} vs ${fmt(d1.upstreamMiB)} MiB)`,
      '≤ 1.0',
    ]);
  for (const op of [...new Set(r.passthrough.map((x) => x.op))]) {
    const p = r.passthrough.find((x) => x.op === op && x.target === 'proxy');
    const d = r.passthrough.find((x) => x.op === op && x.target === 'direct');
    if (!p || !d) continue;
    const ratio = p.ratio ?? p.rps / d.rps;
    const range =
      p.ratioMin !== undefined ? ` (${fmt(p.ratioMin, 2)}–${fmt(p.ratioMax ?? Number.NaN, 2)})` : '';
    const dp99 = p.p99DeltaMs ?? p.p99Ms - d.p99Ms;
    out.push([
      `pass-through ${op}, proxy ÷ direct req/s; p99 − direct p99`,
      `${fmt(ratio, 2)}${range}; ${dp99 >= 0 ? '+' : ''}${fmt(dp99, 2)} ms`,
      '≥ 0.9; ≤ +1 ms',
    ]);
  }
  return out;
}

/** The Markdown report; `svg` is the chart's relative path. */
export function renderMarkdown(r: BenchResults, svg: string): string {
  const m = r.meta;
  const out: string[] = [];
  out.push(
    `Run ${m.date.slice(0, 16).replace('T', ' ')} UTC (${m.mode} mode, ${fmt(m.totalS / 60)} min): kube-cache-proxy ${m.kubeCacheProxy} on Node ${m.node}, kube-apiserver ${m.kubeApiserver} + etcd (fixture), autocannon ${m.autocannon}; ` +
      `${m.machine.cpus} × ${m.machine.cpuModel}, ${m.machine.memGiB} GiB, shared with other work (load average ${m.machine.loadavgAtStart.join('/')} at start, ${m.loadavgAtEnd.join('/')} at end). ` +
      `Dataset: ${m.dataset.pods.toLocaleString('en-US')} pods of ~${m.dataset.podBytes / 1000} KB in ${m.dataset.namespaces} namespaces over ${m.dataset.nodes} nodes` +
      (m.dataset.configMaps ? `; ${m.dataset.configMaps.toLocaleString('en-US')} ConfigMaps of ~1 KB.` : '.'),
    '',
    `Pinning (taskset): ${Object.entries(m.pinning)
      .map(([k, v]) => `**${k}**: ${v}`)
      .join('; ')}. ` +
      `LIST/GET: ${m.durations.connections} connections × ${m.durations.listS} s per row; watch: ${m.durations.watchS} s of writes per row.`,
    '',
    `![benchmark chart](${svg})`,
    '',
    '**Headline**',
    '',
    renderHeadline(r),
    '',
  );
  const g = goals(r);
  if (g.length)
    out.push('**Goals** (medians where the row repeats)', '', table(['measure', 'this run', 'goal'], g));
  const failed = r.failures ?? [];
  if (failed.length)
    out.push(
      '**Failed rows** (recorded, the run went on)',
      '',
      table(
        ['scenario', 'row', 'at s', 'error'],
        failed.map((x) => [
          x.scenario,
          x.row,
          fmt(x.atS, 0),
          x.error.replaceAll('|', '\\|').replace(/\s+/g, ' ').trim(),
        ]),
      ),
    );

  out.push(
    '**LIST / GET** (req/s and latency per request; bytes on the wire; CPU in cores used by the server under test)',
    '',
  );
  out.push(
    table(
      [
        'query',
        'target',
        'encoding',
        'response',
        'req/s',
        'p50 ms',
        'p99 ms',
        'MiB/s',
        'server cores',
        'apiserver cores',
        'server RSS MiB',
        'errors',
      ],
      r.list.map((x) => [
        QUERY[x.query] ?? x.query,
        x.target,
        x.encoding,
        x.responseBytes > 2 ** 20 ? `${mib(x.responseBytes)} MiB` : `${fmt(x.responseBytes / 1024)} KiB`,
        fmt(x.rps),
        fmt(x.p50Ms, 0),
        fmt(x.p99Ms, 0),
        mib(x.bytesPerSec),
        fmt(x.serverCores, 2),
        fmt(x.apiserverCores, 2),
        fmt(x.serverRssMiB, 0),
        x.non2xx + x.errors,
      ]),
    ),
  );
  const wrow = (x: WatchRowView) => [
    x.watchers,
    x.target,
    x.writer.target === 'max'
      ? `max → ${x.writer.achievedRate}`
      : `${x.writer.target} → ${x.writer.achievedRate}`,
    fmt(x.eventsPerSec, 0),
    mib(x.bytesPerSec),
    fmt(x.p50Ms),
    fmt(x.p99Ms),
    fmt(x.maxMs, 0),
    fmt(x.serverCores, 2),
    x.healthyClosed,
  ];
  const wh = [
    'watchers',
    'target',
    'writes/s (target → achieved)',
    'events/s delivered',
    'MiB/s',
    'p50 ms',
    'p99 ms',
    'max ms',
    'server cores',
    'watches closed by the server',
  ];
  out.push(
    '**Watch fan-out** (delivery latency = receive time − the send timestamp in an annotation)',
    '',
    table(wh, r.watch.map(wrow)),
  );
  out.push(
    '**Slow consumer** (99 watchers read, 1 never reads; writer at 100/s: compare with the 100-watcher fan-out row)',
    '',
    table(
      [...wh, 'stalled watcher closed', 'bytes it got'],
      r.slowConsumer.map((x) => [...wrow(x), x.stalledClosed ? 'yes' : 'no', `${mib(x.stalledBytes)} MiB`]),
    ),
  );
  out.push(
    "**Upstream load** (N client-go informers on all pods; counted by the apiserver; proxy rows include the proxy's own cold start)",
    '',
    table(
      [
        'informers',
        'target',
        'upstream LIST',
        'upstream WATCH',
        'upstream MiB',
        'apiserver CPU s',
        'wall s',
        'informer sync p50/max ms',
      ],
      r.upstream.map((x) => [
        x.probes,
        x.target,
        x.lists,
        x.watches,
        fmt(x.upstreamMiB),
        fmt(x.apiserverCpuS, 2),
        fmt(x.wallS),
        `${x.syncP50Ms}/${x.syncMaxMs}`,
      ]),
    ),
  );
  const n = (x: number | undefined, d = 1) => fmt(x ?? Number.NaN, d);
  out.push(
    `**Memory and cold start** (one proxy process per resource, caching only it — the built CLI as the image runs it (\`${r.meta.memoryCli ?? 'dist/src/cli.js'}\`) — started with \`--expose-gc\`: spawn → /readyz 200; ` +
      '"2 s" = RSS and V8 heapUsed 2 s after ready; "GC" = the same after two forced full collections; ' +
      "per object = (row − empty-cache row) / objects; JSON bytes = the apiserver's identity LIST of the resource / its items; " +
      'live = heapUsed + ArrayBuffer bytes after GC)',
    '',
    table(
      [
        'what',
        'objects',
        'ready ms',
        'peak RSS MiB',
        'RSS MiB 2 s',
        'heapUsed MiB 2 s',
        'RSS MiB GC',
        'heapUsed MiB GC',
        'ArrayBuffers MiB GC',
        'RSS B/object',
        'JSON B/object',
        'RSS per JSON byte',
        'RSS per JSON byte, GC',
        'live per JSON byte',
      ],
      r.cold.proxy.map((x) => [
        x.what,
        x.objects,
        x.readyMs,
        fmt(x.peakRssMiB, 0),
        fmt(x.rssMiB, 0),
        n(x.heapUsedMiB, 0),
        n(x.rssGcMiB, 0),
        n(x.heapUsedGcMiB, 0),
        n(x.arrayBuffersGcMiB, 0),
        x.rssPerObjectBytes,
        x.jsonPerObjectBytes,
        fmt(x.rssPerJsonByte, 2),
        n(x.rssPerJsonByteGc, 2),
        n(x.livePerJsonByte, 2),
      ]),
    ),
  );
  for (const x of r.cold.proxy) {
    if (!x.heap) continue;
    out.push(
      `Heap snapshot after GC, ${x.what}: ${mib(x.heap.totalBytes)} MiB of self sizes, by class (V8 node type in parentheses; \`system / JSArrayBufferData\` = Buffer contents):`,
      '',
      table(
        ['class', 'count', 'MiB', 'share'],
        x.heap.classes.map((c) => [
          c.name.replaceAll('|', '\\|').slice(0, 60),
          c.count,
          mib(c.bytes),
          `${fmt((100 * c.bytes) / x.heap!.totalBytes, 0)} %`,
        ]),
      ),
    );
  }
  out.push(
    'Reflector alone (bench/workers/sync-run.ts: Reflector + a Map sink, no watch cache), watch-list vs. the paginated LIST fallback:',
    '',
    table(
      ['resource', 'mode', 'objects', 'sync ms', 'LIST requests', 'peak RSS MiB'],
      r.cold.reflector.map((x) => [x.resource, x.mode, x.objects, x.ms, x.listRequests, x.peakRssMiB]),
    ),
  );
  const pt = r.passthrough[0];
  out.push(
    pt?.reps
      ? `**Pass-through** (not cached: forwarded upstream; ${pt.connections} connection${pt.connections === 1 ? '' : 's'}, ${pt.reps} interleaved repetitions of ${r.meta.durations.passS} s per target; medians, range in parentheses; ratio and p99 Δ against DIRECT in the same repetition; \`kubectl proxy\` = a plain Go reverse proxy, pinned like kube-cache-proxy)`
      : '**Pass-through** (not cached: forwarded upstream)',
    '',
    table(
      ['request', 'target', 'req/s', 'ratio to direct', 'p50 ms', 'p99 ms', 'p99 Δ ms', 'errors'],
      r.passthrough.map((x) => [
        x.op,
        x.target,
        x.rpsMin !== undefined ? `${fmt(x.rps)} (${fmt(x.rpsMin)}–${n(x.rpsMax)})` : fmt(x.rps),
        x.ratioMin !== undefined ? `${n(x.ratio, 2)} (${fmt(x.ratioMin, 2)}–${n(x.ratioMax, 2)})` : '–',
        fmt(x.p50Ms, 2),
        fmt(x.p99Ms, 2),
        n(x.p99DeltaMs, 2),
        x.non2xx,
      ]),
    ),
  );
  if (r.identity?.length)
    out.push(
      '',
      `**Identities** (100 distinct ServiceAccounts that may read pods in one namespace, round robin, every row over TLS; decision-cache TTLs ${r.identity[0]!.ttlS} s, rows of ${r.identity[0]!.durationS} s; TokenReviews and SubjectAccessReviews as counted by the apiserver during the row)`,
      '',
      table(
        [
          'query',
          'target',
          'identities',
          'req/s',
          'p50 ms',
          'p99 ms',
          'errors',
          'TokenReviews',
          'SARs',
          'TR / 1,000 req',
          'SAR / 1,000 req',
        ],
        r.identity.map((x) => [
          QUERY[x.query] ?? x.query,
          x.target,
          x.identities,
          fmt(x.rps),
          fmt(x.p50Ms, 0),
          fmt(x.p99Ms, 0),
          x.non2xx + x.errors,
          x.tokenReviews,
          x.subjectAccessReviews,
          fmt(x.tokenReviewsPer1000, 2),
          fmt(x.subjectAccessReviewsPer1000, 2),
        ]),
      ),
    );
  if (r.streams?.length) {
    out.push(
      '',
      '**exec and port-forward** (bench/scenarios/streams.ts, on the pods fixture: `kubectl exec -- true` wall time, and a transfer echoed through `kubectl port-forward` over WebSocket)',
      '',
      table(
        ['scenario', 'target', 'median', 'min', 'max', 'unit', 'repetitions'],
        r.streams.map((x) => [
          x.scenario,
          x.target,
          fmt(x.median),
          fmt(x.min),
          fmt(x.max),
          x.unit,
          x.reps.join(', '),
        ]),
      ),
    );
  }
  if (r.nodeLocal)
    out.push(
      '',
      '**Node-local cache** (bench/scenarios/node-local.ts: agents direct vs through a proxy per node vs node proxies behind one pool proxy)',
      '',
      renderNodeLocal(r.nodeLocal),
    );
  // Sections end with a blank line of their own and start with one: one blank line between them,
  // as Biome formats Markdown (docs/benchmarks.md must stay `biome check`-clean).
  return out.join('\n').replace(/\n{3,}/g, '\n\n');
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');

/** A hand-written SVG: two panels of horizontal bars. */
export function renderSvg(r: BenchResults): string {
  const W = 860;
  const colors: Record<string, string> = {
    'direct (gzip)': '#8c8c8c',
    'direct (identity)': '#c7c7c7',
    direct: '#8c8c8c',
    proxy: '#2f6fdb',
    ceiling: '#2ca02c',
  };
  const parts: string[] = [];
  let y = 30;
  const panel = (
    title: string,
    groups: Array<{ label: string; bars: Array<{ name: string; value: number; text: string }> }>,
    log: boolean,
  ) => {
    parts.push(`<text x="10" y="${y}" font-size="15" font-weight="bold">${esc(title)}</text>`);
    y += 14;
    const all = groups.flatMap((g) => g.bars.map((b) => b.value)).filter((v) => v > 0);
    const max = Math.max(...all, 1);
    const min = Math.min(...all, 1);
    const x0 = 230;
    const span = W - x0 - 120;
    const scale = (v: number) =>
      v <= 0
        ? 0
        : log
          ? (span * (Math.log10(v) - Math.log10(min) + 0.3)) / (Math.log10(max) - Math.log10(min) + 0.3)
          : (span * v) / max;
    for (const g of groups) {
      y += 8;
      parts.push(`<text x="10" y="${y + 12}" font-size="12">${esc(g.label)}</text>`);
      for (const b of g.bars) {
        const w = Math.max(1, scale(b.value));
        parts.push(
          `<rect x="${x0}" y="${y}" width="${w.toFixed(1)}" height="13" fill="${colors[b.name] ?? '#999'}"/>`,
        );
        parts.push(
          `<text x="${(x0 + w + 4).toFixed(1)}" y="${y + 11}" font-size="11">${esc(`${b.name}: ${b.text}`)}</text>`,
        );
        y += 15;
      }
    }
    y += 24;
  };
  const queries = [...new Set(r.list.map((x) => x.query))];
  panel(
    'LIST/GET throughput, req/s (log scale; higher is better)',
    queries.map((q) => ({
      label: QUERY[q] ?? q,
      bars: r.list
        .filter((x) => x.query === q)
        .map((x) => ({ name: x.target, value: x.rps, text: fmt(x.rps) })),
    })),
    true,
  );
  const counts = [...new Set(r.watch.map((x) => x.watchers))];
  panel(
    'Watch delivery latency p99, ms at ~100 writes/s (log scale; lower is better)',
    counts.map((n) => ({
      label: `${n} watcher${n > 1 ? 's' : ''}`,
      bars: r.watch
        .filter((x) => x.watchers === n && x.writer.target !== 'max')
        .map((x) => ({ name: x.target, value: Math.max(x.p99Ms, 0.1), text: `${fmt(x.p99Ms)} ms` })),
    })),
    true,
  );
  const m = r.meta;
  parts.push(
    `<text x="10" y="${y}" font-size="11" fill="#555">${esc(`${m.date.slice(0, 10)} · kube-cache-proxy ${m.kubeCacheProxy} · kube-apiserver ${m.kubeApiserver} · Node ${m.node} · ${m.machine.cpus} CPU ${m.machine.cpuModel} · ${m.dataset.pods} pods`)}</text>`,
  );
  y += 10;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${y}" viewBox="0 0 ${W} ${y}" font-family="sans-serif">\n<rect width="100%" height="100%" fill="white"/>\n${parts.join('\n')}\n</svg>\n`;
}

/** The repository root (bench/ is one level below it). */
const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Replaces the text between `<!-- NAME:start -->` and `<!-- NAME:end -->` in the Markdown file
 * `path` with `md`. Returns false (and writes nothing) when the markers are missing.
 */
export function replaceMarkedBlock(path: string, name: string, md: string): boolean {
  const begin = `<!-- ${name}:start -->`;
  const text = readFileSync(path, 'utf8');
  const a = text.indexOf(begin);
  const b = text.indexOf(`<!-- ${name}:end -->`);
  if (a < 0 || b < a) return false;
  writeFileSync(path, `${text.slice(0, a + begin.length)}\n${md}\n${text.slice(b)}`);
  return true;
}

/**
 * Publishes a full run in the documentation: the whole report `md` (whose chart link is
 * `(svgName)`, relative to bench/results/) into docs/benchmarks.md between the `bench` markers,
 * and the headline bullets into README.md between the `bench-headline` markers. The chart link is
 * rewritten to bench/results/latest.svg as seen from docs/. Returns which files were updated.
 */
export function updateDocs(
  r: BenchResults,
  md: string,
  svgName: string,
  root: string = REPO_ROOT,
): { benchmarks: boolean; readme: boolean } {
  const doc = md.replaceAll(`(${svgName})`, '(../bench/results/latest.svg)');
  return {
    benchmarks: replaceMarkedBlock(`${root}/docs/benchmarks.md`, 'bench', doc),
    readme: replaceMarkedBlock(`${root}/README.md`, 'bench-headline', renderHeadline(r)),
  };
}
