import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ExcludeList } from '../../../src/on-demand/exclude.ts';
import { logLines } from '../../support/log-lines.ts';

function capture() {
  const { logger: log, lines } = logLines<{ level: number; msg: string; entry?: string }>();
  return { log, lines };
}

describe('ExcludeList (--auto-exclude, issue 15)', () => {
  it('excludes resource[.group] exactly; the default list warns about nothing', () => {
    const c = capture();
    const x = new ExcludeList(['secrets', 'leases.coordination.k8s.io'], c.log);
    assert.equal(x.excludes({ group: '', resource: 'secrets' }), true);
    assert.equal(x.excludes({ group: 'coordination.k8s.io', resource: 'leases' }), true);
    assert.equal(x.excludes({ group: '', resource: 'configmaps' }), false);
    x.warnMismatch({ group: 'apps', version: 'v1', resource: 'deployments' });
    assert.deepEqual(c.lines, []);
  });

  it('warns at start without secrets, and once per entry missing the group or read as resource.version', () => {
    const c = capture();
    const x = new ExcludeList(['deployments', 'secrets.v1'], c.log);
    assert.equal(x.excludes({ group: 'apps', resource: 'deployments' }), false);
    assert.equal(x.excludes({ group: '', resource: 'secrets' }), false);
    for (let i = 0; i < 2; i++) {
      x.warnMismatch({ group: 'apps', version: 'v1', resource: 'deployments' });
      x.warnMismatch({ group: '', version: 'v1', resource: 'secrets' });
    }
    assert.deepEqual(
      c.lines.map((l) => [l.level, l.entry ?? '', l.msg.split(':')[0]]),
      [
        [40, '', '--auto-exclude does not contain secrets'],
        [
          40,
          'deployments',
          '--auto-exclude entry deployments names the resource but not the group of deployments.apps',
        ],
        [
          40,
          'secrets.v1',
          '--auto-exclude entry secrets.v1 is read as resource secrets of group v1 (entries are resource[.group], no version)',
        ],
      ],
    );
  });
});
