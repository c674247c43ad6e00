/**
 * Which encoding a cache read answers in, and the protobuf LIST/GET/watch bytes built from cached
 * JSON (src/server/protobuf-answers.ts). Byte-for-byte against the apiserver:
 * test/e2e/protobuf-answers.test.ts.
 */

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bufferItems } from '../../../src/apimachinery/list-items.ts';
import { CannotEncode } from '../../../src/apimachinery/protobuf/encode-object.ts';
import { SCHEMA_MINOR } from '../../../src/apimachinery/protobuf/schema.ts';
import { decodeProtobufMeta } from '../../../src/apimachinery/protobuf-meta.ts';
import { bodyBytes } from '../../../src/server/filled-body.ts';
import {
  answerEncoding,
  jsonFallback,
  protobufAnswers,
  protobufGet,
  protobufKeptBytes,
  protobufList,
  protobufMessageEncodes,
  protobufWatchEncodes,
  protobufWatchFrame,
  watchableInProtobuf,
} from '../../../src/server/protobuf-answers.ts';
import { POOL_BYTES } from '../../../src/util/buffer-pool.ts';
import { filledIn } from '../../support/filled-in.ts';
import { resourceInfo } from '../../support/resource-info.ts';
import { ALL, PODS, pod, seeded } from '../../support/watch-cache-fixtures.ts';

const cms = resourceInfo('v1', 'configmaps', 'ConfigMap');
const widgets = resourceInfo('example.com/v1', 'widgets', 'Widget', { builtIn: false });
const PB = 'application/vnd.kubernetes.protobuf';

describe('answerEncoding', () => {
  it('protobuf when the Accept picks it and protobuf answers are on', () => {
    assert.deepEqual(answerEncoding({ accept: `${PB}, */*` }, true, cms), { encoding: 'protobuf' });
    assert.deepEqual(answerEncoding({ accept: `${PB}, */*` }, false, cms), { encoding: 'json' });
    assert.equal(answerEncoding({ accept: PB }, false, cms), 'protobuf-off');
    assert.deepEqual(answerEncoding({ accept: 'application/json' }, true, cms), { encoding: 'json' });
    assert.deepEqual(answerEncoding({}, true, cms), { encoding: 'json' });
  });
  it("protobuf declined when the apiserver is not of the schema table's minor version", () => {
    const [, minor] = SCHEMA_MINOR.split('.').map(Number);
    const at = (v: string | undefined) => protobufAnswers({ protobuf: true, upstreamVersion: () => v });
    assert.equal(at(`v1.${minor}.2`), true);
    assert.equal(at(`v1.${minor! + 1}.0`), 'protobuf-version');
    assert.equal(at(undefined), 'protobuf-version', 'not checked yet');
    assert.equal(protobufAnswers({ protobuf: true }), true, 'no upstream check: the table is trusted');
    assert.equal(
      protobufAnswers({ protobuf: false, upstreamVersion: () => `v1.${minor}.2` }),
      'protobuf-off',
    );
    const off = at(`v1.${minor! - 1}.5`);
    assert.deepEqual(answerEncoding({ accept: `${PB}, */*` }, off, cms), { encoding: 'json' });
    assert.equal(answerEncoding({ accept: PB }, off, cms), 'protobuf-version');
  });
  it('JSON fallback when the protobuf bytes cannot be exact: only when some clause takes the same form in JSON', () => {
    assert.equal(jsonFallback({ accept: `${PB}, */*` }, cms, undefined), true);
    assert.equal(jsonFallback({ accept: `${PB},application/json` }, cms, undefined), true);
    assert.equal(jsonFallback({ accept: PB }, cms, undefined), false);
    const m = 'as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';
    assert.equal(jsonFallback({ accept: `${PB};${m},application/json;${m}` }, cms, 'v1'), true);
    assert.equal(
      jsonFallback({ accept: `${PB};${m},application/json` }, cms, 'v1'),
      false,
      'not the same form',
    );
  });
  it('custom resources have no protobuf: JSON when accepted, else the apiserver answers', () => {
    assert.deepEqual(answerEncoding({ accept: `${PB}, */*` }, true, widgets), { encoding: 'json' });
    assert.equal(answerEncoding({ accept: PB }, true, widgets), 'media-type');
  });
  it('the metadata client: protobuf PartialObjectMetadataList', () => {
    const m = 'as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';
    assert.deepEqual(answerEncoding({ accept: `${PB};${m},application/json;${m}` }, true, cms), {
      encoding: 'protobuf',
      metadata: 'v1',
    });
  });
});

describe('protobuf answers', () => {
  const cm =
    '{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"n","resourceVersion":"7"},"data":{"k":"v"}}';
  it('GET: k8s\\0 + Unknown carrying the object; metadata: a PartialObjectMetadata', () => {
    const b = protobufGet(cms, [Buffer.from(cm)]);
    assert.deepEqual(decodeProtobufMeta(b), {
      kind: 'ConfigMap',
      metadata: { name: 'a', namespace: 'n', uid: '', resourceVersion: '7' },
    });
    const m = protobufGet(cms, [Buffer.from(cm)], 'v1');
    assert.equal(decodeProtobufMeta(m)?.kind, 'PartialObjectMetadata');
    assert.ok(!m.includes(Buffer.from('"k"')) && !m.includes(Buffer.from('v\x12')));
  });
  it('LIST: ListMeta then the items', () => {
    const item = Buffer.from(
      '{"metadata":{"name":"a","namespace":"n","resourceVersion":"7"},"data":{"k":"v"}}',
    );
    const body = bodyBytes(
      protobufList(cms, { resourceVersion: '9', items: bufferItems([item, item]), continue: 'tok' }),
    );
    const d = decodeProtobufMeta(body);
    assert.equal(d?.kind, 'ConfigMapList');
    assert.equal(d?.metadata?.resourceVersion, '9');
    assert.equal(d?.items?.length, 2);
  });
  it('WATCH: a shared line is framed once', () => {
    const line = Buffer.from(`{"type":"ADDED","object":${cm}}\n`);
    const f1 = protobufWatchFrame(line);
    assert.equal(protobufWatchFrame(line), f1, 'the same Buffer for the same line');
    assert.equal(f1.readUInt32BE(0), f1.length - 4);
    assert.equal(f1.subarray(4, 11).toString('latin1'), '\n\x05ADDED');
  });
});

/** A watcher's lines as single Buffers (copies: not the history's shared lines). */
function drainLines(w: { stream: { read(): unknown } }): Buffer[] {
  const out: Buffer[] = [];
  for (let c = w.stream.read(); c !== null; c = w.stream.read())
    out.push(Buffer.concat(Buffer.isBuffer(c) ? [c] : (c as Buffer[])));
  return out;
}

describe('protobuf watch events: encoded once per event, not per watcher', () => {
  it('50 watchers of one watch cache, 3 events: 3 encodes, every watcher sent the same frame', () => {
    const { cache } = seeded();
    const rv = cache.resourceVersion();
    const watchers = Array.from({ length: 50 }, () => cache.watch({ ...ALL, resourceVersion: rv }));
    cache.add(pod('a', 'p9', 11, { labels: { app: 'x' } }));
    cache.update(pod('a', 'p9', 12, { labels: { app: 'y' }, nodeName: 'n1' }));
    cache.delete(pod('a', 'p9', 13));
    const before = protobufWatchEncodes();
    const frames = watchers.map((w) => {
      const out: Buffer[] = [];
      for (let c = w.stream.read(); c !== null; c = w.stream.read())
        out.push(protobufWatchFrame(c as Buffer));
      return out;
    });
    assert.equal(protobufWatchEncodes() - before, 3);
    for (const f of frames) {
      assert.equal(f.length, 3);
      for (let i = 0; i < 3; i++) assert.equal(f[i], frames[0]![i], 'the same Buffer, not an equal one');
    }
    const types = frames[0]!.map((f) => f.subarray(6, 6 + f[5]!).toString('latin1'));
    assert.deepEqual(types, ['ADDED', 'MODIFIED', 'DELETED']);
  });
});

describe('the message of a live event is the one LIST and GET reuse', () => {
  it('50 protobuf watchers of a MODIFIED: one message encode, kept for the next LIST and GET', () => {
    const { cache } = seeded();
    const rv = cache.resourceVersion();
    const watchers = Array.from({ length: 50 }, () => cache.watch({ ...ALL, resourceVersion: rv }));
    cache.update(pod('a', 'p1', 11, { labels: { app: 'web' }, nodeName: 'n7' }));
    cache.add(pod('a', 'p9', 12, { labels: { app: 'x' } }));
    cache.delete(pod('a', 'p9', 13));
    const watched = { resource: PODS };
    const messages = protobufMessageEncodes();
    const lines = protobufWatchEncodes();
    const frames = watchers.map((w) => {
      const out: Buffer[] = [];
      for (let c = w.stream.read(); c !== null; c = w.stream.read())
        out.push(protobufWatchFrame(c as Buffer, watched));
      return out;
    });
    assert.equal(protobufWatchEncodes() - lines, 3, 'one frame per event, not per watcher');
    assert.equal(protobufMessageEncodes() - messages, 2, 'p1@11 and p9@12 kept; the DELETED not');
    for (const f of frames) for (let i = 0; i < 3; i++) assert.equal(f[i], frames[0]![i]);
    const direct = drainLines(cache.watch({ ...ALL, resourceVersion: rv })).map((l) =>
      protobufWatchFrame(Buffer.from(l)),
    );
    assert.deepEqual(frames[0], direct, 'the same bytes as framed from the line');
    const list = bodyBytes(protobufList(PODS, cache.list(ALL)));
    assert.equal(protobufMessageEncodes() - messages, 4, 'the LIST encodes p2 and p3 only');
    assert.deepEqual(list, bodyBytes(protobufList(PODS, { ...cache.list(ALL), entries: undefined })));
    const p1 = cache.get('a', 'p1')!;
    protobufGet(PODS, p1.wire, undefined, p1);
    assert.equal(protobufMessageEncodes() - messages, 4);
  });
});

describe('object messages: encoded once per object version, reused by LIST, GET and initial events', () => {
  const drain = (w: { stream: { read(): unknown } }) => {
    const out: unknown[] = [];
    for (let c = w.stream.read(); c !== null; c = w.stream.read()) out.push(c);
    return out;
  };
  it('a second LIST encodes nothing and writes the same bytes; GET and watch-list reuse them', () => {
    const { cache } = seeded();
    const before = protobufMessageEncodes();
    const first = bodyBytes(protobufList(PODS, cache.list(ALL)));
    assert.equal(protobufMessageEncodes() - before, 3, 'one encode per object');
    const second = bodyBytes(protobufList(PODS, cache.list(ALL)));
    assert.deepEqual(second, first);
    const uncached = bodyBytes(protobufList(PODS, { ...cache.list(ALL), entries: undefined }));
    assert.deepEqual(uncached, first, 'kept bytes equal a fresh encode');
    const obj = cache.get('a', 'p1')!;
    assert.deepEqual(protobufGet(PODS, obj.wire, undefined, obj), protobufGet(PODS, obj.wire));
    const watched = { resource: PODS };
    const frames = [0, 1].map(() =>
      drain(cache.watch({ ...ALL, sendInitialEvents: true })).map((l) =>
        protobufWatchFrame(l as Buffer, watched),
      ),
    );
    assert.equal(protobufMessageEncodes() - before, 3, 'no encode for GET or either watcher');
    assert.deepEqual(frames[1], frames[0]);
    const fresh = drain(cache.watch({ ...ALL, sendInitialEvents: true })).map((l) =>
      protobufWatchFrame(Buffer.concat(l as Buffer[])),
    );
    assert.deepEqual(frames[0], fresh, 'frames from kept messages equal frames encoded from the line');
  });
  it("initial events' frames are carved from shared blocks, a shared line's frame is its own", () => {
    // Issue 32: one malloc per initial event (10k per informer sync of 10k pods) left glibc's brk
    // heap at its high-water mark (+11 MiB, bench/tools/protobuf-rows.ts).
    const { cache } = seeded();
    const watched = { resource: PODS };
    const frames = drain(cache.watch({ ...ALL, sendInitialEvents: true }))
      .filter((l) => !Buffer.isBuffer(l))
      .map((l) => protobufWatchFrame(l as Buffer, watched));
    assert.equal(frames.length, 3);
    for (const f of frames) assert.equal(f.buffer.byteLength, POOL_BYTES, 'a view of a pool block');
    const line = Buffer.concat(drain(cache.watch({ ...ALL, sendInitialEvents: true }))[0] as Buffer[]);
    assert.notEqual(protobufWatchFrame(line, watched).buffer.byteLength, POOL_BYTES, 'kept with its line');
  });
  it('a changed object is encoded again (its new version), the others not', () => {
    const { cache } = seeded();
    protobufList(PODS, cache.list(ALL));
    cache.update(pod('a', 'p1', 11, { labels: { app: 'web' }, nodeName: 'n9' }));
    const before = protobufMessageEncodes();
    const body = bodyBytes(protobufList(PODS, cache.list(ALL)));
    assert.equal(protobufMessageEncodes() - before, 1);
    assert.ok(body.includes(Buffer.from('n9')), 'the new version is written');
  });
  it('metadata: PartialObjectMetadata messages kept apart from the objects', () => {
    const { cache } = seeded();
    const before = protobufMessageEncodes();
    const list = bodyBytes(protobufList(PODS, cache.list({ ...ALL, metadata: 'v1' }), 'v1'));
    const again = bodyBytes(protobufList(PODS, cache.list({ ...ALL, metadata: 'v1' }), 'v1'));
    assert.deepEqual(again, list);
    assert.equal(decodeProtobufMeta(list)?.kind, 'PartialObjectMetadataList');
    const watched = { resource: PODS, metadata: 'v1' as const };
    const initial = drain(cache.watch({ ...ALL, sendInitialEvents: true, metadata: 'v1' }));
    const frames = initial.map((l) => protobufWatchFrame(l as Buffer, watched));
    assert.equal(protobufMessageEncodes() - before, 3);
    const fresh = initial.map((l) => protobufWatchFrame(Buffer.concat(l as Buffer[])));
    assert.deepEqual(frames, fresh);
    const objects = bodyBytes(protobufList(PODS, cache.list(ALL)));
    assert.equal(decodeProtobufMeta(objects)?.kind, 'PodList');
    assert.equal(protobufMessageEncodes() - before, 6, 'the objects are encoded on their own');
  });
});

describe('attack: a v1beta1 PartialObjectMetadataList', () => {
  // `Accept: …protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1` was answered with
  // v1's field numbers ({1: ListMeta, 2: item…}); v1beta1 numbers items 1 and metadata 2, and the
  // apiserver v1.37.2 writes {1: item…, 2: ListMeta} (test/e2e/protobuf-answers.test.ts).
  it('items first as field 1, the ListMeta last as field 2; the same items as v1', () => {
    const { cache } = seeded();
    for (const page of [
      cache.list({ ...ALL, metadata: 'v1beta1' }),
      { ...cache.list({ ...ALL, metadata: 'v1beta1' }), entries: undefined },
    ]) {
      const beta = bodyBytes(protobufList(PODS, page, 'v1beta1'));
      const v1 = bodyBytes(protobufList(PODS, cache.list({ ...ALL, metadata: 'v1' }), 'v1'));
      const m = decodeProtobufMeta(beta, true)!;
      assert.equal(m.kind, 'PartialObjectMetadataList');
      assert.deepEqual(m.metadata, decodeProtobufMeta(v1, true)!.metadata);
      assert.deepEqual(m.items, decodeProtobufMeta(v1, true)!.items);
      assert.equal(m.items?.length, 3);
      assert.equal(beta.length, v1.length + 5, 'the same fields, one byte longer apiVersion');
      // raw = Unknown field 2: past `k8s\0`, TypeMeta (field 1) and raw's tag and length.
      const typeLen = beta[5]!;
      let at = 6 + typeLen + 1;
      while (beta[at]! & 0x80) at++;
      assert.equal(beta[at + 1], 0x0a, 'the first raw field is an item (field 1)');
      // …then {2: ListMeta{1: "", 2: rv, 3: ""}} and Unknown's empty contentEncoding and contentType.
      const rv = Buffer.from(page.resourceVersion);
      const listMeta = Buffer.concat([Buffer.from([0x0a, 0, 0x12, rv.length]), rv, Buffer.from([0x1a, 0])]);
      const end = Buffer.concat([
        Buffer.from([0x12, listMeta.length]),
        listMeta,
        Buffer.from([0x1a, 0, 0x22, 0]),
      ]);
      assert.deepEqual(beta.subarray(beta.length - end.length), end, 'the ListMeta last, as field 2');
    }
  });
});

describe('kept messages share their long strings with the stored JSON', () => {
  // A pod as the bench seeds them (bench/support/seed.ts): a ~3 KB annotation, managedFields.
  const bigPod = (name: string, rv: number, filler: string) => {
    const object = {
      kind: 'Pod',
      apiVersion: 'v1',
      metadata: {
        name,
        namespace: 'a',
        resourceVersion: String(rv),
        labels: { app: 'web' },
        annotations: { 'bench.kcp/filler': filler, note: `"quoted" ${'q'.repeat(100)}` },
        managedFields: [
          {
            manager: 'bench',
            operation: 'Update',
            apiVersion: 'v1',
            time: '2026-12-06T20:00:00Z',
            fieldsType: 'FieldsV1',
            fieldsV1: { 'f:metadata': { 'f:annotations': { '.': {}, 'f:bench.kcp/filler': {} } } },
          },
        ],
      },
      spec: { containers: [{ name: 'main', image: 'registry.example/bench/app:1.0' }], nodeName: 'n1' },
      status: {},
    };
    return { raw: Buffer.from(JSON.stringify(object)), object };
  };
  const drain = (w: { stream: { read(): unknown } }) => {
    const out: unknown[] = [];
    for (let c = w.stream.read(); c !== null; c = w.stream.read()) out.push(c);
    return out;
  };
  it('LIST (objects and metadata), GET and initial events equal a whole encode, however the LIST is cut', () => {
    const { cache } = seeded();
    cache.add(bigPod('big1', 11, 'lorem-1 ipsum-2 '.repeat(190)));
    cache.add(bigPod('big2', 12, 'dolor-3 sit-4 '.repeat(200)));
    const uncached = bodyBytes(protobufList(PODS, { ...cache.list(ALL), entries: undefined }));
    // Filled in odd sizes: pieces of kept items are cut anywhere. The first LIST keeps the
    // items (copied from their new views); the later ones read them in the slabs (`keptAt`),
    // whole when an item fits the rest of the buffer, else by its range.
    const filled = filledIn;
    assert.deepEqual(
      filled(protobufList(PODS, cache.list(ALL)), (n) => (n * 7) % 1009),
      uncached,
    );
    assert.deepEqual(
      filled(protobufList(PODS, cache.list(ALL)), (n) => (n * 7) % 1009),
      uncached,
    );
    assert.deepEqual(
      filled(protobufList(PODS, cache.list(ALL)), (n) => 2000 + ((n * 13) % 4001)),
      uncached,
    );
    assert.deepEqual(bodyBytes(protobufList(PODS, cache.list(ALL))), uncached, 'again, from the kept pieces');
    const meta = cache.list({ ...ALL, metadata: 'v1' });
    assert.deepEqual(
      bodyBytes(protobufList(PODS, meta, 'v1')),
      bodyBytes(protobufList(PODS, { ...meta, entries: undefined }, 'v1')),
    );
    const obj = cache.get('a', 'big1')!;
    assert.deepEqual(protobufGet(PODS, obj.wire, undefined, obj), protobufGet(PODS, obj.wire));
    assert.deepEqual(protobufGet(PODS, obj.wire, 'v1', obj), protobufGet(PODS, obj.wire, 'v1'));
    const initial = drain(cache.watch({ ...ALL, sendInitialEvents: true }));
    assert.deepEqual(
      initial.map((l) => protobufWatchFrame(l as Buffer, { resource: PODS })),
      initial.map((l) => protobufWatchFrame(Buffer.concat(l as Buffer[]))),
    );
  });
  it('what a big pod keeps of its own: not its annotation nor its FieldsV1', () => {
    const { cache } = seeded();
    const filler = 'lorem-1 ipsum-2 '.repeat(190);
    cache.add(bigPod('big1', 11, filler));
    const entry = cache.get('a', 'big1')!;
    const whole = protobufGet(PODS, entry.wire).length;
    protobufGet(PODS, entry.wire, undefined, entry);
    const own = protobufKeptBytes(entry)!;
    assert.ok(own > 0 && own < whole - filler.length, `${own} bytes kept of a ${whole}-byte answer`);
  });
});

describe('watchableInProtobuf', () => {
  it('not for kinds that may carry raw JSON', () => {
    assert.equal(watchableInProtobuf(cms), true);
    assert.equal(watchableInProtobuf(resourceInfo('v1', 'pods', 'Pod')), true);
    assert.equal(
      watchableInProtobuf(resourceInfo('apps/v1', 'controllerrevisions', 'ControllerRevision')),
      false,
    );
    const crds = resourceInfo(
      'apiextensions.k8s.io/v1',
      'customresourcedefinitions',
      'CustomResourceDefinition',
      {
        builtIn: true,
      },
    );
    assert.equal(watchableInProtobuf(crds), false);
    assert.equal(watchableInProtobuf(widgets), false);
  });
});

describe('attack: objects nested deeper than the encoder’s stack', () => {
  // A CRD whose schema nests `properties` 2,500 deep (its managedFields' FieldsV1 as deep): the
  // apiserver v1.37.2 answered its protobuf GET and LIST (200, side by side on the fixture), the
  // cache answered 500 "Maximum call stack size exceeded". The encoder recurses per level: such an
  // object is declined (CannotEncode), so the request goes upstream (`protobuf-inexact`).
  const crds = resourceInfo(
    'apiextensions.k8s.io/v1',
    'customresourcedefinitions',
    'CustomResourceDefinition',
  );
  let schema = '{"type":"string"}';
  let fields = '{}';
  for (let i = 0; i < 2500; i++) {
    schema = `{"type":"object","properties":{"a":${schema}}}`;
    fields = `{".":{},"f:properties":{".":{},"f:a":${fields}},"f:type":{}}`;
  }
  const crd = Buffer.from(
    '{"kind":"CustomResourceDefinition","apiVersion":"apiextensions.k8s.io/v1","metadata":{"name":"ds.x.io","resourceVersion":"7",' +
      `"managedFields":[{"manager":"m","operation":"Update","apiVersion":"apiextensions.k8s.io/v1","fieldsType":"FieldsV1","fieldsV1":${fields}}]},` +
      '"spec":{"group":"x.io","names":{"plural":"ds","singular":"d","kind":"D","listKind":"DList"},"scope":"Namespaced",' +
      `"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":${schema}}}]}}`,
  );
  it('GET, metadata GET and LIST decline it', () => {
    assert.throws(() => protobufGet(crds, [crd]), CannotEncode);
    assert.throws(() => protobufGet(crds, [crd], 'v1'), CannotEncode);
    assert.throws(
      () => protobufList(crds, { resourceVersion: '7', items: bufferItems([crd]) }),
      CannotEncode,
    );
  });
});
