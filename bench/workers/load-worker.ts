/**
 * One autocannon run in its own (pinned) process, so the load generator's CPU is separate from
 * the server under test:  node bench/workers/load-worker.ts '<LoadSpec JSON>'  → one JSON line
 * ({@link LoadResult}). A `patchAnnotation` spec sends a merge-patch whose value changes on every
 * request, so the apiserver really writes instead of short-circuiting a no-op; a `tokens` spec
 * sends the next token of the list on every request (distinct client identities).
 */
import autocannon from 'autocannon';
import type { LoadResult, LoadSpec } from '../support/load.ts';

const spec = JSON.parse(process.argv[2] ?? '{}') as LoadSpec;
let n = 0;
const opts: autocannon.Options = {
  url: spec.url,
  connections: spec.connections,
  duration: spec.durationS,
  method: spec.method ?? 'GET',
  headers: spec.headers,
  timeout: 60,
};
if (spec.tokens?.length) {
  const tokens = spec.tokens;
  opts.requests = [
    {
      setupRequest: (req) => ({
        ...req,
        headers: { ...req.headers, authorization: `Bearer ${tokens[n++ % tokens.length]}` },
      }),
    },
  ];
} else if (spec.patchAnnotation) {
  opts.requests = [
    {
      setupRequest: (req) => ({
        ...req,
        body: JSON.stringify({ metadata: { annotations: { [spec.patchAnnotation!]: String(n++) } } }),
      }),
    },
  ];
}
// autocannon's histogram keeps whole milliseconds; its `response` event carries the exact time
// (ms, fractional), so the percentiles here resolve 0.01 ms (pass-through goals are "+1 ms").
const latencies: number[] = [];
const r = await new Promise<autocannon.Result>((resolve, reject) => {
  const instance = autocannon(opts, (err, res) => (err ? reject(err) : resolve(res)));
  instance.on('response', (_client, statusCode, _bytes, responseTime) => {
    if (statusCode >= 200 && statusCode < 300) latencies.push(responseTime);
  });
});
latencies.sort((a, b) => a - b);
const pct = (q: number) =>
  latencies.length
    ? Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]! * 100) / 100
    : 0;
const out: LoadResult = {
  requests: r.requests.total,
  rps: r.requests.average,
  p50Ms: pct(0.5),
  p99Ms: pct(0.99),
  bytesPerSec: r.throughput.average,
  non2xx: r.non2xx,
  errors: r.errors + r.timeouts,
  durationS: r.duration,
};
process.stdout.write(`${JSON.stringify(out)}\n`);
process.exit(0);
