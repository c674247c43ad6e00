import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ResourceRequest } from '../../../src/apimachinery/request-info.ts';
import type { OnDemandHook } from '../../../src/on-demand/on-demand-hook.ts';
import { onDemandRequestHook } from '../../../src/on-demand/server-hook.ts';

const widgets: ResourceRequest = { group: 'example.com', version: 'v1', resource: 'widgets', namespace: 'a' };
const crds: ResourceRequest = {
  group: 'apiextensions.k8s.io',
  version: 'v1',
  resource: 'customresourcedefinitions',
};
const TABLE = { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' };

function hook() {
  const told: string[] = [];
  const h: OnDemandHook = {
    request: (info, reason, verb) => told.push(`${verb} ${info.resource} ${reason ?? ''}`.trim()),
    trackWatch: () => () => {},
  };
  return { hook: onDemandRequestHook(h), told };
}

describe("a custom resource's Table and the CRDs' cache it reads (--resources=auto)", () => {
  it('passed upstream for want of the CRDs: starts them as a LIST of them would, once the apiserver answered 2xx', () => {
    const { hook: k, told } = hook();
    const o = k.admitted({
      info: widgets,
      method: 'GET',
      query: new URLSearchParams(),
      headers: TABLE,
      longRunning: false,
      reason: 'table-printer',
      needs: crds,
    });
    // At once: the widgets request (not a use: no cache could serve it so) and a use of the CRDs if started.
    assert.deepEqual(told, ['list widgets table-printer', 'other customresourcedefinitions']);
    for (const status of [401, 403, 404, 500]) o?.upstreamStatus?.(status);
    assert.equal(told.length, 2, 'a refused request starts nothing');
    o?.upstreamStatus?.(200);
    assert.deepEqual(told.slice(2), ['list customresourcedefinitions not-cached']);
  });

  it('served from the cache: a use of the CRDs, nothing started', () => {
    const { hook: k, told } = hook();
    const o = k.admitted({
      info: widgets,
      method: 'GET',
      query: new URLSearchParams(),
      headers: TABLE,
      longRunning: false,
      reason: undefined,
      needs: crds,
    });
    assert.deepEqual(told, ['list widgets', 'other customresourcedefinitions']);
    // Handed upstream after all (the cache not synced yet), a 2xx starts the CRDs if they are not.
    o?.upstreamStatus?.(200);
    assert.deepEqual(told.slice(2), ['list customresourcedefinitions not-cached']);
  });

  it('no needs (JSON, a built-in kind): nothing told of the CRDs', () => {
    const { hook: k, told } = hook();
    const o = k.admitted({
      info: widgets,
      method: 'GET',
      query: new URLSearchParams(),
      headers: {},
      longRunning: false,
      reason: 'not-cached',
    });
    o?.upstreamStatus?.(200);
    assert.deepEqual(told, ['list widgets not-cached']);
  });
});
