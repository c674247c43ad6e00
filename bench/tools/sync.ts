/**
 * Initial-sync cost of the Reflector: time and peak RSS to sync N ConfigMaps (~1 KiB each) via
 * watch-list vs. via LIST (client-go's fallback rules) vs. a forced paginated LIST from etcd,
 * against a private real kube-apiserver (test/fixture). Each measurement runs in its own process.
 *
 *   npx node bench/tools/sync.ts 5000 50000      # N values; default 5000
 *
 * Prints a table; the apiserver is on the same 2-core machine, so numbers include its work.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createUpstream } from '../../src/upstream/connection.ts';
import { startFixture } from '../../test/fixture/index.ts';
import { toolArgs } from '../support/args.ts';
import { seedConfigMaps } from '../support/sync-support.ts';

const ns = toolArgs({})
  .positionals.map(Number)
  .filter((n) => n > 0);
const sizes = ns.length > 0 ? ns : [5000];
const modes = ['watch-list', 'list', 'list-etcd'] as const;
const runner = fileURLToPath(new URL('../workers/sync-run.ts', import.meta.url));

interface Row {
  mode: string;
  objects: number;
  ms: number;
  listRequests: number;
  rssBeforeMiB: number;
  peakRssMiB: number;
}

function run(kubeconfig: string, namespace: string, mode: string): Promise<Row> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [runner, kubeconfig, namespace, mode],
      { maxBuffer: 64 * 1024 * 1024, timeout: 900_000 },
      (err, stdout, stderr) => {
        if (err) return reject(new Error(`${mode}: ${err.message}\n${stderr.slice(-2000)}`));
        const progress = stderr.split('\n').filter((l) => l.includes('sync in progress')).length;
        const row = JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as Row;
        process.stderr.write(`bench: ${JSON.stringify(row)} (${progress} progress log lines)\n`);
        resolve(row);
      },
    );
  });
}

const f = await startFixture({ verbose: true });
const rows: Array<Row & { n: number; round: number }> = [];
try {
  const up = await createUpstream({ kubeconfig: f.kubeconfigs.adminToken });
  for (const n of sizes) {
    const namespace = await f.newNamespace(`bench-${n}`);
    const t0 = Date.now();
    await seedConfigMaps(up, namespace, n, { bytes: 1024, concurrency: 32 });
    process.stderr.write(`bench: seeded ${n} ConfigMaps in ${Date.now() - t0} ms\n`);
    // Two rounds, interleaved, so apiserver warm-up does not favour the later modes.
    for (let round = 1; round <= 2; round++) {
      for (const mode of modes)
        rows.push({ n, round, ...(await run(f.kubeconfigs.adminToken, namespace, mode)) });
    }
  }
  await up.close();
} finally {
  await f.stop();
}
const header = [
  'N',
  'round',
  'mode',
  'objects',
  'sync ms',
  'LIST requests',
  'RSS before MiB',
  'peak RSS MiB',
];
const lines = rows.map((r) =>
  [r.n, r.round, r.mode, r.objects, r.ms, r.listRequests, r.rssBeforeMiB, r.peakRssMiB].map(String),
);
const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
const fmt = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
process.stdout.write([fmt(header), fmt(widths.map((w) => '-'.repeat(w))), ...lines.map(fmt), ''].join('\n'));
