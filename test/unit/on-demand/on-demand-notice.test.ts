import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ResourceRequest } from '../../../src/apimachinery/request-info.ts';
import type { OnDemandHook } from '../../../src/on-demand/on-demand-hook.ts';
import { onDemandReasonOf, tellOnDemandOf } from '../../../src/on-demand/on-demand-notice.ts';

const cm: ResourceRequest = { group: '', version: 'v1', resource: 'configmaps', namespace: 'a' };

function hook() {
  const told: string[] = [];
  const h: OnDemandHook = {
    request: (info, reason, verb) => told.push(`${verb} ${info.resource} ${reason ?? ''}`),
    trackWatch: () => () => {},
  };
  return { h, told };
}

describe('issue 15: what the on-demand manager is told, and when', () => {
  it('a not-cached LIST or WATCH is told on a 2xx answer only (a 403/401/404 starts nothing)', () => {
    const { h, told } = hook();
    const list = tellOnDemandOf(h, {
      info: cm,
      method: 'GET',
      query: new URLSearchParams(),
      reason: 'not-cached',
    });
    const watch = tellOnDemandOf(h, {
      info: cm,
      method: 'GET',
      query: new URLSearchParams('watch=true'),
      reason: 'not-cached',
    });
    assert.ok(list && watch);
    assert.deepEqual(told, [], 'nothing before the answer');
    for (const status of [401, 403, 404, 500]) list(status);
    assert.deepEqual(told, []);
    list(200);
    watch(200);
    assert.deepEqual(told, ['list configmaps not-cached', 'watch configmaps not-cached']);
  });

  it('uses (served from the cache, not-synced, …) and other verbs are told at once', () => {
    const { h, told } = hook();
    assert.equal(
      tellOnDemandOf(h, { info: cm, method: 'GET', query: new URLSearchParams(), reason: undefined }),
      undefined,
    );
    assert.equal(
      tellOnDemandOf(h, { info: cm, method: 'GET', query: new URLSearchParams(), reason: 'not-synced' }),
      undefined,
    );
    assert.equal(
      tellOnDemandOf(h, {
        info: { ...cm, name: 'x' },
        method: 'GET',
        query: new URLSearchParams(),
        reason: 'not-cached',
      }),
      undefined,
    );
    assert.deepEqual(told, ['list configmaps ', 'list configmaps not-synced', 'other configmaps not-cached']);
  });

  it('a not-cached Table request is told the reason no cache could answer it', () => {
    const table = { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json' };
    assert.equal(onDemandReasonOf(cm, 'not-cached', new URLSearchParams(), table), 'media-type');
    assert.equal(
      onDemandReasonOf(cm, 'not-cached', new URLSearchParams(), { accept: 'application/json' }),
      'not-cached',
    );
    assert.equal(onDemandReasonOf(cm, 'not-live', new URLSearchParams(), table), 'not-live');
    assert.equal(onDemandReasonOf(undefined, 'not-cached', new URLSearchParams(), table), 'not-cached');
  });
});
