/**
 * Cases marked `attack:` are inputs found by attacking the proxy against a real apiserver
 * (v1.37.2) where the cache answered differently from the apiserver; each must now reach the
 * apiserver (or be accepted like it does).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { forwardRequestHeaders } from '../../../src/server/hop-by-hop.ts';

describe('attack: Connection naming Authorization', () => {
  it("keeps the client's Authorization (was dropped, then replaced by the proxy's credentials)", () => {
    const h = forwardRequestHeaders({
      authorization: 'Bearer limited-user',
      connection: 'close, Authorization, x-hop',
      'x-hop': '1',
    });
    assert.equal(h.authorization, 'Bearer limited-user');
    assert.equal(h['x-hop'], undefined);
  });
});
