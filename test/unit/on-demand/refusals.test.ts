import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { groupVersionOf, Refusals, refusalKey } from '../../../src/on-demand/refusals.ts';
import { FakeClock } from '../../support/fake-clock.ts';

describe('Refusals (on-demand)', () => {
  it('a refusal per resource expires; a cluster-wide denial still lets a namespace be reviewed', async () => {
    const clock = new FakeClock();
    const r = new Refusals(clock);
    r.remember('deployments.v1.apps', 60_000);
    assert.equal(r.isRefused('deployments.v1.apps', undefined), true);
    assert.equal(r.isRefused('deployments.v1.apps', 'a'), true);
    r.remember('configmaps.v1', 60_000, 'list');
    assert.equal(r.isRefused('configmaps.v1', undefined), true);
    assert.equal(r.isRefused('configmaps.v1', 'a'), false, 'namespace a may still be reviewed');
    r.remember(refusalKey('configmaps.v1', 'a'), 60_000);
    assert.equal(r.isRefused('configmaps.v1', 'a'), true);
    assert.equal(r.isRefused('configmaps.v1', 'b'), false);
    await clock.step(60_000);
    assert.equal(r.isRefused('deployments.v1.apps', undefined), false);
    assert.equal(r.live('configmaps.v1'), undefined);
  });

  it('issue 15: a missing group-version refuses each of its names until it expires; sweep forgets what expired', async () => {
    const clock = new FakeClock();
    const r = new Refusals(clock);
    assert.equal(groupVersionOf('things.v1.g1.bogus.example.com'), 'g1.bogus.example.com/v1');
    assert.equal(groupVersionOf('configmaps.v1'), 'v1');
    r.missingGroupVersion('things.v1.g1.bogus.example.com', 5_000);
    assert.equal(r.isRefused('others.v1.g1.bogus.example.com', undefined), true);
    assert.equal(r.isRefused('others.v2.g1.bogus.example.com', undefined), false, 'another version');
    assert.equal(r.isRefused('others.v1.g2.bogus.example.com', undefined), false, 'another group');
    await clock.step(5_000);
    r.sweep();
    assert.equal(r.isRefused('others.v1.g1.bogus.example.com', undefined), false);
  });
});
