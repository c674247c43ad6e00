/**
 * Issue 10's bench rows: 100 distinct ServiceAccount identities (each may read pods in one namespace:
 * the fixture's ClusterRole `kcp-read` by a RoleBinding) doing cached GET and LIST, every row over TLS on the listener:
 * req/s and p99 through the proxy with `--delegated-auth` (each request carries the next
 * identity's token, round robin), through the proxy without auth (no credential: the sidecar's
 * cached path), and directly against the apiserver (the same 100 tokens). For the delegated rows,
 * the TokenReviews and SubjectAccessReviews the proxy sent, counted by the apiserver itself
 * (`apiserver_request_total{resource="tokenreviews"|"subjectaccessreviews"}`,
 * k8s.io/apiserver/pkg/endpoints/metrics) over a run at least twice the decision-cache TTLs, per
 * 1,000 client requests.
 */
import { request } from 'undici';
import type { Upstream } from '../../src/upstream/connection.ts';
import { type Fixture, READ_CLUSTER_ROLE } from '../../test/fixture/index.ts';
import { clientHeaders, type LoadResult, runLoad } from '../support/load.ts';
import { type ProxyProcess, startProxy } from '../support/proxy-process.ts';
import { nsName, parallel, podName } from '../support/seed.ts';

/** One row: a query against one target. */
export interface IdentityRow extends LoadResult {
  query: 'get' | 'namespace';
  target: 'direct' | 'proxy (no auth)' | 'proxy (delegated auth)';
  identities: number;
  /** Created on the apiserver during the row (expected 0 but for the delegated rows). */
  tokenReviews: number;
  subjectAccessReviews: number;
  tokenReviewsPer1000: number;
  subjectAccessReviewsPer1000: number;
  /** The decision-cache TTLs of the run, s (the run is at least twice as long). */
  ttlS: number;
}

/** Parameters: how many identities, how long a row runs, the TTL flags' value (s). */
export interface IdentityParams {
  identities: number;
  durationS: number;
  ttlS: number;
  connections: number;
  /** CPU of the proxy; load runs on `loadCpu(target)`. */
  proxyCpu: string;
  loadCpu: (target: string) => string;
}

const NS = nsName(3);
const PATHS = {
  get: `/api/v1/namespaces/${NS}/pods/${podName(3)}`,
  namespace: `/api/v1/namespaces/${NS}/pods?resourceVersion=0`,
} as const;

async function call(
  up: Upstream,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; text: string }> {
  const auth = await up.authorization();
  const res = await request(`${up.baseUrl}${path}`, {
    method: method as 'POST',
    dispatcher: up.dispatcher,
    headers: { 'content-type': 'application/json', ...(auth ? { authorization: auth } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.statusCode, text: await res.body.text() };
}

/** Creates `n` ServiceAccounts `bench-id-NNN` in the bench namespace, one RoleBinding to the fixture's read ClusterRole, and a token each. */
export async function benchIdentities(up: Upstream, n: number): Promise<string[]> {
  const names = Array.from({ length: n }, (_, i) => `bench-id-${String(i).padStart(3, '0')}`);
  await parallel(n, 16, async (i) => {
    const r = await call(up, 'POST', `/api/v1/namespaces/${NS}/serviceaccounts`, {
      metadata: { name: names[i] },
    });
    if (r.status !== 201 && r.status !== 409)
      throw new Error(`serviceaccount ${names[i]}: ${r.status} ${r.text}`);
  });
  const rb = await call(up, 'POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/rolebindings`, {
    metadata: { name: 'bench-identities-view' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: READ_CLUSTER_ROLE },
    subjects: names.map((name) => ({ kind: 'ServiceAccount', name, namespace: NS })),
  });
  if (rb.status !== 201 && rb.status !== 409) throw new Error(`rolebinding: ${rb.status} ${rb.text}`);
  const tokens: string[] = new Array(n);
  await parallel(n, 16, async (i) => {
    const r = await call(up, 'POST', `/api/v1/namespaces/${NS}/serviceaccounts/${names[i]}/token`, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { expirationSeconds: 7200 },
    });
    if (r.status !== 201) throw new Error(`token ${names[i]}: ${r.status} ${r.text}`);
    tokens[i] = (JSON.parse(r.text) as { status: { token: string } }).status.token;
  });
  return tokens;
}

/** `create` requests of `resource` the apiserver has counted so far. */
async function created(up: Upstream, resource: string): Promise<number> {
  const r = await call(up, 'GET', '/metrics');
  if (r.status !== 200) throw new Error(`apiserver /metrics: ${r.status}`);
  let total = 0;
  for (const line of r.text.split('\n')) {
    if (
      line.startsWith('apiserver_request_total{') &&
      line.includes(`resource="${resource}"`) &&
      line.includes('verb="POST"')
    )
      total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

/** Runs the rows (see the module docstring); `log` gets one line per row. */
export async function identityScenario(
  f: Fixture,
  up: Upstream,
  p: IdentityParams,
  log: (m: string) => void,
): Promise<IdentityRow[]> {
  const tokens = await benchIdentities(up, p.identities);
  const tls = ['--tls-cert-file', f.proxyTls.certFile, '--tls-private-key-file', f.proxyTls.keyFile];
  const ttl = [
    `--authentication-token-webhook-cache-ttl=${p.ttlS}s`,
    `--authorization-webhook-cache-authorized-ttl=${p.ttlS}s`,
    `--authorization-webhook-cache-unauthorized-ttl=${p.ttlS}s`,
  ];
  const rows: IdentityRow[] = [];
  const start = (extraArgs: string[]) =>
    startProxy({ kubeconfig: f.kubeconfigs.adminToken, resources: ['pods'], cpu: p.proxyCpu, extraArgs });
  const targets: Array<[IdentityRow['target'], () => Promise<ProxyProcess | undefined>]> = [
    ['direct', async () => undefined],
    ['proxy (no auth)', () => start(tls)],
    [
      'proxy (delegated auth)',
      () => start([...tls, '--client-ca-file', f.clientCaFile, '--delegated-auth', ...ttl]),
    ],
  ];
  for (const [target, launch] of targets) {
    const proxy = await launch();
    try {
      const base = proxy?.url ?? f.server;
      if (!base.startsWith('https://')) throw new Error(`${target}: not a TLS listener: ${base}`);
      for (const query of ['get', 'namespace'] as const) {
        const withTokens = target !== 'proxy (no auth)';
        const headers = clientHeaders(undefined, true);
        const [tr0, sar0] = [await created(up, 'tokenreviews'), await created(up, 'subjectaccessreviews')];
        const r = await runLoad(
          {
            url: base + PATHS[query],
            connections: p.connections,
            durationS: p.durationS,
            headers,
            ...(withTokens ? { tokens } : {}),
          },
          p.loadCpu(target),
        );
        const tr = (await created(up, 'tokenreviews')) - tr0;
        const sar = (await created(up, 'subjectaccessreviews')) - sar0;
        const per1000 = (x: number) => (r.requests > 0 ? Math.round((x / r.requests) * 1000 * 100) / 100 : 0);
        const row: IdentityRow = {
          query,
          target,
          ...r,
          identities: withTokens ? tokens.length : 0,
          tokenReviews: tr,
          subjectAccessReviews: sar,
          tokenReviewsPer1000: per1000(tr),
          subjectAccessReviewsPer1000: per1000(sar),
          ttlS: p.ttlS,
        };
        rows.push(row);
        log(
          `identity ${query} ${target}: ${Math.round(r.rps)} req/s p99 ${r.p99Ms} ms, non2xx ${r.non2xx}, TokenReviews ${row.tokenReviews} SARs ${row.subjectAccessReviews} (${row.tokenReviewsPer1000}/${row.subjectAccessReviewsPer1000} per 1,000)`,
        );
      }
    } finally {
      await proxy?.stop();
    }
  }
  return rows;
}
