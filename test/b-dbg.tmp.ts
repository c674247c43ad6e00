import { sharedFixture } from './fixture/index.ts';
import { IdentityClient, matrixIdentities } from './support/identities.ts';
import { matrixCells } from './support/identity-matrix.ts';
import { startProxy } from './support/proxy.ts';

const f = await sharedFixture();
const c = new IdentityClient(f.caPem);
const ids = matrixIdentities(f);
const cells = matrixCells({ own: f.limitedNamespace, other: 'idm-59ltlx', run: 'rpbdm80' });
const p = await startProxy(f, {
  resources: 'configmaps,pods',
  delegatedAuth: true,
  args: (process.env.ARGS ?? '').split(' ').filter(Boolean),
});
const only = process.env.CELLS ?? 'WATCH';
for (const id of ids.filter((i) => !process.env.ID || i.name === process.env.ID)) {
  for (const cell of cells.filter((x) => x.name.includes(only))) {
    const t0 = Date.now();
    const a = await Promise.race([
      c.send(p.url, id, cell),
      new Promise<any>((r) => setTimeout(() => r({ status: 'TIMEOUT', body: '' }), 8000)),
    ]);
    console.log(
      id.name,
      cell.name,
      a.status,
      Date.now() - t0,
      'ms',
      a.body.slice(0, 250).replace(/\n/g, ' | '),
    );
  }
}
process.exit(0);
