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

describe('attack: Status errors negotiated by Accept like the apiserver (ErrorNegotiated)', () => {
  const path = '/api/v1/namespaces/a/pods/x%3Cy%26z?resourceVersion=0';
  const get = async (accept: string, userAgent = 'kcp') => {
    const { agent, server } = mockServer([], { protobufAnswers: 'cache' });
    try {
      const r = await server.app.inject({
        method: 'GET',
        url: path,
        headers: { accept, 'user-agent': userAgent },
      });
      return { code: r.statusCode, type: r.headers['content-type'], body: r.rawPayload };
    } finally {
      await server.shutdown();
      await agent.close();
    }
  };
  // The apiserver's answers (v1.37.2) to the same GET, captured with curl.
  const PROTOBUF_404 = Buffer.from(
    '6b3873000a0c0a0276311206537461747573124b0a060a0012001a0012074661696c7572651a16706f64732022783c79267a22206e6f7420666f756e6422084e6f74466f756e642a130a05783c79267a12001a04706f6473280032003094031a002200',
    'hex',
  );
  const INDENTED_404 =
    '{\n  "kind": "Status",\n  "apiVersion": "v1",\n  "metadata": {},\n  "status": "Failure",\n  "message": "pods \\"x\\u003cy\\u0026z\\" not found",\n  "reason": "NotFound",\n  "details": {\n    "name": "x\\u003cy\\u0026z",\n    "kind": "pods"\n  },\n  "code": 404\n}';

  for (const accept of [
    'application/vnd.kubernetes.protobuf',
    'application/vnd.kubernetes.protobuf, application/json',
    'application/vnd.kubernetes.protobuf, */*',
  ]) {
    it(`protobuf Status for a protobuf-first Accept (${accept})`, async () => {
      const r = await get(accept);
      assert.equal(r.code, 404);
      assert.equal(r.type, 'application/vnd.kubernetes.protobuf');
      assert.equal(r.body.toString('hex'), PROTOBUF_404.toString('hex'));
    });
  }

  for (const accept of [
    'application/json;as=Table;g=meta.k8s.io;v=v1',
    'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1',
    'application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1',
  ]) {
    it(`WriteRawJSON's indented JSON when no clause takes an error (${accept})`, async () => {
      const r = await get(accept);
      assert.equal(r.code, 404);
      assert.equal(r.type, 'application/json');
      assert.equal(r.body.toString(), INDENTED_404);
    });
  }

  it("compact JSON when a plain clause follows the Table one (kubectl's Accept)", async () => {
    const r = await get('application/json;as=Table;v=v1;g=meta.k8s.io,application/json');
    assert.equal(r.type, 'application/json');
    assert.equal(
      r.body.toString(),
      `${JSON.stringify(JSON.parse(INDENTED_404))}\n`.replaceAll('<', '\\u003c').replaceAll('&', '\\u0026'),
    );
  });
});
