import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { everythingFields, parseFieldSelector } from '../../../src/apimachinery/selectors.ts';
import { parseRV, Store } from '../../../src/cache/store.ts';
import { PODS, pod } from '../../support/watch-cache-fixtures.ts';

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
