import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AcceptHosts, hostWithoutPort } from '../../../src/auth/accept-hosts.ts';
import { OPTIONS } from '../../../src/config/config.ts';

const defaults = OPTIONS.find((o) => o.key === 'acceptHosts')!.default as string[];

describe('--accept-hosts', () => {
  const a = new AcceptHosts(defaults);

  it("has kubectl proxy's default", () => {
    assert.deepEqual(defaults, ['^localhost$', '^127\\.0\\.0\\.1$', '^\\[::1\\]$']);
  });

  it('accepts the machine itself, with and without port', () => {
    for (const h of ['localhost:8001', 'localhost', '127.0.0.1:8001', '127.0.0.1'])
      assert.ok(a.accepts(h), h);
  });

  it('accepts [::1]:port (kubectl proxy refuses it: SplitHostPort strips the brackets)', () => {
    assert.equal(hostWithoutPort('[::1]:8001'), '[::1]');
    assert.ok(a.accepts('[::1]:8001'));
    assert.ok(a.accepts('[::1]'));
  });

  it('refuses DNS-rebinding names, look-alikes and a missing Host', () => {
    for (const h of ['evil.example:8001', 'localhost.evil.example', '127.0.0.1.nip.io:8001', '::1', ''])
      assert.equal(a.accepts(h), false, h);
    assert.equal(a.accepts(undefined), false);
  });

  it('custom patterns', () => {
    assert.ok(new AcceptHosts(['^proxy\\.local$']).accepts('proxy.local:443'));
  });
});
