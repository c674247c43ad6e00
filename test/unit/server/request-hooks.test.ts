import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ResourceRequest } from '../../../src/apimachinery/request-info.ts';
import { onDemandRequestHook } from '../../../src/on-demand/server-hook.ts';
import { type AdmittedRequest, observeRequest, type RequestHook } from '../../../src/server/request-hooks.ts';

const cm: ResourceRequest = { group: '', version: 'v1', resource: 'configmaps', namespace: 'a' };
const watch: AdmittedRequest = {
  info: cm,
  method: 'GET',
  query: new URLSearchParams('watch=1&allowWatchBookmarks=true'),
  headers: {},
  longRunning: true,
  reason: 'not-cached',
};

describe('request hooks: subscribers hear of admitted requests', () => {
  it('no subscriber or none interested: no observer', () => {
    assert.equal(observeRequest([], watch), undefined);
    assert.equal(observeRequest([{ admitted: () => undefined }], watch), undefined);
  });

  it('several subscribers: each hears the status; endings pass through each in order, keeping a handover', () => {
    const heard: string[] = [];
    const handing: RequestHook = {
      admitted: () => ({
        upstreamStatus: (c) => heard.push(`a ${c}`),
        passedThrough: (_r, e) => ({ ...e, handover: () => () => {} }),
      }),
    };
    const wrapping: RequestHook = {
      admitted: () => ({
        upstreamStatus: (c) => heard.push(`b ${c}`),
        passedThrough: (_r, e) => ({ ...e, track: (end) => e.track!(end) }),
      }),
    };
    const o = observeRequest([handing, wrapping], watch)!;
    o.upstreamStatus?.(200);
    assert.deepEqual(heard, ['a 200', 'b 200']);
    const endings = o.passedThrough!('not-cached', { track: () => () => {} });
    assert.equal(typeof endings.handover, 'function', 'the later hook kept the earlier handover');
  });

  it('the on-demand subscription keeps endings given by an earlier hook and adds its own handover', () => {
    const hook = onDemandRequestHook({
      request: () => {},
      trackWatch: () => () => {},
    });
    const earlier = () => () => {};
    const o = observeRequest([hook], watch)!;
    const e = o.passedThrough!('not-cached', { track: () => () => {}, handover: earlier });
    assert.equal(typeof e.handover, 'function');
    assert.notEqual(
      e.handover,
      earlier,
      'a re-watching WATCH of a not-cached resource is handed over by on-demand',
    );
    const table = observeRequest([hook], {
      ...watch,
      headers: { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' },
    })!;
    const t = table.passedThrough!('not-cached', { track: () => () => {}, handover: earlier });
    assert.equal(t.handover, earlier, 'a Table watch is not on-demand business: endings unchanged');
  });
});
