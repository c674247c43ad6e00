import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type HealthCheck, pingCheck, runHealthChecks } from '../../../src/ops/health-checks.ts';

const ok = (name: string): HealthCheck => ({ name, check: () => undefined });
const bad = (name: string, reason: string): HealthCheck => ({ name, check: () => reason });

describe('runHealthChecks', () => {
  it('answers a plain ok when healthy and not verbose', () => {
    assert.deepEqual(runHealthChecks('readyz', [pingCheck, ok('a')]), { healthy: true, body: 'ok' });
  });

  it('lists every check with verbose, like the apiserver', () => {
    assert.deepEqual(runHealthChecks('readyz', [pingCheck, ok('a')], { verbose: true }), {
      healthy: true,
      body: '[+]ping ok\n[+]a ok\nreadyz check passed\n',
    });
  });

  it('is always verbose on failure and shows the reason', () => {
    assert.deepEqual(runHealthChecks('livez', [pingCheck, bad('b', 'broken')]), {
      healthy: false,
      body: '[+]ping ok\n[-]b failed: broken\nlivez check failed\n',
    });
  });

  it('skips excluded checks and warns about unknown exclusions', () => {
    assert.deepEqual(runHealthChecks('readyz', [pingCheck, bad('b', 'x')], { exclude: ['b', 'zz', 'aa'] }), {
      healthy: true,
      body: 'ok',
    });
    assert.deepEqual(
      runHealthChecks('readyz', [bad('b', 'x')], { exclude: ['zz'], verbose: true }).body,
      '[-]b failed: x\nwarn: some health checks cannot be excluded: no matches for "zz"\nreadyz check failed\n',
    );
  });

  it('reports a throwing check as failed', () => {
    const boom: HealthCheck = {
      name: 'boom',
      check: () => {
        throw new Error('exploded');
      },
    };
    assert.deepEqual(runHealthChecks('healthz', [boom]), {
      healthy: false,
      body: '[-]boom failed: exploded\nhealthz check failed\n',
    });
  });
});
