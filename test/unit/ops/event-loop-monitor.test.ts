import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startEventLoopMonitor } from '../../../src/ops/event-loop-monitor.ts';

describe('startEventLoopMonitor', () => {
  it('sees a blocked event loop and forgets it after stop', async () => {
    const m = startEventLoopMonitor({ resolutionMs: 10 });
    await sleep(30);
    const until = Date.now() + 150;
    while (Date.now() < until) {
      // Busy wait: the stall the monitor must notice.
    }
    await sleep(30);
    assert.ok(m.maxDelayMs() >= 100, `maxDelayMs ${m.maxDelayMs()} < 100`);
    m.stop();
    assert.equal(m.maxDelayMs(), 0);
  });
});
