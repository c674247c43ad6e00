/**
 * Issue 32, storage classes (`src/printers/storage-class.ts`: `printStorageClass`,
 * `printStorageClassList`), side by side with the fixture apiserver
 * (`test/support/table-side-by-side.ts`): the apiserver marks ` (default)` on a LIST only, on the
 * most recently created class annotated default of the page it prints (the beta annotation too;
 * equal creation times: the lowest name); a GET never. Classes: two annotated default created a
 * second apart, one with the beta annotation, one annotated `false`, one with every field set.
 * A paged LIST (`limit=2`) marks each page's own default, as the apiserver does.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { eventually } from '../support/eventually.ts';
import { masked, TABLE, type TableKind, tableSuite } from '../support/table-side-by-side.ts';

const KINDS: TableKind[] = [['/apis/storage.k8s.io/v1/storageclasses', 'storageclasses.storage.k8s.io']];
const NAMES = ['a-old-default', 'b-beta-default', 'c-plain', 'd-new-default', 'e-false'];

tableSuite('issue 32: Table answers of storage classes (printStorageClassList) equal the apiserver', KINDS, {
  async setup(s) {
    const { create, meta, run, direct } = s;
    const SC = '/apis/storage.k8s.io/v1/storageclasses';
    const sc = (name: string, annotations: Record<string, string>, extra: Record<string, unknown> = {}) =>
      create(SC, {
        metadata: meta(`${run}-${name}`, { annotations }),
        provisioner: 'example.com/p',
        ...extra,
      });
    const created = async (name: string) =>
      (JSON.parse((await direct(`${SC}/${run}-${name}`)).body) as { metadata: { creationTimestamp: string } })
        .metadata.creationTimestamp;
    await sc('a-old-default', { 'storageclass.kubernetes.io/is-default-class': 'true' });
    await sc('b-beta-default', { 'storageclass.beta.kubernetes.io/is-default-class': 'true' });
    await sc(
      'c-plain',
      {},
      {
        reclaimPolicy: 'Retain',
        volumeBindingMode: 'WaitForFirstConsumer',
        allowVolumeExpansion: true,
        parameters: { type: 'fast' },
        mountOptions: ['ro'],
      },
    );
    await sc('e-false', { 'storageclass.kubernetes.io/is-default-class': 'false' });
    // The most recent default: created in a later second than the others (creation times are seconds).
    const first = await created('b-beta-default');
    await eventually('a later second', 5_000, async () =>
      new Date().toISOString().replace(/\.\d+Z$/, 'Z') > first ? true : undefined,
    );
    await sc('d-new-default', { 'storageclass.kubernetes.io/is-default-class': 'true' });
  },
  async cleanup(s) {
    for (const n of NAMES) await s.f.kubectl(['delete', 'storageclass', `${s.run}-${n}`, '--wait=false']);
  },
  more(s) {
    test('the default marked on the LIST (its page), not on a GET: the apiserver and the cache agree', async () => {
      const list = `${KINDS[0]![0]}?labelSelector=${encodeURIComponent(s.sel)}`;
      const names = (body: string) =>
        (JSON.parse(body) as { rows: { cells: string[] }[] }).rows.map((r) => r.cells[0]);
      const want = await s.direct(list, TABLE);
      assert.deepEqual(names(want.body), [
        `${s.run}-a-old-default`,
        `${s.run}-b-beta-default`,
        `${s.run}-c-plain`,
        `${s.run}-d-new-default (default)`,
        `${s.run}-e-false`,
      ]);
      const got = await s.via(list, TABLE);
      assert.ok(got.fromCache);
      assert.deepEqual(masked(got.body), masked(want.body));
      // Pages of 2: the first page's default is its own most recent one.
      const page = `${list}&limit=2`;
      const [d, v] = [await s.direct(page, TABLE), await s.via(page, TABLE)];
      // a and b were created in the same second or b later: one of them, as the apiserver picks.
      assert.equal(names(d.body).filter((n) => n?.endsWith(' (default)')).length, 1, d.body);
      assert.deepEqual(masked(v.body), masked(d.body));
      const one = await s.via(`${KINDS[0]![0]}/${s.run}-d-new-default`, TABLE);
      assert.deepEqual(names(one.body), [`${s.run}-d-new-default`], 'a GET never marks it');
    });
  },
});
