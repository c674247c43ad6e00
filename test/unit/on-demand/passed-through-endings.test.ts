import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ResourceRequest } from '../../../src/apimachinery/request-info.ts';
import {
  type PassedRequest,
  passedThroughEndings,
  rewatches,
} from '../../../src/on-demand/passed-through-endings.ts';
import type { UpstreamReason } from '../../../src/server/delegate.ts';

const cm: ResourceRequest = {
  group: '',
  version: 'v1',
  resource: 'configmaps',
  namespace: 'a',
} as ResourceRequest;

describe('passedThroughEndings (issue 15 F1)', () => {
  it('rewatches: allowWatchBookmarks true (Go bool parsing), what client-go reflectors send; kubectl get -w sends none', () => {
    const q = (s: string) => new URLSearchParams(s);
    assert.equal(rewatches(q('watch=1&allowWatchBookmarks=true')), true);
    assert.equal(rewatches(q('watch=1&allowWatchBookmarks=1')), true);
    assert.equal(
      rewatches(
        q('watch=1&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan'),
      ),
      true,
    );
    assert.equal(rewatches(q('watch=1&resourceVersion=12')), false, 'kubectl get -w');
    assert.equal(rewatches(q('watch=1&allowWatchBookmarks=false')), false);
    assert.equal(rewatches(q('watch=1&allowWatchBookmarks=0')), false);
  });

  /** A request and what the hook and shutdown registry saw. */
  function harness(over: Partial<PassedRequest> & { query?: URLSearchParams } = {}) {
    const seen: string[] = [];
    const r: PassedRequest = {
      track: () => {
        seen.push('track');
        return () => seen.push('untrack');
      },
      onDemand: {
        request: () => {},
        trackWatch: (info, handover) => {
          seen.push(`hook ${info.resource} ${handover ? 'handover' : 'none'}`);
          return () => seen.push('unhook');
        },
      },
      info: cm,
      longRunning: true,
      method: 'GET',
      query: new URLSearchParams('watch=1&allowWatchBookmarks=true'),
      reason: 'not-cached' as UpstreamReason,
      ...over,
    };
    return { e: passedThroughEndings(r), seen };
  }

  it('a re-watching WATCH gets a handover registered with the hook; shutdown tracks it too', () => {
    const { e, seen } = harness();
    assert.ok(e.handover);
    e.track?.(() => {})();
    e.handover(
      () => {},
      () => undefined,
    )();
    assert.deepEqual(seen, ['track', 'untrack', 'hook configmaps handover', 'unhook']);
  });

  it('a WATCH without bookmarks (kubectl get -w): no handover, registered with the hook as a use with shutdown', () => {
    const { e, seen } = harness({
      query: new URLSearchParams('watch=1&resourceVersion=5'),
      reason: 'not-synced',
    });
    assert.equal(e.handover, undefined);
    e.track?.(() => {})();
    assert.deepEqual(seen, ['track', 'hook configmaps none', 'untrack', 'unhook']);
  });

  it('anything else only has shutdown: cached reasons, one object, non-watches, no on-demand manager', () => {
    for (const over of [
      { reason: 'media-type' as UpstreamReason },
      { info: { ...cm, name: 'x' } as ResourceRequest },
      { query: new URLSearchParams('allowWatchBookmarks=true'), longRunning: false },
      { method: 'POST' },
      { onDemand: undefined },
      { info: undefined },
    ]) {
      const { e, seen } = harness(over);
      assert.equal(e.handover, undefined, JSON.stringify(over));
      e.track?.(() => {})();
      assert.deepEqual(seen, ['track', 'untrack'], JSON.stringify(over));
    }
  });
});
