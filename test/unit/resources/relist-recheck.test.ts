import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RelistRecheck } from '../../../src/resources/relist-recheck.ts';
import { DiscoveryError } from '../../../src/util/errors.ts';
import { FakeClock } from '../../support/fake-clock.ts';
import { resourceInfo } from '../../support/resource-info.ts';

const flush = async () => {
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
};
const widgets = () => resourceInfo('example.com/v1', 'widgets', 'Widget');
const gone = () => {
  throw new DiscoveryError('KCP_ERR_DISCOVERY_NOT_FOUND', 'widgets', 'not served');
};

describe('RelistRecheck: the one re-check after a relist', () => {
  function harness(goneIsChange: boolean, answer: () => ReturnType<typeof widgets>) {
    const clock = new FakeClock();
    const changes: string[] = [];
    const errors: string[] = [];
    let asked = 0;
    const r = new RelistRecheck({
      info: widgets(),
      discover: async () => {
        asked++;
        return answer();
      },
      goneIsChange,
      clock,
      onChange: (c) => changes.push(c),
      onDiscoveryError: (e) => errors.push((e as Error).message),
    });
    return { r, clock, changes, errors, asked: () => asked };
  }

  it('gone counts as a change only with goneIsChange (on demand: stop; configured: the reflector retries)', async () => {
    const onDemand = harness(true, gone);
    onDemand.r.relisted();
    await flush();
    assert.deepEqual(onDemand.changes, ['not served']);
    const configured = harness(false, gone);
    configured.r.relisted();
    await flush();
    assert.deepEqual(configured.changes, []);
    assert.equal(configured.errors.length, 1);
  });

  it('stop cancels the second discovery; after a change it is done for good', async () => {
    const h = harness(true, widgets);
    h.r.relisted();
    await flush();
    assert.equal(h.asked(), 1);
    h.r.stop();
    await h.clock.step(5_000);
    await flush();
    assert.equal(h.asked(), 1, 'the timer was cleared');
    const c = harness(true, () => resourceInfo('example.com/v1', 'widgets', 'Widget', { namespaced: false }));
    c.r.relisted();
    await flush();
    c.r.checkOnce();
    await flush();
    assert.deepEqual(c.changes, ['scope Namespaced → Cluster']);
    assert.equal(c.asked(), 1);
  });
});
