import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import type { ResourceInfo } from '../../../src/apimachinery/gvr.ts';
import { configuredRecheck } from '../../../src/resources/resource-set.ts';
import { DiscoveryError } from '../../../src/util/errors.ts';
import { FakeClock } from '../../support/fake-clock.ts';
import { resourceInfo } from '../../support/resource-info.ts';

const flush = async () => {
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
};

describe('configuredRecheck (issue 15: a configured CRD re-created with another scope)', () => {
  function harness(answers: (() => ResourceInfo)[]) {
    const clock = new FakeClock();
    const lines: { level: number; msg: string; change?: string; resource?: string }[] = [];
    const log = pino(
      { level: 'info' },
      new Writable({
        write(chunk, _enc, cb) {
          lines.push(JSON.parse(String(chunk)));
          cb();
        },
      }),
    );
    let unserved = 0;
    let asked = 0;
    const onRelist = configuredRecheck({
      info: resourceInfo('example.com/v1', 'widgets', 'Widget'),
      discover: async () => answers[Math.min(asked++, answers.length - 1)]!(),
      unserve: () => unserved++,
      clock,
      log,
    });
    return { clock, lines, onRelist, unserved: () => unserved, asked: () => asked };
  }
  const same = () => resourceInfo('example.com/v1', 'widgets', 'Widget');
  const cluster = () => resourceInfo('example.com/v1', 'widgets', 'Widget', { namespaced: false });

  it('a changed scope: unserved once, one error naming the resource, the change and the remedy', async () => {
    const h = harness([cluster]);
    h.onRelist();
    await flush();
    h.onRelist();
    await flush();
    assert.equal(h.unserved(), 1);
    assert.equal(h.asked(), 1, 'done: not asked again');
    assert.equal(h.lines.length, 1);
    assert.equal(h.lines[0]?.level, 50);
    assert.equal(h.lines[0]?.resource, 'widgets.example.com');
    assert.equal(h.lines[0]?.change, 'scope Namespaced → Cluster');
    assert.match(h.lines[0]?.msg ?? '', /its requests pass upstream; restart the proxy/);
  });

  it('unchanged: asked again 5 s later (discovery trailing the storage); a failing discovery changes nothing', async () => {
    const h = harness([
      same,
      () => {
        throw new DiscoveryError('KCP_ERR_DISCOVERY_NOT_FOUND', 'widgets', 'not served');
      },
      cluster,
    ]);
    h.onRelist();
    await flush();
    assert.equal(h.asked(), 1);
    await h.clock.step(5_000);
    await flush();
    assert.equal(h.asked(), 2);
    assert.equal(h.unserved(), 0);
    h.onRelist();
    await flush();
    assert.equal(h.unserved(), 1);
  });
});
