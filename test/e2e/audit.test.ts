/**
 * Issue 30 item 2, the audit oracle: the fixture apiserver runs with the same audit policy as the
 * proxy and an audit log of its own; each request is sent once directly and once through the
 * proxy, and the proxy's events for the read it answered from its cache (or the 401/403 it
 * answered itself) must equal the apiserver's for the direct one, stage by stage, except the
 * fields that differ by nature (docs/audit.md "Compared with the apiserver").
 *
 * - `--delegated-auth` over TLS: the event's user is the real caller (TokenReview), the
 *   authorization annotations the SubjectAccessReview's answer;
 * - the simple sidecar mode: a request without credential is the proxy's own identity.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { type Fixture, LIMITED_NAMESPACE, startFixture } from '../fixture/index.ts';
import { eventually } from '../support/eventually.ts';
import { type InProcessProxy, startProxy } from '../support/proxy.ts';

const POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: RequestResponse
  resources: [{group: "", resources: [configmaps]}]
  omitManagedFields: true
- level: Metadata
  resources: [{group: "", resources: [secrets]}]
- level: Request
  resources: [{group: "", resources: [serviceaccounts]}]
  omitStages: [RequestReceived]
- level: None
`;

/** Fields that differ by nature (docs/audit.md). */
const MASKED = ['auditID', 'requestReceivedTimestamp', 'stageTimestamp', 'sourceIPs'] as const;
const UA = 'kcp-audit-e2e/1.0';

type Event = Record<string, unknown> & {
  auditID: string;
  stage: string;
  annotations?: Record<string, string>;
};

function masked(e: Event, dropAuthz = false): Record<string, unknown> {
  const out: Record<string, unknown> = { ...e };
  for (const k of MASKED) delete out[k];
  const ann = Object.fromEntries(
    Object.entries(e.annotations ?? {}).filter(
      ([k]) =>
        !k.startsWith('apiserver.latency.k8s.io/') && !(dropAuthz && k.startsWith('authorization.k8s.io/')),
    ),
  );
  delete out.annotations;
  if (Object.keys(ann).length > 0) out.annotations = ann;
  return out;
}

async function events(file: string, auditID: string): Promise<Event[]> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter((l) => l.includes(auditID))
    .map((l) => JSON.parse(l) as Event)
    .filter((e) => e.auditID === auditID);
}

describe('issue 30: audit events of the proxy equal the apiserver audit log', () => {
  let f: Fixture;
  let dir: string;
  let policy: string;
  let apiserverLog: string;
  let proxyLog: string;
  let sidecarLog: string;
  let agent: Agent;
  let p: InProcessProxy;
  let sidecar: InProcessProxy;
  const ns = LIMITED_NAMESPACE;

  const send = async (base: string, path: string, token: string | undefined) => {
    const r = await request(`${base}${path}`, {
      dispatcher: agent,
      headers: {
        accept: 'application/json',
        'user-agent': UA,
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
    });
    const body = await r.body.text();
    return { status: r.statusCode, body, auditID: String(r.headers['audit-id'] ?? '') };
  };

  /** The events of one request in a log, once its last stage is there. */
  const stagesOf = (file: string, auditID: string, last: string) =>
    eventually(`${last} of ${auditID} in ${file}`, 20_000, async () => {
      const evs = await events(file, auditID);
      return evs.some((e) => e.stage === last) ? evs : undefined;
    });

  /**
   * Sends `path` directly and through `via` with the same credential; returns both event lists
   * (the proxy's answered from its cache: no passed-upstream annotation).
   */
  const pair = async (
    via: InProcessProxy,
    viaLog: string,
    path: string,
    token: string | undefined,
    directToken: string | undefined,
    last = 'ResponseComplete',
  ) => {
    const direct = await send(f.server, path, directToken);
    const proxied = await send(via.url, path, token);
    assert.equal(proxied.status, direct.status, `${path}: ${proxied.body} vs ${direct.body}`);
    assert.notEqual(proxied.auditID, '');
    const d = await stagesOf(apiserverLog, direct.auditID, last);
    const v = await stagesOf(viaLog, proxied.auditID, last);
    for (const e of v)
      assert.equal(
        e.annotations?.['kube-cache-proxy.io/passed-upstream'],
        undefined,
        `${path} answered from the cache`,
      );
    return { d, v, direct, proxied };
  };

  const assertSame = (d: Event[], v: Event[], dropAuthz = false) => {
    // A LIST at RV="" shows the revision it was read at: the apiserver's current one directly,
    // the cache's through the proxy (docs/design.md, consistency model); every other field of
    // the response object is compared.
    for (const [i, e] of d.entries()) {
      const listMeta = (x: Event | undefined) =>
        (x?.responseObject as { items?: unknown; metadata?: { resourceVersion?: string } } | undefined)?.items
          ? (x!.responseObject as { metadata: { resourceVersion?: string } }).metadata
          : undefined;
      const dm = listMeta(e);
      const vm = listMeta(v[i]);
      if (dm && vm) dm.resourceVersion = vm.resourceVersion;
    }
    assert.deepEqual(
      v.map((e) => masked(e, dropAuthz)),
      d.map((e) => masked(e, dropAuthz)),
    );
  };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kcp-audit-e2e-'));
    policy = join(dir, 'policy.yaml');
    apiserverLog = join(dir, 'apiserver', 'audit.log');
    proxyLog = join(dir, 'proxy', 'audit.log');
    sidecarLog = join(dir, 'sidecar', 'audit.log');
    await writeFile(policy, POLICY);
    f = await startFixture({
      apiserverFlags: [`--audit-policy-file=${policy}`, `--audit-log-path=${apiserverLog}`],
    });
    agent = new Agent({ connect: { ca: f.caPem } });
    for (const args of [
      ['create', 'configmap', 'a1', '-n', ns, '--from-literal=k=v1'],
      ['create', 'configmap', 'a2', '-n', ns, '--from-literal=k=v2'],
      ['create', 'secret', 'generic', 's1', '-n', ns, '--from-literal=password=hunter2-secret'],
    ]) {
      const r = await f.kubectl(args);
      assert.equal(r.code, 0, r.stderr);
    }
    const audit = ['--audit-policy-file', policy];
    p = await startProxy(f, {
      resources: 'configmaps,secrets,serviceaccounts',
      delegatedAuth: true,
      args: [...audit, '--audit-log-path', proxyLog],
    });
    sidecar = await startProxy(f, {
      resources: 'configmaps',
      args: [...audit, '--audit-log-path', sidecarLog, '--audit-passed-upstream'],
    });
    // Both caches hold the objects made above before the pairs are compared.
    for (const via of [p, sidecar])
      await eventually('configmaps in the cache', 20_000, async () => {
        const r = await send(via.url, `/api/v1/namespaces/${ns}/configmaps/a2`, f.tokens.admin);
        return r.status === 200 ? true : undefined;
      });
  });
  after(async () => {
    await p?.stop();
    await sidecar?.stop();
    await agent?.close();
    await f?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('LIST and GET at RequestResponse (omitManagedFields): every stage equal, response object included', async () => {
    for (const path of [`/api/v1/namespaces/${ns}/configmaps`, `/api/v1/namespaces/${ns}/configmaps/a1`]) {
      const { d, v, proxied } = await pair(p, proxyLog, path, f.tokens.reader, f.tokens.reader);
      assert.deepEqual(
        v.map((e) => e.stage),
        ['RequestReceived', 'ResponseComplete'],
      );
      // The response object is what the client received, managed fields dropped.
      const answered = JSON.parse(proxied.body) as {
        metadata: { resourceVersion?: string };
        items?: unknown[];
      };
      const stripped = JSON.parse(JSON.stringify(answered), (k, val) =>
        k === 'managedFields' ? undefined : val,
      );
      assert.deepEqual(v[1]!.responseObject, stripped);
      assertSame(d, v);
      const complete = v[1]!;
      assert.equal(
        (complete.user as { username: string }).username,
        'system:serviceaccount:kcp-system:reader',
      );
      assert.equal(complete.annotations?.['authorization.k8s.io/decision'], 'allow');
      assert.match(
        complete.annotations?.['authorization.k8s.io/reason'] ?? '',
        /^RBAC: allowed by RoleBinding /,
      );
      assert.ok(complete.responseObject, 'RequestResponse has the object');
      assert.doesNotMatch(JSON.stringify(complete.responseObject), /managedFields/);
    }
  });

  test('a GET the cache answers 404: the Status in responseStatus and responseObject, as the apiserver', async () => {
    const { d, v } = await pair(
      p,
      proxyLog,
      `/api/v1/namespaces/${ns}/configmaps/nope`,
      f.tokens.reader,
      f.tokens.reader,
    );
    assertSame(d, v);
    assert.equal((v[1]!.responseStatus as { code: number }).code, 404);
  });

  test('Secrets at Metadata: no data in any event; equal to the apiserver', async () => {
    const { d, v, proxied } = await pair(
      p,
      proxyLog,
      `/api/v1/namespaces/${ns}/secrets`,
      f.tokens.admin,
      f.tokens.admin,
    );
    assert.match(proxied.body, /aHVudGVyMi1zZWNyZXQ=/, 'the client got the data');
    assertSame(d, v);
    const text = await readFile(proxyLog, 'utf8');
    assert.doesNotMatch(text, /aHVudGVyMi1zZWNyZXQ=|hunter2-secret/);
    for (const e of v) assert.equal('responseObject' in e, false);
  });

  test('omitStages: a rule without RequestReceived writes only ResponseComplete, both sides', async () => {
    const { d, v } = await pair(
      p,
      proxyLog,
      `/api/v1/namespaces/${ns}/serviceaccounts`,
      f.tokens.reader,
      f.tokens.reader,
    );
    assert.deepEqual(
      v.map((e) => [e.stage, e.level]),
      [['ResponseComplete', 'Request']],
    );
    assertSame(d, v);
  });

  test('a WATCH: RequestReceived, ResponseStarted when the stream starts, ResponseComplete when it ends', async () => {
    const path = `/api/v1/namespaces/${ns}/configmaps?watch=1&timeoutSeconds=1`;
    const { d, v } = await pair(p, proxyLog, path, f.tokens.reader, f.tokens.reader);
    assert.deepEqual(
      v.map((e) => e.stage),
      ['RequestReceived', 'ResponseStarted', 'ResponseComplete'],
    );
    assertSame(d, v);
  });

  test('a 403 the proxy answers (SubjectAccessReview denied): decision forbid, the Status, as the apiserver', async () => {
    const { d, v } = await pair(
      p,
      proxyLog,
      `/api/v1/namespaces/${ns}/configmaps`,
      f.tokens.none,
      f.tokens.none,
    );
    assert.equal((v[1]!.responseStatus as { code: number }).code, 403);
    assert.equal(v[1]!.annotations?.['authorization.k8s.io/decision'], 'forbid');
    assertSame(d, v);
  });

  test('a 401 the proxy answers: one ResponseStarted event without user, as the apiserver', async () => {
    const { d, v } = await pair(
      p,
      proxyLog,
      `/api/v1/namespaces/${ns}/configmaps`,
      'not-a-valid-token',
      'not-a-valid-token',
      'ResponseStarted',
    );
    assert.deepEqual(
      v.map((e) => e.stage),
      ['ResponseStarted'],
    );
    assertSame(d, v);
  });

  test('the sidecar mode: a request without credential is audited as the proxy identity (no authorization annotations)', async () => {
    const { d, v } = await pair(
      sidecar,
      sidecarLog,
      `/api/v1/namespaces/${ns}/configmaps`,
      undefined,
      f.tokens.admin,
    );
    assert.equal((v[0]!.user as { username: string }).username, 'system:serviceaccount:kcp-system:admin');
    assert.equal(v[1]!.annotations, undefined);
    assertSame(d, v, true);
  });

  test('--audit-passed-upstream: a request passed upstream is marked, at Metadata, under the audit ID the apiserver logged it with', async () => {
    // serviceaccounts: not cached by the sidecar proxy; the policy's level is Request, without RequestReceived.
    const r = await send(sidecar.url, `/api/v1/namespaces/${ns}/serviceaccounts`, undefined);
    assert.equal(r.status, 200, r.body);
    const v = await stagesOf(sidecarLog, r.auditID, 'ResponseComplete');
    const d = await stagesOf(apiserverLog, r.auditID, 'ResponseComplete');
    assert.deepEqual(
      v.map((e) => [e.stage, e.level, e.annotations?.['kube-cache-proxy.io/passed-upstream']]),
      [['ResponseComplete', 'Metadata', 'not-cached']],
    );
    assert.deepEqual(
      d.map((e) => [e.stage, e.level]),
      [['ResponseComplete', 'Request']],
    );
    const { level: _l1, annotations: _a1, ...proxyRest } = masked(v[0]!);
    const { level: _l2, annotations: _a2, ...apiRest } = masked(d[0]!);
    assert.deepEqual(proxyRest, apiRest, 'the same request, user (the proxy identity) and answer');
  });

  test('no token appears in any event of the proxy', async () => {
    const text = (await readFile(proxyLog, 'utf8')) + (await readFile(sidecarLog, 'utf8'));
    assert.ok(text.length > 0);
    for (const t of Object.values(f.tokens)) assert.ok(!text.includes(t), 'a bearer token in the audit log');
    assert.ok(!text.includes('not-a-valid-token'));
  });
});
