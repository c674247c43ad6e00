import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { everythingFields, parseFieldSelector } from '../../../src/apimachinery/selectors.ts';
import { listItemBytes } from '../../../src/cache/encoding.ts';
import { parseRV, Store } from '../../../src/cache/store.ts';
import { PODS, pod, WIDGETS } from '../../support/watch-cache-fixtures.ts';

const keys = (c: { entries: Iterable<{ key: string }> }) => [...c.entries].map((e) => e.key);

describe('Store', () => {
  it('iterates everything in key order, kept in step with adds, updates and removes', () => {
    const s = new Store(PODS);
    for (const [ns, n] of [
      ['b', 'x'],
      ['a-b', 'y'],
      ['a', 'z'],
      ['a', 'a'],
    ] as const) {
      s.put(s.entry(pod(ns, n, 1)));
    }
    const all = s.candidates(undefined, everythingFields);
    assert.equal(all.sorted, true);
    assert.deepEqual(keys(all), ['a-b/y', 'a/a', 'a/z', 'b/x']);
    s.put(s.entry(pod('a', 'a', 2)));
    s.remove('a/z');
    s.put(s.entry(pod('0', 'n', 3)));
    const after = [...s.candidates(undefined, everythingFields).entries];
    assert.deepEqual(
      after.map((e) => `${e.key}@${e.rv}`),
      ['0/n@3', 'a-b/y@1', 'a/a@2', 'b/x@1'],
    );
    assert.equal(s.size, 4);
    assert.equal(
      s.bytes,
      after.reduce((n, e) => n + e.size, 0),
    );
  });

  it('narrows candidates by name, namespace and the nodeName index', () => {
    const s = new Store(PODS);
    s.put(s.entry(pod('a', 'p1', 1, { nodeName: 'n1' })));
    s.put(s.entry(pod('a', 'p2', 2, { nodeName: 'n2' })));
    s.put(s.entry(pod('b', 'p3', 3, { nodeName: 'n1' })));
    const f = (sel: string) => parseFieldSelector(sel, PODS)!;
    assert.deepEqual(keys(s.candidates('a', f('metadata.name=p2'))), ['a/p2']);
    assert.deepEqual(keys(s.candidates('a', f('metadata.name=zz'))), []);
    assert.deepEqual(keys(s.candidates('b', everythingFields)), ['b/p3']);
    assert.deepEqual(keys(s.candidates(undefined, f('metadata.namespace=b'))), ['b/p3']);
    assert.deepEqual(keys(s.candidates(undefined, f('metadata.namespace=a,metadata.name=p1'))), ['a/p1']);
    assert.deepEqual(keys(s.candidates(undefined, f('spec.nodeName=n1'))).sort(), ['a/p1', 'b/p3']);
    assert.deepEqual(keys(s.candidates(undefined, f('spec.nodeName=n9'))), []);
    // != is not served by the index
    assert.equal(s.candidates(undefined, f('spec.nodeName!=n1')).sorted, true);
    s.put(s.entry(pod('a', 'p1', 4, { nodeName: 'n2' })));
    assert.deepEqual(keys(s.candidates(undefined, f('spec.nodeName=n1'))), ['b/p3']);
    s.remove('b/p3');
    assert.deepEqual(keys(s.candidates(undefined, f('spec.nodeName=n1'))), []);
  });

  it('parses resourceVersions as uint64 only', () => {
    assert.equal(parseRV('18446744073709551615'), 18446744073709551615n);
    assert.throws(() => parseRV('18446744073709551616'));
    assert.throws(() => parseRV('-1'));
    assert.throws(() => parseRV('abc'));
    assert.throws(() => parseRV(''));
  });
});

describe('StoreEntry bytes (issue 12: one Buffer per object)', () => {
  it('a built-in object is stored as its LIST item; GET and watch bytes are the upstream bytes again', () => {
    const s = new Store(PODS);
    const p = pod('a', 'p1', 7, { nodeName: 'n1' });
    const e = s.entry(p);
    s.put(e);
    const before = s.bytes;
    const item = e.listItem;
    // The item is the stored Buffer itself: the same one every time, nothing built or counted.
    assert.equal(e.listItem, item);
    assert.equal(s.bytes, before);
    assert.equal(String(item), String(listItemBytes(PODS, p.raw)));
    assert.ok(!String(item).includes('"kind"'));
    // GET: the shared TypeMeta prefix + a view of the stored bytes = the upstream's bytes.
    assert.equal(e.wire.length, 2);
    assert.equal(e.wire[1]!.buffer, item.buffer);
    assert.deepEqual(Buffer.concat(e.wire), p.raw);
    assert.deepEqual(e.raw, p.raw);
    assert.equal(String(Buffer.concat(e.addedLine)), `{"type":"ADDED","object":${p.raw}}\n`);
    assert.equal(e.addedLine[1]!.buffer, item.buffer);
    assert.equal(s.bytes, before, 'the ADDED line is chunks around the stored bytes, not a copy');
  });

  it('a custom resource keeps its bytes whole (its list items carry kind and apiVersion)', () => {
    const s = new Store(WIDGETS);
    const raw = Buffer.from(
      '{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"a","resourceVersion":"3"}}',
    );
    const e = s.entry({ raw, object: JSON.parse(String(raw)) });
    assert.deepEqual(e.listItem, raw);
    assert.deepEqual(e.wire, [e.listItem]);
  });

  it('bytes that do not start with the TypeMeta prefix are kept as received; the item is re-encoded once', () => {
    const s = new Store(PODS);
    const object = {
      metadata: { name: 'p', namespace: 'a', resourceVersion: '4' },
      kind: 'Pod',
      apiVersion: 'v1',
    };
    const raw = Buffer.from(JSON.stringify(object));
    const e = s.entry({ raw, object });
    s.put(e);
    assert.deepEqual(Buffer.concat(e.wire), raw);
    const before = s.bytes;
    assert.equal(String(e.listItem), '{"metadata":{"name":"p","namespace":"a","resourceVersion":"4"}}');
    assert.equal(e.listItem, e.listItem);
    assert.ok(s.bytes > before, 'the re-encoded copy is counted');
  });
});
