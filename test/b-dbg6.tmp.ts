import { isDeepStrictEqual } from 'node:util';
import { sharedFixture } from './fixture/index.ts';
import { IdentityClient, matrixIdentities } from './support/identities.ts';
import { describeMismatch, matrixCells, pool, sendBoth } from './support/identity-matrix.ts';
import { startProxy } from './support/proxy.ts';

const f = await sharedFixture();
const c = new IdentityClient(f.caPem);
const ids = matrixIdentities(f).filter((i) => i.cert && (!process.env.ID || i.name === process.env.ID));
const cells = matrixCells({ own: f.limitedNamespace, other: 'idm-59ltlx', run: 'rpbdm80' }).filter(
  (x) => !x.watch,
);
const p = await startProxy(f, {
  run: 'cli',
  resources: 'configmaps,pods',
  delegatedAuth: true,
  args: ['--impersonate-certificate-clients', '--log-level', 'debug'],
});
const pairs = ids.flatMap((id) => cells.map((cell) => [id, cell] as const));
const rs = await pool(pairs, Number(process.env.N ?? 4), ([id, cell]) =>
  sendBoth(c, { direct: f.server, proxy: p.url }, id, cell, 1),
);
for (const r of rs)
  if (process.env.ALL)
    console.log(r.cell.name, r.direct.status, r.proxy.status, r.proxy.fromCache ? 'cache' : 'up');
const bad = rs.filter((r) => !isDeepStrictEqual(r.want, r.got));
console.log(bad.length, 'of', rs.length);
for (const r of bad.slice(0, 3)) console.log(describeMismatch(r).slice(0, 500));
console.log(
  p
    .logs()
    .filter((l) => String(l.user ?? '').includes('node') || (l.level as number) >= 40)
    .slice(0, 12)
    .map((l) => JSON.stringify(l).slice(0, 300))
    .join('\n'),
);
await p.stop();
process.exit(0);
