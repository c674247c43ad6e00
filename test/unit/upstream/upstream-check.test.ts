import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Agent } from 'undici';
import { checkUpstream, describeUpstreamFailure } from '../../../src/upstream/upstream-check.ts';

/** A scripted upstream: `/version` and the SelfSubjectReview answer what `answers` says per token. */
describe('checkUpstream', () => {
  let server: Server;
  let base: string;
  const agent = new Agent();
  const seen: string[] = [];
  before(async () => {
    server = createServer((req, res) => {
      seen.push(`${req.method} ${req.url} ${req.headers.authorization ?? '-'}`);
      const token = req.headers.authorization ?? '';
      res.setHeader('content-type', 'application/json');
      if (token === 'Bearer bad') {
        res.statusCode = 401;
        return res.end(
          JSON.stringify({
            kind: 'Status',
            status: 'Failure',
            message: 'Unauthorized',
            reason: 'Unauthorized',
            code: 401,
          }),
        );
      }
      if (req.url === '/version') return res.end(JSON.stringify({ gitVersion: 'v1.37.2' }));
      if (token === 'Bearer old') {
        res.statusCode = 404;
        return res.end(JSON.stringify({ kind: 'Status', status: 'Failure', reason: 'NotFound', code: 404 }));
      }
      if (token === 'Bearer broken') {
        res.statusCode = 500;
        return res.end(
          JSON.stringify({
            kind: 'Status',
            status: 'Failure',
            message: 'etcd down\nreally',
            reason: 'InternalError',
            code: 500,
          }),
        );
      }
      res.end(JSON.stringify({ status: { userInfo: { username: 'system:serviceaccount:kcp:proxy' } } }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    await agent.close();
    await new Promise((r) => server.close(r));
  });
  const target = (token: string, url = base) => ({
    baseUrl: url,
    dispatcher: agent,
    authorization: () => `Bearer ${token}`,
  });

  it('passes with the version and, with identity, the username; sends the proxy credentials', async () => {
    seen.length = 0;
    assert.deepEqual(await checkUpstream(target('good'), { identity: true }), {
      ok: true,
      version: 'v1.37.2',
      user: 'system:serviceaccount:kcp:proxy',
    });
    assert.deepEqual(seen, [
      'GET /version Bearer good',
      'POST /apis/authentication.k8s.io/v1/selfsubjectreviews Bearer good',
    ]);
    assert.deepEqual(await checkUpstream(target('good')), { ok: true, version: 'v1.37.2' });
  });

  it('401: one line naming the request, without the token', async () => {
    const r = await checkUpstream(target('bad'), { identity: true });
    assert.deepEqual(r, {
      ok: false,
      reason: `GET ${base}/version: 401 Unauthorized: the apiserver rejected the proxy's credentials (the kubeconfig user's token or client certificate)`,
    });
  });

  it('a SelfSubjectReview not served (404) passes without a user; a 5xx fails on one line', async () => {
    assert.deepEqual(await checkUpstream(target('old'), { identity: true }), {
      ok: true,
      version: 'v1.37.2',
    });
    assert.deepEqual(await checkUpstream(target('broken'), { identity: true }), {
      ok: false,
      reason: `POST ${base}/apis/authentication.k8s.io/v1/selfsubjectreviews: 500 InternalError: etcd down really`,
    });
  });

  it('connection refused', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise((r) => closed.close(r));
    assert.deepEqual(await checkUpstream(target('good', url)), {
      ok: false,
      reason: `GET ${url}/version: connection refused (ECONNREFUSED)`,
    });
  });

  it('a credential source that fails names it', async () => {
    const r = await checkUpstream({
      baseUrl: base,
      dispatcher: agent,
      authorization: () => Promise.reject(new Error('exec plugin: exit status 1')),
    });
    assert.deepEqual(r, { ok: false, reason: "the proxy's credentials: exec plugin: exit status 1" });
  });
});

describe('describeUpstreamFailure', () => {
  it("TLS verification errors keep Node's reason without its system-CA hint", () => {
    const err = Object.assign(
      new Error(
        'unable to verify the first certificate; if the root CA is installed locally, try running Node.js with --use-system-ca',
      ),
      { code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' },
    );
    assert.equal(
      describeUpstreamFailure(new TypeError('fetch failed', { cause: err })),
      'TLS: unable to verify the first certificate (UNABLE_TO_VERIFY_LEAF_SIGNATURE)',
    );
  });
  it('host not found, timeouts', () => {
    assert.equal(
      describeUpstreamFailure(Object.assign(new Error('getaddrinfo ENOTFOUND x'), { code: 'ENOTFOUND' })),
      'no such host (ENOTFOUND)',
    );
    assert.equal(
      describeUpstreamFailure(
        Object.assign(new Error('Headers Timeout Error'), { code: 'UND_ERR_HEADERS_TIMEOUT' }),
      ),
      'timed out (no answer within 10s)',
    );
  });
});
