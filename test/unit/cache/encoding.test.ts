import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ResourceInfo } from '../../../src/apimachinery/gvr.ts';
import { bufferItems, itemsBodyChunks } from '../../../src/apimachinery/list-items.ts';
import { everythingFields, everythingLabels } from '../../../src/apimachinery/selectors.ts';
import {
  bookmarkObject,
  encodeList,
  learnBookmarkShape,
  listItemBytes,
} from '../../../src/cache/encoding.ts';
import { WatchCache } from '../../../src/cache/watch-cache.ts';
import { PODS, WIDGETS } from '../../support/watch-cache-fixtures.ts';

const DAEMONSETS: ResourceInfo = {
  ...PODS,
  gvr: { group: 'apps', version: 'v1', resource: 'daemonsets' },
  kind: 'DaemonSet',
  listKind: 'DaemonSetList',
  apiVersion: 'apps/v1',
};
const UNKNOWN: ResourceInfo = { ...PODS, kind: 'Gadget', apiVersion: 'gadgets.k8s.io/v1' };

describe('encoding', () => {
  // Expected bytes captured from kube-apiserver v1.37.2 (periodic and initial-events-end bookmarks).
  it('bookmark objects as the apiserver writes them', () => {
    assert.equal(
      String(bookmarkObject(PODS, 397n, false)),
      '{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"397"},"spec":{"containers":null},"status":{}}',
    );
    assert.equal(
      String(bookmarkObject(DAEMONSETS, 385n, false)),
      '{"kind":"DaemonSet","apiVersion":"apps/v1","metadata":{"resourceVersion":"385","annotations":{"deprecated.daemonset.template.generation":"0"}},"spec":{"selector":null,"template":{"metadata":{},"spec":{"containers":null}},"updateStrategy":{}},"status":{"currentNumberScheduled":0,"numberMisscheduled":0,"desiredNumberScheduled":0,"numberReady":0}}',
    );
    assert.equal(
      String(bookmarkObject(DAEMONSETS, 245n, true)),
      '{"kind":"DaemonSet","apiVersion":"apps/v1","metadata":{"resourceVersion":"245","annotations":{"deprecated.daemonset.template.generation":"0","k8s.io/initial-events-end":"true"}},"spec":{"selector":null,"template":{"metadata":{},"spec":{"containers":null}},"updateStrategy":{}},"status":{"currentNumberScheduled":0,"numberMisscheduled":0,"desiredNumberScheduled":0,"numberReady":0}}',
    );
    assert.equal(
      String(bookmarkObject(WIDGETS, 370n, false)),
      '{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"resourceVersion":"370"}}',
    );
    assert.equal(
      String(bookmarkObject(WIDGETS, 254n, true)),
      '{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"annotations":{"k8s.io/initial-events-end":"true"},"resourceVersion":"254"}}',
    );
    assert.equal(
      String(bookmarkObject(UNKNOWN, 7n, true)),
      '{"kind":"Gadget","apiVersion":"gadgets.k8s.io/v1","metadata":{"resourceVersion":"7","annotations":{"k8s.io/initial-events-end":"true"}}}',
    );
  });

  it('list items drop kind/apiVersion for built-in kinds only, without re-encoding', () => {
    const raw = Buffer.from(
      '{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","resourceVersion":"1"},"spec":{"10":1,"a":2}}',
    );
    assert.equal(
      String(listItemBytes(PODS, raw)),
      '{"metadata":{"name":"p","resourceVersion":"1"},"spec":{"10":1,"a":2}}',
    );
    const cr = Buffer.from('{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"}}');
    assert.equal(listItemBytes(WIDGETS, cr), cr);
    // Unusual key order: falls back to re-encoding without the type fields.
    const odd = { apiVersion: 'v1', metadata: { name: 'p' }, kind: 'Pod' };
    assert.equal(String(listItemBytes(PODS, Buffer.from(JSON.stringify(odd)))), '{"metadata":{"name":"p"}}');
  });

  it('list bodies for built-in kinds and custom resources', () => {
    const items = [Buffer.from('{"metadata":{"name":"a"}}'), Buffer.from('{"metadata":{"name":"b"}}')];
    assert.equal(
      String(
        Buffer.concat(itemsBodyChunks(encodeList(PODS, { resourceVersion: '9', items: bufferItems(items) }))),
      ),
      '{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9"},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}\n',
    );
    assert.equal(
      String(
        Buffer.concat(itemsBodyChunks(encodeList(WIDGETS, { resourceVersion: '9', items: bufferItems([]) }))),
      ),
      '{"apiVersion":"example.com/v1","items":[],"kind":"WidgetList","metadata":{"continue":"","resourceVersion":"9"}}\n',
    );
  });

  it('learns the bookmark shape of any kind from the upstream bookmarks', () => {
    const INGRESSES: ResourceInfo = { ...PODS, kind: 'Ingress', apiVersion: 'networking.k8s.io/v1' };
    const end =
      '{"kind":"Ingress","apiVersion":"networking.k8s.io/v1","metadata":{"resourceVersion":"5","annotations":{"k8s.io/initial-events-end":"true"}},"spec":{},"status":{"loadBalancer":{}}}';
    assert.deepEqual(learnBookmarkShape(INGRESSES, Buffer.from(end), '5'), {
      plain: [
        '{"kind":"Ingress","apiVersion":"networking.k8s.io/v1","metadata":{"resourceVersion":"',
        '"},"spec":{},"status":{"loadBalancer":{}}}',
      ],
      end: [
        '{"kind":"Ingress","apiVersion":"networking.k8s.io/v1","metadata":{"resourceVersion":"',
        '","annotations":{"k8s.io/initial-events-end":"true"}},"spec":{},"status":{"loadBalancer":{}}}',
      ],
    });
    const ds =
      '{"kind":"DaemonSet","apiVersion":"apps/v1","metadata":{"resourceVersion":"9","annotations":{"deprecated.daemonset.template.generation":"0","k8s.io/initial-events-end":"true"}},"spec":{}}';
    assert.deepEqual(learnBookmarkShape(DAEMONSETS, Buffer.from(ds), '9')?.plain, [
      '{"kind":"DaemonSet","apiVersion":"apps/v1","metadata":{"resourceVersion":"',
      '","annotations":{"deprecated.daemonset.template.generation":"0"}},"spec":{}}',
    ]);
    const cr =
      '{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"annotations":{"k8s.io/initial-events-end":"true"},"resourceVersion":"3"}}';
    assert.deepEqual(learnBookmarkShape(WIDGETS, Buffer.from(cr), '3')?.plain, [
      '{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"resourceVersion":"',
      '"}}',
    ]);
    assert.equal(learnBookmarkShape(WIDGETS, Buffer.from(end), '5'), undefined);
    assert.equal(learnBookmarkShape(INGRESSES, Buffer.from(end), '6'), undefined);

    const cache = new WatchCache({ resource: INGRESSES });
    cache.replace([], '5', Buffer.from(end));
    const w = cache.watch({
      labelSelector: everythingLabels,
      fieldSelector: everythingFields,
      sendInitialEvents: true,
      allowWatchBookmarks: true,
    });
    assert.equal(String(w.stream.read()), `{"type":"BOOKMARK","object":${end}}\n`);
  });
});
