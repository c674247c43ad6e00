/**
 * Cases marked `attack:` are inputs found by attacking the proxy against a real apiserver
 * (v1.37.2) where the cache answered differently from the apiserver; each must now reach the
 * apiserver (or be accepted like it does).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mockServer } from '../../support/fake-cache.ts';

describe('attack: Status bodies are byte-identical to Go encoding/json', () => {
  it('escapes < > & as \\u003c \\u003e \\u0026 (GET .../pods/x%3Cy&z: apiserver `x\\u003cy\\u0026z`)', async () => {
    const { agent, server } = mockServer();
    try {
      const r = await server.app.inject({
        method: 'GET',
        url: '/api/v1/namespaces/a/pods/x%3Cy%26z?resourceVersion=0',
      });
      assert.equal(r.statusCode, 404);
      assert.equal(
        r.body,
        '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \\"x\\u003cy\\u0026z\\" not found","reason":"NotFound","details":{"name":"x\\u003cy\\u0026z","kind":"pods"},"code":404}\n',
      );
    } finally {
      await server.shutdown();
      await agent.close();
    }
  });
});
