/**
 * Summarises a V8 `.cpuprofile` (from `KCP_BENCH_CPU_PROF=DIR npm run bench …`, which passes
 * `--cpu-prof` to every proxy process): the functions with the most self time, and the total.
 *   node bench/tools/profile-top.ts FILE.cpuprofile [N=20]
 */
import { readFileSync } from 'node:fs';
import { toolArgs } from '../support/args.ts';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [file, n = '20'] = toolArgs({}).positionals;
if (!file) throw new Error('usage: profile-top.ts FILE.cpuprofile [N]');
const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(p.nodes.map((x) => [x.id, x]));
const self = new Map<string, number>();
let total = 0;
p.samples.forEach((id, i) => {
  const dt = p.timeDeltas[i] ?? 0;
  total += dt;
  const f = byId.get(id)!.callFrame;
  const key = `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(src|node_modules)\//, '$1/')}:${f.lineNumber + 1}`;
  self.set(key, (self.get(key) ?? 0) + dt);
});
const busy = total - [...self].filter(([k]) => k.startsWith('(idle)')).reduce((s, [, v]) => s + v, 0);
process.stdout.write(`total ${(total / 1e6).toFixed(1)} s, busy ${(busy / 1e6).toFixed(1)} s\n`);
for (const [k, v] of [...self]
  .filter(([k]) => !k.startsWith('(idle)'))
  .sort((a, b) => b[1] - a[1])
  .slice(0, Number(n)))
  process.stdout.write(
    `${((100 * v) / busy).toFixed(1).padStart(5)} %  ${(v / 1e3).toFixed(0).padStart(7)} ms  ${k}\n`,
  );
