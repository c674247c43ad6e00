/**
 * Does the proxy's memory level off under requests for resources that do not exist? Starts a
 * private fixture and the proxy as its own process (`--resources=auto` unless `--extra-args`
 * says otherwise, with the memory hook), then sends `--n` GETs of random group/version/resource
 * paths (test/support/random-paths.ts) with the admin's token, `--concurrency` at a time over
 * keep-alive connections, and every `--every` requests samples the proxy's RSS, JS heap,
 * external + array buffers (`process.memoryUsage()`), its open file descriptors and sockets
 * (/proc/PID/fd), and at the end the same after two forced full collections.
 * `--env K=V` (repeatable) sets the proxy's environment (e.g. `MALLOC_ARENA_MAX=2`: is growth
 * glibc arenas?).
 *   node bench/tools/random-names-rss.ts [--n 45000] [--every 5000] [--concurrency 32] [--extra-args "…"] [--env K=V]
 */
import { readdirSync, readlinkSync } from 'node:fs';
import { Agent, request } from 'undici';
import { startFixture } from '../../test/fixture/index.ts';
import { prng } from '../../test/support/prng.ts';
import { randomResourcePath } from '../../test/support/random-paths.ts';
import { toolArgs, words } from '../support/args.ts';
import { pin, rssBytes } from '../support/proc.ts';
import { startProxy } from '../support/proxy-process.ts';

const args = toolArgs({
  numbers: { n: 45_000, every: 5_000, concurrency: 32 },
  lists: ['extra-args', 'env'],
});
const extraArgs = words(args['extra-args']);
const env = Object.fromEntries(args.env.map((kv) => kv.split('=', 2) as [string, string]));
const { n, every, concurrency } = args;
const MB = 1024 * 1024;
const mb = (b: number) => (b / MB).toFixed(1);

/** Open descriptors of `pid`: all, and how many are sockets. */
function fds(pid: number): { all: number; sockets: number } {
  let all = 0;
  let sockets = 0;
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    all++;
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('socket:')) sockets++;
    } catch {
      // closed meanwhile
    }
  }
  return { all, sockets };
}

pin(process.pid, '1');
const f = await startFixture({ verbose: false });
for (const p of Object.values(f.pids())) pin(p, '0');
const p = await startProxy({
  kubeconfig: f.kubeconfigs.adminToken,
  resources: ['auto'],
  cpu: '1',
  memoryHook: true,
  extraArgs,
  env,
});
const agent = new Agent({ connections: concurrency });
const rows: string[] = [];
const sample = async (sent: number, cmd = 'sample') => {
  const m = await p.memory(cmd);
  const d = fds(p.pid);
  const row =
    `${String(sent).padStart(6)} ${cmd === 'gc' ? 'after GC' : '        '} rss ${mb(rssBytes(p.pid))} MiB, heap used ${mb(m.heapUsed)} / total ${mb(m.heapTotal)}, ` +
    `external ${mb(m.external)} (array buffers ${mb(m.arrayBuffers)}) MiB; fds ${d.all}, sockets ${d.sockets}`;
  process.stderr.write(`${row}\n`);
  rows.push(row);
};
try {
  const rand = prng(2929);
  const headers = { accept: 'application/json', authorization: `Bearer ${f.tokens.admin}` };
  await sample(0);
  let sent = 0;
  while (sent < n) {
    const end = Math.min(n, sent + every);
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (sent < end) {
          sent++;
          const r = await request(`${p.url}${randomResourcePath(rand)}`, { dispatcher: agent, headers });
          await r.body.dump();
        }
      }),
    );
    await sample(sent);
  }
  await sample(sent, 'gc');
  process.stdout.write(
    `extra args: ${extraArgs.join(' ') || '(none)'}; ${n} random paths\n${rows.join('\n')}\n`,
  );
} finally {
  await agent.close();
  await p.stop();
  await f.stop();
}
