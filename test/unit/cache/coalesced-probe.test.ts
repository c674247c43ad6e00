import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CoalescedProbe } from '../../../src/cache/coalesced-probe.ts';

/** A probe whose answers the test releases one by one. */
function scripted() {
  const pending: ((v: number) => void)[] = [];
  let sent = 0;
  const probe = new CoalescedProbe(
    () =>
      new Promise<number>((resolve) => {
        sent++;
        pending.push(resolve);
      }),
  );
  return { probe, pending, sent: () => sent };
}

describe('CoalescedProbe', () => {
  it('callers arriving while a probe is in flight share the NEXT one, sent when it settles', async () => {
    const s = scripted();
    const a = s.probe.next();
    const b = s.probe.next();
    const c = s.probe.next();
    assert.equal(s.sent(), 1, 'one probe in flight, b and c queued');
    s.pending[0]!(10);
    assert.equal(await a, 10);
    await new Promise((r) => setImmediate(r));
    assert.equal(s.sent(), 2, 'the queued probe is sent once the first settled');
    s.pending[1]!(20);
    assert.equal(await b, 20, 'b never joins the probe sent before it arrived');
    assert.equal(await c, 20);
  });

  it('a caller after everything settled sends a new probe', async () => {
    const s = scripted();
    const a = s.probe.next();
    s.pending[0]!(1);
    await a;
    await new Promise((r) => setImmediate(r));
    const b = s.probe.next();
    assert.equal(s.sent(), 2);
    s.pending[1]!(2);
    assert.equal(await b, 2);
  });

  it('a rejected probe rejects its callers and lets the queued one go', async () => {
    let n = 0;
    const probe = new CoalescedProbe(() =>
      n++ === 0 ? Promise.reject(new Error('down')) : Promise.resolve(7),
    );
    const a = probe.next();
    const b = probe.next();
    await assert.rejects(a, /down/);
    assert.equal(await b, 7);
  });
});
