/**
 * Issue 32, custom resources printed from their CRD's additionalPrinterColumns
 * (`src/printers/custom-resource.ts`): every column type, a filter, bracket keys, null, missing
 * and wrong-typed values, priority-1 columns, and a cluster-scoped CRD declaring none (Age), side
 * by side with the fixture apiserver (`test/support/table-side-by-side.ts`); a Table watch of
 * custom resources.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { eventually } from '../support/eventually.ts';
import { type TableKind, tableSuite, tableWatch } from '../support/table-side-by-side.ts';

const run = `t${Date.now().toString(36)}`;
const group = `${run}.example.com`;
const KINDS: TableKind[] = [
  [`ns:/apis/${group}/v1/widgets`, `widgets.${group}`],
  [`/apis/${group}/v1/plainthings`, `plainthings.${group}`],
];

tableSuite('issue 32: Table answers of custom resources equal the apiserver', KINDS, {
  run,
  // Printed from their CRDs, read from the CRDs' cache.
  alsoCached: ['customresourcedefinitions.apiextensions.k8s.io'],
  async setup(s) {
    const { create, meta, ago, ns, direct } = s;
    const schema = { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } };
    const columns = [
      { name: 'Str', type: 'string', jsonPath: '.spec.str' },
      { name: 'Replicas', type: 'integer', format: 'int32', jsonPath: '.spec.replicas' },
      { name: 'Ratio', type: 'number', description: 'how much', jsonPath: '.spec.ratio' },
      { name: 'Enabled', type: 'boolean', jsonPath: '.spec.enabled' },
      { name: 'Seen', type: 'date', jsonPath: '.status.lastSeen' },
      { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
      { name: 'Tags', type: 'string', priority: 1, jsonPath: '.spec.tags' },
      { name: 'First', type: 'string', priority: 1, jsonPath: '.spec.tags[0]' },
      { name: 'Map', type: 'string', priority: 1, jsonPath: '.spec.map' },
      { name: 'Nothing', type: 'string', jsonPath: '.spec.nothing' },
      { name: 'Label', type: 'string', jsonPath: ".metadata.labels['app']" },
    ];
    await create('/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {
      metadata: meta(`widgets.${group}`),
      spec: {
        group,
        names: { plural: 'widgets', kind: 'Widget' },
        scope: 'Namespaced',
        versions: [{ name: 'v1', served: true, storage: true, schema, additionalPrinterColumns: columns }],
      },
    });
    await create('/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {
      metadata: meta(`plainthings.${group}`),
      spec: {
        group,
        names: { plural: 'plainthings', kind: 'PlainThing' },
        scope: 'Cluster',
        versions: [{ name: 'v1', served: true, storage: true, schema }],
      },
    });
    await eventually('the custom resources served', 30_000, async () => {
      const r = await direct(`/apis/${group}/v1`);
      return r.status === 200 && r.body.includes('"widgets"') && r.body.includes('"plainthings"')
        ? true
        : undefined;
    });
    const W = `/apis/${group}/v1/namespaces/${ns}/widgets`;
    const widget = (name: string, spec: unknown, st?: unknown) => ({
      apiVersion: `${group}/v1`,
      kind: 'Widget',
      metadata: meta(name),
      spec,
      ...(st !== undefined ? { status: st } : {}),
    });
    await create(
      W,
      widget(
        'w-full',
        {
          str: 'hello <world>',
          replicas: 3,
          ratio: 0.25,
          enabled: true,
          tags: ['a', 'b'],
          map: { z: 1, a: 'x' },
          nothing: null,
        },
        {
          lastSeen: ago(3700),
          conditions: [
            { type: 'Synced', status: 'True' },
            { type: 'Ready', status: 'False' },
          ],
        },
      ),
    );
    await create(W, widget('w-empty', {}));
    await create(
      W,
      widget(
        'w-odd',
        { str: 7, replicas: 2.5, ratio: 4, enabled: 'yes', tags: [], map: [] },
        { lastSeen: 'not a date', conditions: 'none' },
      ),
    );
    await create(
      W,
      widget(
        'w-zero',
        { str: '', replicas: -1, ratio: 1e-7, enabled: false },
        { lastSeen: '0001-01-01T00:00:00Z' },
      ),
    );
    for (const n of ['pt-a', 'pt-b'])
      await create(`/apis/${group}/v1/plainthings`, {
        apiVersion: `${group}/v1`,
        kind: 'PlainThing',
        metadata: meta(`${run}-${n}`),
      });
  },
  async cleanup(s) {
    for (const c of ['widgets', 'plainthings'])
      await s.f.kubectl(['delete', 'crd', `${c}.${s.run}.example.com`, '--wait=false']);
  },
  more(s) {
    test("a Table watch of custom resources: the same events as the apiserver, the CRD's columns in the first only", async () => {
      const { f, create, meta, ns } = s;
      const widgets = `/apis/${run}.example.com/v1/namespaces/${ns}/widgets`;
      const wd = await tableWatch(s, f.server, widgets);
      const wv = await tableWatch(s, s.proxy.url, widgets);
      assert.ok(wv.fromCache, 'widgets watch from the cache');
      await eventually('initial widgets', 20_000, async () =>
        wd.lines.length >= 4 && wv.lines.length >= 4 ? true : undefined,
      );
      await create(widgets, {
        apiVersion: `${run}.example.com/v1`,
        kind: 'Widget',
        metadata: meta('w-new'),
        spec: { str: 'new', replicas: 1, tags: ['x'] },
        status: { conditions: [{ type: 'Ready', status: 'True' }] },
      });
      await eventually('the new widget', 20_000, async () =>
        wd.lines.length >= 5 && wv.lines.length >= 5 ? true : undefined,
      );
      await wd.stop();
      await wv.stop();
      assert.deepEqual(wv.lines, wd.lines);
      const cols = (wd.lines as { object: { columnDefinitions: unknown[] | null } }[]).map(
        (l) => l.object.columnDefinitions?.length ?? null,
      );
      assert.deepEqual(cols, [12, null, null, null, null]);
    });
  },
});
