/**
 * One autocannon run in its own (pinned) process, so the load generator's CPU is separate from
 * the server under test:  node bench/load-worker.ts '<LoadSpec JSON>'  → one JSON line
 * ({@link LoadResult}). A `patchAnnotation` spec sends a merge-patch whose value changes on every
 * request, so the apiserver really writes instead of short-circuiting a no-op; a `tokens` spec
 * sends the next token of the list on every request (distinct client identities).
 */
import autocannon from 'autocannon';
import type { LoadResult, LoadSpec } from './load.ts';

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
const r = await autocannon(opts);
const out: LoadResult = {
  requests: r.requests.total,
  rps: r.requests.average,
  p50Ms: r.latency.p50,
  p99Ms: r.latency.p99,
  bytesPerSec: r.throughput.average,
  non2xx: r.non2xx,
  errors: r.errors + r.timeouts,
  durationS: r.duration,
};
process.stdout.write(`${JSON.stringify(out)}\n`);
process.exit(0);
