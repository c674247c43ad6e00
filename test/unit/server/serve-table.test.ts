/**
 * Table bodies from cached bytes (`serve-table.ts`, `printers/table-encoding.ts`): the shapes
 * checked against the fixture apiserver v1.37.2 (a LIST's metadata, `"rows":[]` and `null` for an
 * empty list, `includeObject`, a GET's trailing newline, a watch's columns in the first event only,
 * bookmarks printed as rows, the initial-events-end bookmark keeping its metadata, an ERROR event
 * passed as is).
 */

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bufferItems } from '../../../src/apimachinery/list-items.ts';
import { customResourcePrinter } from '../../../src/printers/custom-resource.ts';
import { tablePrinter } from '../../../src/printers/registry.ts';
import type { ServedCache } from '../../../src/server/cache-api.ts';
import { TableWatchEncoder, tableGet, tableList } from '../../../src/server/serve-table.ts';
import { resourceInfo } from '../../support/resource-info.ts';

const NOW = Date.parse('2026-12-06T11:37:08Z');
const cm = tablePrinter('', 'configmaps')!;
const roles = tablePrinter('rbac.authorization.k8s.io', 'roles')!;
const cache = { resource: resourceInfo('v1', 'configmaps', 'ConfigMap') } as unknown as ServedCache;
const META =
  '{"name":"a","namespace":"t1","uid":"u","resourceVersion":"226","creationTimestamp":"2026-12-06T11:37:06Z"}';
const ITEM = Buffer.from(`{"metadata":${META},"data":{"x":"1"}}`);
const OBJ = Buffer.from(`{"kind":"ConfigMap","apiVersion":"v1","metadata":${META},"data":{"x":"1"}}`);
const text = (chunks: Buffer[]) => Buffer.concat(chunks).toString();
const parse = (chunks: Buffer[]) => JSON.parse(text(chunks));

describe('Table bodies', () => {
  it('LIST: list meta, the printer columns, one row per item with its PartialObjectMetadata', () => {
    const t = parse(
      tableList(
        cache,
        { resourceVersion: '227', items: bufferItems([ITEM]), continue: 'tok', remainingItemCount: 1 },
        { printer: cm, version: 'v1', include: 'Metadata' },
        NOW,
      ),
    );
    assert.deepEqual(t.metadata, { resourceVersion: '227', continue: 'tok', remainingItemCount: 1 });
    assert.deepEqual(
      t.columnDefinitions.map((c: { name: string }) => c.name),
      ['Name', 'Data', 'Age'],
    );
    assert.deepEqual(t.rows, [
      {
        cells: ['a', 1, '2s'],
        object: { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: JSON.parse(META) },
      },
    ]);
  });
  it('includeObject=Object puts kind and apiVersion back on LIST items; None writes null', () => {
    const obj = parse(
      tableList(
        cache,
        { resourceVersion: '1', items: bufferItems([ITEM]) },
        { printer: cm, version: 'v1', include: 'Object' },
        NOW,
      ),
    );
    assert.deepEqual(obj.rows[0].object, JSON.parse(OBJ.toString()));
    const none = text(
      tableList(
        cache,
        { resourceVersion: '1', items: bufferItems([ITEM]) },
        { printer: cm, version: 'v1beta1', include: 'None' },
        NOW,
      ),
    );
    assert.ok(none.includes('"object":null}]}\n'), none);
    assert.ok(
      none.startsWith(
        '{"kind":"Table","apiVersion":"meta.k8s.io/v1beta1","metadata":{"resourceVersion":"1"},"columnDefinitions":[{"name":"Name"',
      ),
    );
  });
  it('an empty LIST: "rows":[] for pkg/printers kinds, null for the default convertor', () => {
    assert.ok(
      text(
        tableList(
          cache,
          { resourceVersion: '1', items: bufferItems([]) },
          { printer: cm, version: 'v1', include: 'Metadata' },
          NOW,
        ),
      ).endsWith(',"rows":[]}\n'),
    );
    assert.ok(
      text(
        tableList(
          cache,
          { resourceVersion: '1', items: bufferItems([]) },
          { printer: roles, version: 'v1', include: 'Metadata' },
          NOW,
        ),
      ).endsWith(',"rows":null}\n'),
    );
  });
  it("GET: the object's resourceVersion, one row, a trailing newline", () => {
    const body = text(
      tableGet(
        { object: { metadata: {} }, wire: [OBJ], metadataWire: () => [] },
        { printer: cm, version: 'v1', include: 'None' },
        NOW,
      ),
    );
    assert.ok(body.endsWith('"rows":[{"cells":["a",1,"2s"],"object":null}]}\n'), body);
    assert.equal(JSON.parse(body).metadata.resourceVersion, '226');
  });
  it('WATCH: columns in the first event only; bookmarks printed; initial-events-end keeps its metadata; ERROR as is', () => {
    const enc = new TableWatchEncoder({ printer: cm, version: 'v1', include: 'None' }, () => NOW);
    const first = JSON.parse(text(enc.encode(Buffer.from(`{"type":"ADDED","object":${OBJ}}\n`))));
    assert.equal(first.type, 'ADDED');
    assert.ok(Array.isArray(first.object.columnDefinitions));
    const bookmark = `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"309","annotations":{"k8s.io/initial-events-end":"true"}}}`;
    const end = text(
      enc.encode([Buffer.from('{"type":"BOOKMARK","object":'), Buffer.from(bookmark), Buffer.from('}\n')]),
    );
    // Byte for byte what the apiserver sent (captured on v1.37.2).
    assert.equal(
      end,
      '{"type":"BOOKMARK","object":{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"309"},"columnDefinitions":null,"rows":[{"cells":["",0,"\\u003cunknown\\u003e"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"309","annotations":{"k8s.io/initial-events-end":"true"}}}}]}}\n',
    );
    const error = Buffer.from(
      '{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","code":410}}\n',
    );
    assert.deepEqual(text(enc.encode(error)), error.toString());
  });
  it('attack: includeObject=Object prints the initial-events-end bookmark itself, kind and apiVersion included', () => {
    // `?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&includeObject=Object`
    // with a Table Accept: the cache printed the bookmark's row as a PartialObjectMetadata (as
    // for None and Metadata); the apiserver v1.37.2 converts it as any row's object under Object.
    // Both rows below are the fixture apiserver's bytes for the same request, side by side.
    const pod = tablePrinter('', 'pods')!;
    const cases = [
      {
        printer: cm,
        bookmark:
          '{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"2427","annotations":{"k8s.io/initial-events-end":"true"}}}',
        row: '{"cells":["",0,"\\u003cunknown\\u003e"],"object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"2427","annotations":{"k8s.io/initial-events-end":"true"}}}}',
      },
      {
        printer: pod,
        bookmark:
          '{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"2435","annotations":{"k8s.io/initial-events-end":"true"}},"spec":{"containers":null},"status":{}}',
        row: '{"cells":["","0/0","","0","\\u003cunknown\\u003e","\\u003cnone\\u003e","\\u003cnone\\u003e","\\u003cnone\\u003e","\\u003cnone\\u003e"],"object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"2435","annotations":{"k8s.io/initial-events-end":"true"}},"spec":{"containers":null},"status":{}}}',
      },
    ];
    for (const c of cases) {
      const enc = new TableWatchEncoder({ printer: c.printer, version: 'v1', include: 'Object' }, () => NOW);
      enc.encode(Buffer.from(`{"type":"ADDED","object":${OBJ}}\n`)); // the columns go with the first event
      const end = text(enc.encode(Buffer.from(`{"type":"BOOKMARK","object":${c.bookmark}}\n`)));
      const rv = JSON.parse(c.bookmark).metadata.resourceVersion;
      assert.equal(
        end,
        `{"type":"BOOKMARK","object":{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"${rv}"},"columnDefinitions":null,"rows":[${c.row}]}}\n`,
      );
    }
  });
});

describe('Table rows printed once per cached object and second', () => {
  const counted = () => {
    let calls = 0;
    const printer = {
      ...cm,
      row: (o: unknown, nowMs: number) => {
        calls++;
        return cm.row(o, nowMs);
      },
    };
    return { printer, calls: () => calls };
  };
  const entryA = {};
  const entryB = {};
  const page = { resourceVersion: '9', items: bufferItems([ITEM, ITEM]), entries: [entryA, entryB] };

  it('a LIST: each entry printed once within a second, the same bytes; again the next second', () => {
    const { printer, calls } = counted();
    const t = { printer, version: 'v1', include: 'Metadata' } as const;
    const first = text(tableList(cache, page, t, NOW));
    assert.equal(calls(), 2);
    assert.equal(text(tableList(cache, page, t, NOW + 900)), first);
    assert.equal(calls(), 2, 'the rows of the same second reused');
    const later = text(tableList(cache, page, t, NOW + 1000));
    assert.equal(calls(), 4, 'a new second prints again');
    assert.ok(later.includes('"cells":["a",1,"3s"]'), later);
  });

  it('another includeObject, Table version or printer prints its own row; items without entries are not kept', () => {
    const { printer, calls } = counted();
    tableList(cache, page, { printer, version: 'v1', include: 'Metadata' }, NOW);
    tableList(cache, page, { printer, version: 'v1', include: 'None' }, NOW);
    tableList(cache, page, { printer, version: 'v1beta1', include: 'None' }, NOW);
    assert.equal(calls(), 6);
    const other = counted();
    tableList(cache, page, { printer: other.printer, version: 'v1', include: 'Metadata' }, NOW);
    assert.equal(other.calls(), 2, 'a changed printer (a CRD update) prints again');
    const bare = { resourceVersion: '9', items: bufferItems([ITEM, ITEM]) };
    tableList(cache, bare, { printer, version: 'v1', include: 'Metadata' }, NOW);
    tableList(cache, bare, { printer, version: 'v1', include: 'Metadata' }, NOW);
    assert.equal(calls(), 10);
  });

  it('a GET and a watch event line shared by watchers: printed once per second', () => {
    const { printer, calls } = counted();
    const t = { printer, version: 'v1', include: 'Metadata' } as const;
    const obj = { object: { metadata: {} }, wire: [OBJ], metadataWire: () => [] };
    const a = text(tableGet(obj, t, NOW));
    assert.equal(text(tableGet(obj, t, NOW)), a);
    assert.equal(calls(), 1);
    const line = Buffer.from(`{"type":"ADDED","object":${OBJ}}\n`);
    const w1 = new TableWatchEncoder(t, () => NOW);
    const w2 = new TableWatchEncoder(t, () => NOW);
    const e1 = text(w1.encode(line));
    const e2 = text(w2.encode(line));
    assert.equal(e1, e2);
    assert.equal(calls(), 2, 'one print for both watchers');
    assert.ok(e1.includes('"resourceVersion":"226"'), e1);
  });

  it('a LIST then a GET of the same cached entry in the same second: the GET is a Table of that object', () => {
    // The row cache keeps a LIST row (chunks) and a GET row (chunks + resourceVersion) per entry:
    // a shared slot handed the LIST's value to the GET, whose resourceVersion was then undefined
    // (the 500 "Cannot read properties of undefined (reading 'replace')" of goJSON(undefined)).
    const t = { printer: cm, version: 'v1', include: 'Metadata' } as const;
    const entry = { object: { metadata: {} }, wire: [OBJ], metadataWire: () => [] };
    tableList(cache, { resourceVersion: '300', items: bufferItems([ITEM]), entries: [entry] }, t, NOW);
    const got = parse(tableGet(entry, t, NOW));
    assert.equal(got.metadata.resourceVersion, '226');
    assert.deepEqual(got.rows[0].cells, ['a', 1, '2s']);
    tableList(cache, { resourceVersion: '300', items: bufferItems([ITEM]), entries: [entry] }, t, NOW);
    assert.equal(
      parse(
        tableList(cache, { resourceVersion: '300', items: bufferItems([ITEM]), entries: [entry] }, t, NOW),
      ).rows.length,
      1,
    );
  });
});

describe('storage classes: the default marked on a LIST page only (printStorageClassList)', () => {
  const sc = tablePrinter('storage.k8s.io', 'storageclasses')!;
  const scCache = {
    resource: resourceInfo('storage.k8s.io/v1', 'storageclasses', 'StorageClass'),
  } as unknown as ServedCache;
  const item = (name: string, created: string, def: boolean) =>
    Buffer.from(
      `{"metadata":{"name":"${name}","uid":"u-${name}","resourceVersion":"5","creationTimestamp":"${created}"${
        def ? ',"annotations":{"storageclass.kubernetes.io/is-default-class":"true"}' : ''
      }},"provisioner":"p","reclaimPolicy":"Delete","volumeBindingMode":"Immediate"}`,
    );
  const a = item('a', '2026-12-06T11:00:00Z', true);
  const b = item('b', '2026-12-06T11:30:00Z', true);
  const c = item('c', '2026-12-06T11:00:00Z', false);
  const t = { printer: sc, version: 'v1', include: 'None' } as const;
  const names = (chunks: Buffer[]) => parse(chunks).rows.map((r: { cells: unknown[] }) => r.cells[0]);

  it('the most recently created default class of the page is marked; each page on its own', () => {
    const ea = {};
    const eb = {};
    const ec = {};
    assert.deepEqual(
      names(
        tableList(
          scCache,
          { resourceVersion: '9', items: bufferItems([a, b, c]), entries: [ea, eb, ec] },
          t,
          NOW,
        ),
      ),
      ['a', 'b (default)', 'c'],
    );
    // The page without b (limit=1, or a label selector): a is that page's default, in the same second.
    assert.deepEqual(
      names(tableList(scCache, { resourceVersion: '9', items: bufferItems([a]), entries: [ea] }, t, NOW)),
      ['a (default)'],
    );
    assert.deepEqual(
      names(tableList(scCache, { resourceVersion: '9', items: bufferItems([c]), entries: [ec] }, t, NOW)),
      ['c'],
    );
    const row = parse(tableList(scCache, { resourceVersion: '9', items: bufferItems([c]) }, t, NOW)).rows[0]
      .cells;
    assert.deepEqual(row, ['c', 'p', 'Delete', 'Immediate', false, '37m']);
  });

  it('a GET and a watch event print one object: never marked (printStorageClass)', () => {
    const obj = {
      object: { metadata: {} },
      wire: [Buffer.from(`{"kind":"StorageClass","apiVersion":"storage.k8s.io/v1",${b.subarray(1)}`)],
      metadataWire: () => [],
    };
    assert.equal(parse(tableGet(obj, t, NOW)).rows[0].cells[0], 'b');
    const line = Buffer.from(`{"type":"ADDED","object":${obj.wire[0]}}\n`);
    assert.equal(
      JSON.parse(text(new TableWatchEncoder(t, () => NOW).encode(line))).object.rows[0].cells[0],
      'b',
    );
  });
});

describe('attack: custom resource integers beyond 2^53', () => {
  // Seen side by side on the fixture: spec.i = 9007199254740993 printed by the apiserver v1.37.2
  // as 9007199254740993 in an integer column and in a string column's JSON; the cache printed
  // 9007199254740992 (JSON.parse's double). The apiserver decodes such an integer as int64.
  const crPrinter = customResourcePrinter(
    {
      spec: {
        versions: [
          {
            name: 'v1',
            additionalPrinterColumns: [
              { name: 'Int', type: 'integer', jsonPath: '.spec.i' },
              { name: 'Str', type: 'string', jsonPath: '.spec.i' },
              { name: 'Whole', type: 'string', jsonPath: '.spec' },
              { name: 'Num', type: 'number', jsonPath: '.spec.i' },
              { name: 'Neg', type: 'integer', jsonPath: '.spec.neg' },
              { name: 'Filt', type: 'string', jsonPath: '.spec.arr[?(@.v==9007199254740993)].n' },
              { name: 'Less', type: 'string', jsonPath: '.spec.arr[?(@.v>9007199254740992)].n' },
            ],
          },
        ],
      },
    },
    'v1',
  )!;
  const crCache = {
    resource: resourceInfo('ha2.example.com/v1', 'hostiles', 'Hostile'),
  } as unknown as ServedCache;
  const CR = Buffer.from(
    '{"apiVersion":"ha2.example.com/v1","kind":"Hostile","metadata":{"name":"a","namespace":"h","resourceVersion":"5"},' +
      '"spec":{"arr":[{"n":"small","v":9007199254740992},{"n":"big","v":9007199254740993}],"i":9007199254740993,"neg":-9223372036854775808}}',
  );
  const want =
    '{"cells":["a",9007199254740993,"9007199254740993","{\\"arr\\":[{\\"n\\":\\"small\\",\\"v\\":9007199254740992},{\\"n\\":\\"big\\",\\"v\\":9007199254740993}],\\"i\\":9007199254740993,\\"neg\\":-9223372036854775808}",9007199254740992,-9223372036854775808,"big","big"]';
  const t = { printer: crPrinter, version: 'v1' as const, include: 'None' as const };
  it('LIST, GET and watch rows print them exactly', () => {
    assert.ok(
      text(tableList(crCache, { resourceVersion: '5', items: bufferItems([CR]) }, t, NOW)).includes(want),
    );
    const obj = { object: JSON.parse(CR.toString()), wire: [CR] } as unknown as Parameters<
      typeof tableGet
    >[0];
    assert.ok(text(tableGet(obj, t, NOW)).includes(want));
    const enc = new TableWatchEncoder(t, () => NOW);
    const line = Buffer.concat([Buffer.from('{"type":"ADDED","object":'), CR, Buffer.from('}\n')]);
    assert.ok(text(enc.encode(line)).includes(want));
  });
});
