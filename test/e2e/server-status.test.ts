/**
 * Bad-input parity: each malformed LIST/WATCH/GET parameter is sent to the fixture apiserver
 * and to the proxy (which answers validation errors itself for cached resources); the Status
 * code, reason, message and details must be identical. Expectations are the live apiserver's,
 * never hand-written.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { type Fixture, sharedFixture } from '../fixture/index.ts';
import { type PassthroughProxy, startProxy } from '../support/proxy.ts';

const PATHS = [
  '/api/v1/pods?limit=abc',
  '/api/v1/pods?limit=1.5',
  '/api/v1/pods?limit=99999999999999999999',
  '/api/v1/pods?timeoutSeconds=abc',
  '/api/v1/pods?timeoutSeconds=',
  '/api/v1/namespaces/default/pods?limit=-',
  '/api/v1/pods?resourceVersionMatch=NotOlderThan',
  '/api/v1/pods?resourceVersionMatch=Exact',
  '/api/v1/pods?resourceVersion=1&resourceVersionMatch=Foo',
  '/api/v1/pods?resourceVersion=0&resourceVersionMatch=Exact',
  '/api/v1/pods?resourceVersionMatch=Foo&continue=abc',
  '/api/v1/pods?sendInitialEvents=true',
  '/api/v1/pods?sendInitialEvents=false&resourceVersion=0',
  '/api/v1/pods?watch=1&resourceVersionMatch=NotOlderThan',
  '/api/v1/pods?watch=1&resourceVersion=5&resourceVersionMatch=Exact',
  '/api/v1/pods?watch=1&sendInitialEvents=true',
  '/api/v1/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=Exact',
  '/api/v1/pods?watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan&continue=x',
  '/api/v1/pods?watch=true&timeoutSeconds=x',
  '/api/v1/pods?resourceVersion=abc',
  '/api/v1/namespaces/default/pods/nope?resourceVersion=abc',
  '/api/v1/namespaces/default/pods/nope',
  '/api/v1/pods?fieldSelector=foo%3Dbar',
];

/** Selector grammar errors (the real parsers of src/apimachinery). */
const SELECTOR_PATHS = [
  '/api/v1/pods?labelSelector=a%20in%20(',
  '/api/v1/pods?labelSelector=x%3D%3Dy%3Dz',
  '/api/v1/pods?labelSelector=-x',
  '/api/v1/pods?labelSelector=a%20notin%20b',
  '/api/v1/pods?labelSelector=!',
  '/api/v1/pods?fieldSelector=metadata.name%3D%3D%3Dx',
  '/api/v1/pods?fieldSelector=spec.nodeName',
  '/api/v1/pods?watch=1&labelSelector=a%3D(',
  '/api/v1/pods?labelSelector=a%3D(&resourceVersionMatch=Foo',
];

/** One passthrough proxy beside the shared fixture for both families of error answers. */
describe('Status errors: proxy = apiserver', () => {
  let f: Fixture;
  let proxy: PassthroughProxy;
  let agent: Agent;
  before(async () => {
    f = await sharedFixture();
    proxy = await startProxy(f, { run: 'passthrough' });
    agent = new Agent({ connect: { ca: f.caPem } });
  });
  after(async () => {
    await proxy.stop();
    await agent.close();
  });

  describe('malformed parameters: proxy Status = apiserver Status', () => {
    for (const path of [...PATHS, ...SELECTOR_PATHS]) {
      test(path, async () => {
        const headers = { authorization: `Bearer ${f.tokens.admin}`, accept: 'application/json' };
        const direct = await request(`${f.server}${path}`, { dispatcher: agent, headers });
        const viaProxy = await request(`${proxy.url}${path}`, { headers });
        const d = (await direct.body.json()) as Record<string, unknown>;
        const p = (await viaProxy.body.json()) as Record<string, unknown>;
        assert.equal(viaProxy.statusCode, direct.statusCode);
        assert.deepEqual(p, d);
      });
    }
  });

  /**
   * The apiserver negotiates an error's encoding from `Accept` (`responsewriters.ErrorNegotiated`):
   * protobuf for a protobuf-first client, `WriteRawJSON`'s indented JSON when every clause asks a
   * conversion (Table-only, metadata-only). Status, Content-Type and bytes must be the apiserver's.
   */
  describe('attack: error encodings per Accept: proxy bytes = apiserver bytes', () => {
    const ACCEPTS = [
      'application/vnd.kubernetes.protobuf, application/json',
      'application/json;as=Table;g=meta.k8s.io;v=v1',
      'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1',
      'application/json;as=Table;v=v1;g=meta.k8s.io,application/json',
    ];
    for (const path of [
      '/api/v1/pods?labelSelector=a%20in%20(',
      '/api/v1/pods?limit=abc',
      '/api/v1/pods?resourceVersionMatch=Exact',
    ]) {
      for (const accept of ACCEPTS) {
        test(`${path} Accept: ${accept}`, async () => {
          const headers = { authorization: `Bearer ${f.tokens.admin}`, accept, 'user-agent': 'kcp-e2e' };
          const direct = await request(`${f.server}${path}`, { dispatcher: agent, headers });
          const viaProxy = await request(`${proxy.url}${path}`, { headers });
          const d = Buffer.from(await direct.body.arrayBuffer());
          const p = Buffer.from(await viaProxy.body.arrayBuffer());
          assert.equal(direct.statusCode >= 400, true);
          assert.equal(viaProxy.statusCode, direct.statusCode);
          assert.equal(viaProxy.headers['content-type'], direct.headers['content-type']);
          assert.equal(p.toString('hex'), d.toString('hex'));
        });
      }
    }
  });
});
