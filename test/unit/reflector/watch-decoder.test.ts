import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeList, decodeWatchLine, itemSpans } from '../../../src/reflector/watch-decoder.ts';

describe('decodeWatchLine', () => {
  it('slices the object bytes verbatim (integer-like keys keep their order)', () => {
    const obj =
      '{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","resourceVersion":"7"},"data":{"b":"1","10":"x","2":"y"}}';
    const e = decodeWatchLine(Buffer.from(`{"type":"MODIFIED","object":${obj}}\n`));
    assert.equal(e.type, 'MODIFIED');
    assert.equal(e.object.raw.toString(), obj);
    assert.equal(e.object.object.metadata.resourceVersion, '7');
    // JSON.stringify would have moved "2" and "10" first.
    assert.notEqual(JSON.stringify(e.object.object), obj);
  });

  it('keeps non-ASCII and escaped quotes intact', () => {
    const obj =
      '{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"ü","resourceVersion":"1"},"data":{"q":"a\\"}b"}}';
    const e = decodeWatchLine(Buffer.from(`{"type":"ADDED","object":${obj}}`));
    assert.equal(e.object.raw.toString(), obj);
    assert.equal(e.object.object.metadata.name, 'ü');
  });

  it('falls back to JSON.stringify for another line shape', () => {
    const e = decodeWatchLine(
      Buffer.from('{ "object": {"metadata":{"name":"a","resourceVersion":"3"}}, "type": "DELETED" }'),
    );
    assert.equal(e.type, 'DELETED');
    assert.equal(e.object.raw.toString(), '{"metadata":{"name":"a","resourceVersion":"3"}}');
  });

  it('rejects unknown types and garbage', () => {
    assert.throws(() => decodeWatchLine(Buffer.from('{"type":"WHAT","object":{}}')), SyntaxError);
    assert.throws(() => decodeWatchLine(Buffer.from('not json')), SyntaxError);
  });
});

describe('decodeList', () => {
  it('puts kind/apiVersion back on built-in items, keeping the rest of the bytes', () => {
    const a = '{"metadata":{"name":"a","namespace":"n","resourceVersion":"5"},"data":{"10":"x","2":"y"}}';
    const b = '{"metadata":{"name":"b","namespace":"n","resourceVersion":"6"}}';
    const body = `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"9","continue":"c1"},"items":[${a}, ${b}]}`;
    const l = decodeList(Buffer.from(body), 'ConfigMap', 'v1');
    assert.equal(l.resourceVersion, '9');
    assert.equal(l.continue, 'c1');
    assert.deepEqual(
      l.items.map((i) => i.raw.toString()),
      [
        `{"kind":"ConfigMap","apiVersion":"v1",${a.slice(1)}`,
        `{"kind":"ConfigMap","apiVersion":"v1",${b.slice(1)}`,
      ],
    );
    assert.equal(l.items[0]!.object.kind, 'ConfigMap');
    assert.equal(l.items[1]!.object.apiVersion, 'v1');
  });

  it('leaves custom-resource items (which carry kind/apiVersion) untouched', () => {
    const w = '{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","resourceVersion":"3"}}';
    const body = `{"apiVersion":"example.com/v1","items":[${w}],"kind":"WidgetList","metadata":{"continue":"","resourceVersion":"4"}}`;
    const l = decodeList(Buffer.from(body), 'Widget', 'example.com/v1');
    assert.equal(l.items[0]!.raw.toString(), w);
    assert.equal(l.continue, '');
  });

  it('handles an empty or null items list and an "items" key nested in an item', () => {
    assert.deepEqual(
      decodeList(Buffer.from('{"metadata":{"resourceVersion":"1"},"items":[]}'), 'K', 'v1').items,
      [],
    );
    assert.deepEqual(
      decodeList(Buffer.from('{"metadata":{"resourceVersion":"1"},"items":null}'), 'K', 'v1').items,
      [],
    );
    const body =
      '{"metadata":{"resourceVersion":"1","items":"x"},"items":[{"items":[1,{"a":"]"}],"metadata":{"name":"i","resourceVersion":"1"}}]}';
    assert.deepEqual(itemSpans(Buffer.from(body)), [[body.indexOf('{"items":[1'), body.length - 2]]);
  });
});
