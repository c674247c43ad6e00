import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { badRequest, StatusError, tooManyRequests } from '../../../src/apimachinery/status.ts';
import {
  ApiClientUnavailableError,
  ConfigError,
  ConnectionRefusedError,
  DependencyMissingError,
  DiscoveryError,
  ERROR_CODES,
  KcpError,
  type KcpErrorCode,
  KubeconfigError,
  ListenAddressError,
  ResourceVersionError,
  toStatusError,
  UpstreamError,
  VeryShortWatchError,
  WatchListIncompleteError,
} from '../../../src/util/errors.ts';

const codes = Object.keys(ERROR_CODES) as KcpErrorCode[];
const doc = readFileSync(new URL('../../../docs/errors.md', import.meta.url), 'utf8');

/** The docs/errors.md table row of `code`, split into its cells. */
function docRow(code: string): string[] | undefined {
  const line = doc.split('\n').find((l) => new RegExp(`^\\|\\s*\`${code}\`\\s*\\|`).test(l));
  return line
    ?.split('|')
    .slice(1, -1)
    .map((c) => c.trim());
}

/** One instance of every catalogue class, by code. */
const samples: Record<KcpErrorCode, KcpError> = {
  KCP_ERR_UPSTREAM_STATUS: new UpstreamError(403, 'GET /api/v1/pods: 403 forbidden'),
  KCP_ERR_CONNECTION_REFUSED: new ConnectionRefusedError('connect ECONNREFUSED 127.0.0.1:6443'),
  KCP_ERR_KUBECONFIG: new KubeconfigError('kubeconfig: no current cluster'),
  KCP_ERR_API_CLIENT_UNAVAILABLE: new ApiClientUnavailableError('makeApiClient is unavailable'),
  KCP_ERR_DEPENDENCY_MISSING: new DependencyMissingError('cannot load undici/lib/api'),
  KCP_ERR_DISCOVERY_INVALID_NAME: new DiscoveryError('KCP_ERR_DISCOVERY_INVALID_NAME', 'a/b', 'invalid'),
  KCP_ERR_DISCOVERY_NOT_FOUND: new DiscoveryError('KCP_ERR_DISCOVERY_NOT_FOUND', 'x', 'not served'),
  KCP_ERR_DISCOVERY_NOT_LIST_WATCHABLE: new DiscoveryError('KCP_ERR_DISCOVERY_NOT_LIST_WATCHABLE', 'b', 'no'),
  KCP_ERR_DISCOVERY_FAILED: new DiscoveryError('KCP_ERR_DISCOVERY_FAILED', 'pods', 'failed'),
  KCP_ERR_WATCH_TOO_SHORT: new VeryShortWatchError('very short watch'),
  KCP_ERR_WATCH_LIST_INCOMPLETE: new WatchListIncompleteError('ended early'),
  KCP_ERR_LIST_NO_RESOURCE_VERSION: new ResourceVersionError('KCP_ERR_LIST_NO_RESOURCE_VERSION', 'no RV'),
  KCP_ERR_UNEARNED_RESOURCE_VERSION: new ResourceVersionError(
    'KCP_ERR_UNEARNED_RESOURCE_VERSION',
    'unearned',
  ),
  KCP_ERR_RESOURCE_VERSION_NOT_UINT64: new ResourceVersionError('KCP_ERR_RESOURCE_VERSION_NOT_UINT64', 'bad'),
  KCP_ERR_CONFIG: new ConfigError('--listen: want HOST:PORT'),
  KCP_ERR_LISTEN_ADDRESS: new ListenAddressError('invalid listen address "x"'),
};

describe('the internal error catalogue (src/util/errors.ts)', () => {
  it('every code is unique, KCP_ERR_-prefixed, and has a class whose instances carry its code and name', () => {
    assert.equal(new Set(codes).size, codes.length);
    for (const code of codes) {
      assert.match(code, /^KCP_ERR_[A-Z0-9_]+$/);
      const e = samples[code];
      assert.ok(e instanceof KcpError && e instanceof Error, code);
      assert.equal(e.code, code);
      assert.equal(e.name, ERROR_CODES[code].name, code);
      assert.equal(new KcpError(code, 'x').name, ERROR_CODES[code].name, code);
    }
    assert.deepEqual(Object.keys(samples).sort(), [...codes].sort(), 'a sample per code');
  });

  it('every code maps to the Status its catalogue entry and docs/errors.md document', () => {
    for (const code of codes) {
      const row = docRow(code);
      assert.ok(row, `${code} is documented in docs/errors.md`);
      assert.equal(row[1], `\`${ERROR_CODES[code].name}\``, `${code}: documented name`);
      const s = toStatusError(samples[code]).status;
      if (ERROR_CODES[code].status === 'internal') {
        assert.equal(row[3], '500 InternalError', `${code}: documented Status`);
        assert.deepEqual(s, {
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Failure',
          message: `Internal error occurred: ${samples[code].message}`,
          reason: 'InternalError',
          details: { causes: [{ message: samples[code].message }] },
          code: 500,
        });
      } else {
        assert.equal(row[3], 'upstream Status (else 500 InternalError)', `${code}: documented Status`);
        // Without a Status payload: 500, like any internal error.
        assert.deepEqual([s.code, s.reason], [500, 'InternalError']);
      }
    }
    const documented = [...doc.matchAll(/^\|\s*`(KCP_ERR_[A-Z0-9_]+)`\s*\|/gm)].map((m) => m[1]);
    assert.deepEqual(documented.sort(), [...codes].sort(), 'docs/errors.md documents exactly the catalogue');
  });
});

describe('toStatusError', () => {
  it('passes a StatusError through unchanged', () => {
    const e = tooManyRequests('too many requests, please try again later', 1);
    assert.equal(toStatusError(e), e);
    const b = badRequest('bad');
    assert.equal(toStatusError(b), b);
  });

  it("an UpstreamError carrying a Status keeps the upstream's code, reason, message and details", () => {
    const e = UpstreamError.fromBody(
      403,
      JSON.stringify({
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: 'pods is forbidden: User "x" cannot list resource "pods"',
        reason: 'Forbidden',
        details: { kind: 'pods' },
        code: 403,
      }),
      'GET /api/v1/pods',
    );
    const s = toStatusError(e);
    assert.ok(s instanceof StatusError);
    assert.deepEqual(s.status, {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'pods is forbidden: User "x" cannot list resource "pods"',
      reason: 'Forbidden',
      details: { kind: 'pods' },
      code: 403,
    });
  });

  it('anything else is the apiserver 500 InternalError wording', () => {
    assert.deepEqual(toStatusError(new Error('boom')).status, {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'Internal error occurred: boom',
      reason: 'InternalError',
      details: { causes: [{ message: 'boom' }] },
      code: 500,
    });
    assert.equal(toStatusError('a string').status.message, 'Internal error occurred: a string');
  });
});
