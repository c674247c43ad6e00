import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bufferItems, itemsBodyChunks } from '../../../src/apimachinery/list-items.ts';
import { HistoryEvent } from '../../../src/cache/history.ts';
import { encodeMetadataList, metadataLine, metadataOf } from '../../../src/cache/metadata-view.ts';
import { Store, type StoreEntry } from '../../../src/cache/store.ts';
import { bodyBytes, itemsBody } from '../../../src/server/filled-body.ts';
import { resourceInfo } from '../../support/resource-info.ts';

const pods = resourceInfo('v1', 'pods', 'Pod');
const pod = (rv: number, labels: Record<string, string>) => {
  const object = {
    kind: 'Pod',
    apiVersion: 'v1',
    metadata: { name: 'p', namespace: 'a', resourceVersion: String(rv), labels },
    spec: { x: '"metadata":{}' },
  };
  return new Store(pods).entry({ object, raw: Buffer.from(JSON.stringify(object)) });
};
const head = '{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":';

describe('metadata view (issue 15)', () => {
  it('cuts the metadata value out of stored bytes: GET, ADDED line, list', () => {
    const e = pod(5, { t: 'x' });
    const meta = '{"name":"p","namespace":"a","resourceVersion":"5","labels":{"t":"x"}}';
    assert.equal(e.metadata.toString(), meta);
    assert.equal(Buffer.concat(e.metadataWire('v1')).toString(), `${head}${meta}}\n`);
    assert.equal(
      Buffer.concat(e.metadataAddedLine('v1')).toString(),
      `{"type":"ADDED","object":${head}${meta}}}\n`,
    );
    const list = Buffer.concat(
      itemsBodyChunks(
        encodeMetadataList('v1beta1', {
          resourceVersion: '7',
          items: bufferItems([e.metadata]),
          continue: 'tok',
          remainingItemCount: 2,
        }),
      ),
    );
    assert.equal(
      list.toString(),
      `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1beta1","metadata":{"resourceVersion":"7","continue":"tok","remainingItemCount":2},"items":[${head.replace('v1"', 'v1beta1"')}${meta}}]}\n`,
    );
    assert.equal(metadataOf(Buffer.from('{"kind":"X"}')).toString(), '{}');
  });
  it('an empty list is `"items":null`, as the apiserver writes its nil slice (was `[]`)', () => {
    const body = encodeMetadataList('v1', { resourceVersion: '7', items: bufferItems([]) });
    const want =
      '{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"7"},"items":null}\n';
    assert.equal(Buffer.concat(itemsBodyChunks(body)).toString(), want);
    assert.equal(bodyBytes(itemsBody(body)).toString(), want);
  });
  it('a watch event: the metadata line built once and shared; a selector exit is DELETED of the previous metadata at the event RV', () => {
    const prev = pod(5, { t: 'x' });
    const cur = pod(6, { t: 'y' });
    const ev = new HistoryEvent('MODIFIED', cur, prev, 0);
    const all = () => true;
    const one = ev.metadataLineFor(all, 'v1')!;
    assert.equal(ev.metadataLineFor(all, 'v1'), one, 'shared');
    assert.ok(one.toString().startsWith(`{"type":"MODIFIED","object":${head}{"name":"p"`));
    const onlyX = (e: StoreEntry) => e.labels?.t === 'x';
    assert.equal(
      ev.metadataLineFor(onlyX, 'v1')!.toString(),
      `{"type":"DELETED","object":${head}{"name":"p","namespace":"a","resourceVersion":"6","labels":{"t":"x"}}}}\n`,
    );
    assert.equal(
      metadataLine(
        'BOOKMARK',
        'v1',
        Buffer.from('{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"9"},"spec":{}}'),
      ).toString(),
      `{"type":"BOOKMARK","object":${head}{"resourceVersion":"9"}}}\n`,
    );
    assert.ok(ev.size > 0);
  });
});
