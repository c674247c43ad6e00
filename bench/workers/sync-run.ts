/**
 * One measurement of bench/tools/sync.ts, in its own process so its peak RSS is its own:
 *   node bench/workers/sync-run.ts <kubeconfig> <namespace|-> <mode> [resource, default configmaps]
 * mode: `watch-list` (sendInitialEvents stream), `list` (LIST+WATCH fallback exactly as client-go:
 * first page at RV="0", limit 500), `list-etcd` (forced paginated consistent LIST: RV="", limit
 * 500, served from etcd page by page). Prints one JSON line.
 */
import type { ListerWatcher } from '../../src/reflector/list-watch.ts';
import { HttpListerWatcher } from '../../src/reflector/list-watch.ts';
import { Reflector } from '../../src/reflector/reflector.ts';
import { createUpstream } from '../../src/upstream/connection.ts';
import { discoverResource } from '../../src/upstream/discovery.ts';
import { createLogger } from '../../src/util/logger.ts';
import { MapSink } from '../support/sync-support.ts';

const [kubeconfig, ns, mode, resource = 'configmaps'] = process.argv.slice(2);
if (!kubeconfig || !ns || !mode)
  throw new Error('usage: sync-run.ts <kubeconfig> <namespace|-> <watch-list|list|list-etcd> [resource]');
const up = await createUpstream({ kubeconfig });
const info = await discoverResource(up, resource);
// `-`: all namespaces (bench/run.ts syncs every pod).
const base = new HttpListerWatcher(up, info, ns === '-' ? undefined : ns);
let pages = 0;
const lw: ListerWatcher = {
  list: (o, s) => {
    pages++;
    return base.list(
      mode === 'list-etcd' && o.resourceVersion === '0' ? { ...o, resourceVersion: '' } : o,
      s,
    );
  },
  watch: (o, s) => base.watch(o, s),
};
const sink = new MapSink();
const rssBefore = process.memoryUsage().rss;
const t0 = performance.now();
const r = new Reflector({
  info,
  lw,
  sink,
  useWatchList: mode === 'watch-list',
  logger: createLogger({ level: 'info', destination: process.stderr }),
  progressIntervalMs: 2_000,
});
const done = r.run();
await sink.waitFor(() => sink.replaces === 1, 600_000, 'initial sync');
const ms = performance.now() - t0;
r.stop();
await done;
await up.close();
process.stdout.write(
  `${JSON.stringify({
    mode,
    objects: sink.objects.size,
    ms: Math.round(ms),
    listRequests: pages,
    rssBeforeMiB: Math.round(rssBefore / 2 ** 20),
    peakRssMiB: Math.round(process.resourceUsage().maxRSS / 1024),
  })}\n`,
);
process.exit(0);
