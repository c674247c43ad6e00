/**
 * The delegation decision (`src/server/delegate.ts`): which requests the cache answers, and for
 * every other request the reason it goes upstream. "every upstream reason" builds, for each
 * entry of the closed list, a request that produces it and reads the reason back from both the
 * `reason` label of `kube_cache_proxy_requests_total` and the request's debug log line.
 * Cases marked `attack:` are inputs found by attacking the proxy against a real apiserver
 * (v1.37.2) where the cache answered differently from the apiserver; each must now reach the
 * apiserver (or be accepted like it does).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { encodeContinue } from '../../../src/apimachinery/continue-token.ts';
import { AccessControl } from '../../../src/auth/access-control.ts';
import type { SubjectAccessReviewAuthorizer } from '../../../src/auth/subject-access-review.ts';
import type { TokenReviewAuthenticator } from '../../../src/auth/token-review.ts';
import { createMetrics } from '../../../src/ops/metrics.ts';
import type { KubeServer, ServerOptions } from '../../../src/server/app.ts';
import { CacheRegistry } from '../../../src/server/cache-registry.ts';
import {
  delegate,
  indentedJson,
  UPSTREAM_REASONS,
  type UpstreamReason,
  uncacheableRequest,
} from '../../../src/server/delegate.ts';
import { ShardSupport } from '../../../src/server/shard-support.ts';
import { until } from '../../support/eventually.ts';
import { FakeCache, mockServer, pod } from '../../support/fake-cache.ts';
import { logLines } from '../../support/log-lines.ts';
import { resourceInfo } from '../../support/resource-info.ts';

describe('delegate', () => {
  const deployments = resourceInfo('apps/v1', 'deployments', 'Deployment');
  const reg = new CacheRegistry([new FakeCache(), new FakeCache(deployments)]);
  const r = (method: string, url: string, headers: Record<string, string> = {}) => {
    const [path, qs = ''] = url.split('?');
    const x = delegate(reg, method, path!, new URLSearchParams(qs), headers);
    return x.kind === 'cache' ? x.verb : 'upstream';
  };

  it('serves list/get/watch of the cached GroupVersion only', () => {
    assert.equal(r('GET', '/api/v1/pods'), 'list');
    assert.equal(r('GET', '/api/v1/namespaces/a/pods'), 'list');
    assert.equal(r('GET', '/api/v1/namespaces/a/pods/p'), 'get');
    assert.equal(r('GET', '/api/v1/namespaces/a/pods?watch=true'), 'watch');
    assert.equal(r('GET', '/apis/apps/v1/deployments'), 'list');
    assert.equal(r('GET', '/apis/apps/v1beta2/deployments'), 'upstream');
    assert.equal(r('GET', '/api/v1/configmaps'), 'upstream');
  });

  it('passes through writes, subresources, odd paths, impersonation and non-JSON', () => {
    assert.equal(r('POST', '/api/v1/namespaces/a/pods'), 'upstream');
    assert.equal(r('HEAD', '/api/v1/pods'), 'upstream');
    assert.equal(r('GET', '/api/v1/namespaces/a/pods/p/log'), 'upstream');
    assert.equal(r('GET', '/api/v1/pods/p'), 'upstream');
    assert.equal(r('GET', '/api/v1/namespaces/a/pods/p?watch=1'), 'upstream');
    assert.equal(r('GET', '/api/v1/pods', { 'impersonate-user': 'bob' }), 'upstream');
    assert.equal(
      r('GET', '/api/v1/pods', { accept: 'application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io' }),
      'upstream',
    );
  });

  it('issue 15: PartialObjectMetadata for GET and WATCH, …List for LIST; the other pairs upstream (406)', () => {
    const obj = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1';
    const list = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';
    assert.equal(r('GET', '/api/v1/pods', { accept: list }), 'list');
    assert.equal(r('GET', '/api/v1/namespaces/a/pods/p', { accept: obj }), 'get');
    assert.equal(r('GET', '/api/v1/pods?watch=1', { accept: obj }), 'watch');
    assert.equal(r('GET', '/api/v1/pods', { accept: obj }), 'upstream');
    assert.equal(r('GET', '/api/v1/namespaces/a/pods/p', { accept: list }), 'upstream');
    assert.equal(r('GET', '/api/v1/pods?watch=1', { accept: list }), 'upstream');
    // Indented (`pretty`) JSON is answered too (delegate.ts indentedJson).
    assert.equal(r('GET', '/api/v1/pods?pretty=1', { accept: list }), 'list');
    assert.equal(r('GET', '/api/v1/pods', { accept: `${list};pretty=1` }), 'list');
  });

  it('--namespace: only that namespace is served', () => {
    const ns = new CacheRegistry([new FakeCache()], 'a');
    const k = (p: string) => delegate(ns, 'GET', p, new URLSearchParams(), {}).kind;
    assert.equal(k('/api/v1/namespaces/a/pods'), 'cache');
    assert.equal(k('/api/v1/namespaces/b/pods'), 'upstream');
    assert.equal(k('/api/v1/pods'), 'upstream');
  });

  it('issue 15: a namespace-restricted cache (ResourceInfo.namespace) answers that namespace only, never all namespaces; --namespace is its default', () => {
    const cms = resourceInfo('v1', 'configmaps', 'ConfigMap');
    const nodes = resourceInfo('v1', 'nodes', 'Node', { namespaced: false });
    const reg = new CacheRegistry([
      new FakeCache({ ...cms, namespace: 'a' }),
      new FakeCache(),
      new FakeCache(nodes),
    ]);
    const d = (p: string, q = '') => {
      const x = delegate(reg, 'GET', p, new URLSearchParams(q), {});
      return x.kind === 'cache' ? x.verb : x.reason;
    };
    assert.equal(d('/api/v1/namespaces/a/configmaps'), 'list');
    assert.equal(d('/api/v1/namespaces/a/configmaps', 'watch=1'), 'watch');
    assert.equal(d('/api/v1/namespaces/a/configmaps/c'), 'get');
    assert.equal(d('/api/v1/namespaces/b/configmaps'), 'namespace-outside-cache');
    assert.equal(d('/api/v1/namespaces/b/configmaps/c'), 'namespace-outside-cache');
    assert.equal(d('/api/v1/configmaps'), 'namespace-outside-cache');
    assert.equal(d('/api/v1/configmaps', 'watch=1'), 'namespace-outside-cache');
    // The other caches are not restricted by it.
    assert.equal(d('/api/v1/pods'), 'list');
    assert.equal(d('/api/v1/namespaces/b/pods'), 'list');
    assert.equal(d('/api/v1/nodes'), 'list');
    // Its own namespace wins over --namespace; a cache without one takes --namespace.
    const withDefault = new CacheRegistry([new FakeCache({ ...cms, namespace: 'a' }), new FakeCache()], 'z');
    const k = (p: string) => {
      const x = delegate(withDefault, 'GET', p, new URLSearchParams(), {});
      return x.kind === 'cache' ? x.verb : x.reason;
    };
    assert.equal(k('/api/v1/namespaces/a/configmaps'), 'list');
    assert.equal(k('/api/v1/namespaces/z/configmaps'), 'namespace-outside-cache');
    assert.equal(k('/api/v1/namespaces/z/pods'), 'list');
    assert.equal(k('/api/v1/namespaces/a/pods'), 'namespace-outside-cache');
    assert.equal(withDefault.namespaceOf(withDefault.lookup('', 'v1', 'configmaps')!), 'a');
    assert.equal(withDefault.namespaceOf(withDefault.lookup('', 'v1', 'pods')!), 'z');
    assert.equal(reg.namespaceOf(reg.lookup('', 'v1', 'nodes')!), undefined);
  });
});

describe('issue 29: the parameters the cache implements, per verb', () => {
  const reg = new CacheRegistry([new FakeCache()]);
  const d = (url: string, headers: Record<string, string> = {}) => {
    const [path, qs = ''] = url.split('?');
    const x = delegate(reg, 'GET', path!, new URLSearchParams(qs), headers);
    return x.kind === 'cache' ? x.verb : x.reason;
  };
  const SHARD = `shardSelector=${encodeURIComponent("shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')")}`;
  const LIST = '/api/v1/namespaces/a/pods';
  const GET = '/api/v1/namespaces/a/pods/p1';

  it('every ListOptions parameter, pretty and timeout stay cached on a LIST and a WATCH', () => {
    for (const p of [
      'labelSelector=app%3Dx',
      'fieldSelector=metadata.name%3Dp1',
      'watch=false',
      'allowWatchBookmarks=true',
      'resourceVersion=0',
      'resourceVersionMatch=NotOlderThan',
      'timeoutSeconds=30',
      'limit=500',
      'continue=abc',
      'sendInitialEvents=false',
      'pretty=false',
      'timeout=32s',
      'timeout=',
    ]) {
      assert.equal(d(`${LIST}?${p}`), 'list', p);
      assert.equal(d(`${LIST}?watch=1&${p === 'watch=false' ? 'watch=true' : p}`), 'watch', p);
    }
  });

  it('what real clients send stays cached', () => {
    // client-go reflector: the list (pager), the watch (gentype adds `timeout`), the watch-list.
    assert.equal(d(`${LIST}?limit=500&resourceVersion=0`), 'list');
    assert.equal(
      d(`${LIST}?allowWatchBookmarks=true&resourceVersion=42&timeout=7m49s&timeoutSeconds=469&watch=true`),
      'watch',
    );
    assert.equal(
      d(
        `${LIST}?allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&timeout=8m4s&timeoutSeconds=484&watch=true`,
      ),
      'watch',
    );
    // kubectl get -o json, kubectl get NAME -o json, kubectl get -w (a name: metadata.name).
    assert.equal(d(`${LIST}?limit=500`), 'list');
    assert.equal(d(GET), 'get');
    assert.equal(d(`${LIST}?fieldSelector=metadata.name%3Dp1&resourceVersion=42&watch=true`), 'watch');
    // client-go's metadata client (protobuf first, then JSON), a protobuf-first typed client, q values.
    const meta =
      'application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';
    assert.equal(d(`${LIST}?limit=500&resourceVersion=0`, { accept: meta }), 'list');
    assert.equal(d(LIST, { accept: 'application/vnd.kubernetes.protobuf, */*' }), 'list');
    assert.equal(d(LIST, { accept: 'application/json;q=0.9, */*;q=0.8' }), 'list');
    assert.equal(d(`${LIST}?watch=1`, { accept: 'application/json;stream=watch' }), 'watch');
    // GET: resourceVersion, pretty=false, a Go duration timeout.
    assert.equal(d(`${GET}?resourceVersion=0&pretty=0&timeout=1m0s`), 'get');
  });

  it('shardSelector is for the handlers to decide on a list or watch, unknown on a get', () => {
    assert.equal(d(`${LIST}?${SHARD}`), 'list');
    assert.equal(d(`${LIST}?resourceVersion=0&${SHARD}`), 'list');
    assert.equal(d(`${LIST}?watch=1&${SHARD}`), 'watch');
    assert.equal(d(`${GET}?${SHARD}`), 'unknown-parameter');
  });

  it('a made-up parameter goes upstream as unknown-parameter, for list, get and watch', () => {
    for (const p of ['fooBar=1']) {
      assert.equal(d(`${LIST}?${p}`), 'unknown-parameter', p);
      assert.equal(d(`${LIST}?resourceVersion=0&${p}`), 'unknown-parameter', p);
      assert.equal(d(`${LIST}?watch=1&${p}`), 'unknown-parameter', p);
      assert.equal(
        d(`${LIST}?watch=1&resourceVersion=0&allowWatchBookmarks=true&${p}`),
        'unknown-parameter',
        p,
      );
      assert.equal(d(`${GET}?${p}`), 'unknown-parameter', p);
      assert.equal(d(`${GET}?resourceVersion=0&${p}`), 'unknown-parameter', p);
    }
    // Names are case-sensitive, as Go's url.Values: the apiserver ignores `LabelSelector`.
    assert.equal(d(`${LIST}?LabelSelector=app%3Dx`), 'unknown-parameter');
  });

  it('a GET takes GetOptions only: list options and export go upstream', () => {
    for (const p of ['labelSelector=a%3Db', 'limit=1', 'watch=false', 'export=true', 'timeoutSeconds=1'])
      assert.equal(d(`${GET}?${p}`), 'unknown-parameter', p);
  });

  it("a timeout that is not a Go duration: upstream on a LIST or GET (the apiserver's 400), ignored on a WATCH", () => {
    for (const t of ['abc', '1', '5sec', '.s', '1e3s']) {
      assert.equal(d(`${LIST}?timeout=${t}`), 'unknown-parameter', t);
      assert.equal(d(`${GET}?timeout=${t}`), 'unknown-parameter', t);
      assert.equal(d(`${LIST}?watch=1&timeout=${t}`), 'watch', t);
    }
    for (const t of ['0', '-1s', '.5s', '1h2m3.5s', '%2B0'])
      assert.equal(d(`${LIST}?timeout=${t}`), 'list', t);
  });

  it('Accept parameters the cache does not implement go upstream', () => {
    for (const a of [
      'application/json;sv=v1',
      'application/json;profile=nopeer',
      'application/json;export=1',
      'application/json;Charset=utf-8',
      'application/json;fooBar=1',
      'application/vnd.kubernetes.protobuf;fooBar=1,application/json',
    ]) {
      assert.equal(d(LIST, { accept: a }), 'unknown-parameter', a);
      assert.equal(d(GET, { accept: a }), 'unknown-parameter', a);
      assert.equal(d(`${LIST}?watch=1`, { accept: a }), 'unknown-parameter', a);
    }
  });

  it('Accept with a charset parameter is plain JSON for the cache, as the apiserver ignores it', () => {
    for (const a of [
      'application/json;charset=utf-8',
      'application/json; charset=UTF-8',
      'application/json;charset=iso-8859-1',
    ]) {
      assert.equal(d(LIST, { accept: a }), 'list', a);
      assert.equal(d(GET, { accept: a }), 'get', a);
      assert.equal(d(`${LIST}?watch=1`, { accept: a }), 'watch', a);
    }
    const meta = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1;charset=utf-8';
    assert.equal(d(LIST, { accept: meta }), 'list');
  });

  it("a custom resource's Table needs the CRDs' cache (cached or not); a built-in kind's, other forms: nothing", () => {
    const widgets = resourceInfo('example.com/v1', 'widgets', 'Widget');
    const table = 'application/json;as=Table;v=v1;g=meta.k8s.io';
    const crds = { group: 'apiextensions.k8s.io', version: 'v1', resource: 'customresourcedefinitions' };
    const regW = new CacheRegistry([new FakeCache(), new FakeCache(widgets)]);
    const dw = (url: string, accept?: string) => {
      const [path, qs = ''] = url.split('?');
      return delegate(regW, 'GET', path!, new URLSearchParams(qs), accept ? { accept } : {});
    };
    const noCrds = dw('/apis/example.com/v1/namespaces/a/widgets', table);
    assert.equal(noCrds.kind === 'upstream' && noCrds.reason, 'table-printer');
    assert.deepEqual(noCrds.needs, crds);
    assert.deepEqual(dw('/apis/example.com/v1/namespaces/a/widgets/w', table).needs, crds);
    assert.equal(dw('/apis/example.com/v1/namespaces/a/widgets').needs, undefined, 'JSON: printed by no one');
    assert.equal(dw('/api/v1/pods', table).needs, undefined, 'a built-in printer');
    // With the CRDs cached (synced, the CRD in it): served, still reading (using) that cache.
    const crdInfo = resourceInfo(
      'apiextensions.k8s.io/v1',
      'customresourcedefinitions',
      'CustomResourceDefinition',
      {
        namespaced: false,
        builtIn: true,
      },
    );
    const crdCache = new FakeCache(crdInfo);
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'widgets.example.com', resourceVersion: '1' },
      spec: { versions: [{ name: 'v1', served: true }] },
    };
    crdCache.objects.push({ raw: Buffer.from(JSON.stringify(crd)), object: crd });
    const regC = new CacheRegistry([new FakeCache(widgets), crdCache]);
    const served = delegate(regC, 'GET', '/apis/example.com/v1/namespaces/a/widgets', new URLSearchParams(), {
      accept: table,
    });
    assert.equal(served.kind, 'cache');
    assert.deepEqual(served.needs, crds);
  });

  it('the reasons met first still win: a Table of an unported kind, a single-object watch', () => {
    const table = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json';
    assert.equal(d(`${LIST}?includeObject=Object`, { accept: table }), 'list', 'pods have a printer');
    assert.equal(d(`${LIST}?includeObject=Bad`, { accept: table }), 'table-printer', "the apiserver's 400");
    assert.equal(d(`${LIST}?includeObject=None&fooBar=1`, { accept: table }), 'unknown-parameter');
    assert.equal(
      d(`${LIST}?includeObject=None`, { accept: 'application/yaml;as=Table;v=v1;g=meta.k8s.io' }),
      'media-type',
    );
    assert.equal(d(`${LIST}?pretty=true&fooBar=1`), 'unknown-parameter');
    assert.equal(d(`${GET}?watch=1&fooBar=1`), 'single-object-watch');
    assert.equal(
      uncacheableRequest({ group: '', version: 'v1', resource: 'pods' }, new URLSearchParams('fooBar=1'), {}),
      'unknown-parameter',
      'no on-demand cache is started for it',
    );
    // A sharded LIST may start one: a cache answers it once its upstream's sharding is known.
    assert.equal(
      uncacheableRequest({ group: '', version: 'v1', resource: 'pods' }, new URLSearchParams(SHARD), {}),
      undefined,
    );
  });
});

describe('indentedJson: the apiserver indents a LIST or GET (negotiate.go isPrettyPrint, pretty=1)', () => {
  const ind = (url: string, headers: Record<string, string> = {}) => indentedJson(url, headers);
  it('a curl, Wget or browser User-Agent', () => {
    for (const ua of ['curl/8.5.0', 'curl', 'Wget/1.21', 'Mozilla/5.0 (X11)'])
      assert.equal(ind('/api/v1/pods', { 'user-agent': ua }), true, ua);
    for (const ua of ['kubectl/v1.37.2', 'Mozilla/4.0', 'wget', ' curl'])
      assert.equal(ind('/api/v1/pods', { 'user-agent': ua }), false, ua);
    assert.equal(ind('/api/v1/pods'), false, 'none');
  });
  it('a non-empty pretty query is a Go bool and wins over the User-Agent', () => {
    const curl = { 'user-agent': 'curl/8.5.0' };
    for (const v of ['1', 't', 'T', 'true', 'TRUE', 'True'])
      assert.equal(ind(`/api/v1/pods?pretty=${v}`), true, v);
    for (const v of ['0', 'false', 'yes', 'tRUE', '2'])
      assert.equal(ind(`/api/v1/pods?pretty=${v}`, curl), false, v);
    assert.equal(ind('/api/v1/pods?pretty=', curl), true, 'empty: the User-Agent decides');
    assert.equal(ind('/api/v1/pods?pretty=false&pretty=true', {}), false, 'the first value');
    assert.equal(ind('/api/v1/pods?prettyx=false', curl), true, 'another name');
    // Go looks at the query only when its raw text contains `pretty`.
    assert.equal(ind('/api/v1/pods?%70retty=false', curl), true);
    assert.equal(ind('/api/v1/pods?%70retty=true'), false);
  });
  it('the query as Go parses it: a pair with `;` or a bad `%` escape is skipped (seen side by side on v1.37.2)', () => {
    const curl = { 'user-agent': 'curl/8.5.0' };
    const mozilla = { 'user-agent': 'Mozilla/5.0' };
    // The skipped first pair leaves `pretty=1` the first value: indented (was compact).
    assert.equal(ind('/api/v1/pods?pretty=%zz&pretty=1'), true);
    // `pretty=%zz` alone is skipped: the User-Agent decides (was compact for curl).
    assert.equal(ind('/api/v1/pods?pretty=%zz', curl), true);
    // `pretty=1;` and `pretty=true;x=1` are skipped: the User-Agent decides.
    assert.equal(ind('/api/v1/pods?pretty=1;', mozilla), true);
    assert.equal(ind('/api/v1/pods?pretty=true;x=1', mozilla), true);
    assert.equal(ind('/api/v1/pods?pretty=true;x=1'), false);
    assert.equal(ind('/api/v1/pods?pretty=0;pretty=1', curl), true);
    assert.equal(ind('/api/v1/pods?pretty=%74rue'), true, 'a good escape is decoded');
  });
  it("the chosen Accept clause's pretty=1", () => {
    assert.equal(ind('/api/v1/pods', { accept: 'application/json;pretty=1' }), true);
    assert.equal(ind('/api/v1/pods', { accept: 'application/vnd.kubernetes.protobuf;pretty=1' }), false);
    // goautoneg trims spaces only: a tab stays in the value, which is then no `1`.
    assert.equal(ind('/api/v1/pods', { accept: 'application/json;pretty=1\t;q=1' }), false);
    assert.equal(ind('/api/v1/pods', { accept: 'application/json; pretty = 1 ' }), true);
  });
});

describe('uncacheableRequest (issue 15: what may start an on-demand cache)', () => {
  const pods = { group: '', version: 'v1', resource: 'pods' };
  const q = (s = '') => new URLSearchParams(s);
  const TABLE =
    'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';
  it("kubectl get's Table Accept, impersonation, a bad name: the reason no cache could answer", () => {
    assert.equal(uncacheableRequest(pods, q(), { accept: TABLE }), 'media-type');
    // A curl LIST (indented JSON) is one a cache answers: it may start one.
    assert.equal(uncacheableRequest(pods, q('pretty=true'), { accept: 'application/json' }), undefined);
    assert.equal(uncacheableRequest(pods, q(), { 'user-agent': 'curl/8.5.0' }), undefined);
    assert.equal(uncacheableRequest(pods, q(), { 'impersonate-user': 'bob' }), 'impersonation');
    assert.equal(uncacheableRequest({ ...pods, namespace: '..' }, q(), {}), 'invalid-name');
    assert.equal(
      uncacheableRequest(pods, q(), {
        accept: 'application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io',
      }),
      'media-type',
      'a LIST takes …List',
    );
  });
  it('plain JSON (kubectl get -o json), …List metadata for a LIST, a watch: undefined (a cache could)', () => {
    assert.equal(uncacheableRequest(pods, q(), { accept: 'application/json' }), undefined);
    assert.equal(uncacheableRequest(pods, q('watch=1'), {}), undefined);
    assert.equal(
      uncacheableRequest(pods, q(), {
        accept: 'application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io',
      }),
      undefined,
    );
    assert.equal(
      uncacheableRequest(pods, q('watch=1'), { 'user-agent': 'curl/8' }),
      undefined,
      'watches are never indented',
    );
  });
});

describe('attack: names the apiserver rejects are not served from the cache', () => {
  const registry = new CacheRegistry([new FakeCache()]);
  const kind = (path: string) => delegate(registry, 'GET', path, new URLSearchParams(), {}).kind;

  it('`.`, `..`, `%` and an encoded `/` in a name or namespace go upstream', () => {
    // apiserver: 400 `Name parameter invalid: "..": may not be '..'` (the cache said 404 NotFound)
    assert.equal(kind('/api/v1/namespaces/a/pods/..'), 'upstream');
    assert.equal(kind('/api/v1/namespaces/a/pods/%2e%2e'), 'upstream');
    assert.equal(kind('/api/v1/namespaces/a/pods/.'), 'upstream');
    // apiserver: 400 `may not contain '%'`
    assert.equal(kind('/api/v1/namespaces/a/pods/a%25b'), 'upstream');
    // apiserver: 404 "the server could not find the requested resource" (the cache: `pods "a/b" not found`)
    assert.equal(kind('/api/v1/namespaces/a/pods/a%2Fb'), 'upstream');
    // apiserver: 500 `invalid key` / 404 (the cache answered an empty list)
    assert.equal(kind('/api/v1/namespaces/%2e%2e/pods'), 'upstream');
    assert.equal(kind('/api/v1/namespaces/a%2Fb/pods'), 'upstream');
    // Ordinary names (unicode included) stay cached.
    assert.equal(kind('/api/v1/namespaces/a/pods/caf%C3%A9'), 'cache');
    assert.equal(kind('/api/v1/namespaces/a/pods/a..b'), 'cache');
    assert.equal(kind('/api/v1/namespaces/a/pods'), 'cache');
  });
});

describe('attack: continue together with resourceVersion=N', () => {
  it('is passed upstream (apiserver: 400 "specifying resource version is not allowed when using continue")', async () => {
    const { agent, server } = mockServer([pod('a', 'p1', 7), pod('a', 'p2', 8)]);
    const pool = agent.get('https://apiserver.test:6443');
    const token = encodeContinue('a/p1', 9n);
    const url = `/api/v1/pods?limit=1&continue=${token}&resourceVersion=5`;
    pool.intercept({ method: 'GET', path: url }).reply(400, '{"upstream":true}');
    try {
      const r = await server.app.inject({ method: 'GET', url });
      assert.equal(r.statusCode, 400);
      assert.equal(r.body, '{"upstream":true}');
      // Without an RV (or with RV=0) the token is still served from the cache.
      const c = await server.app.inject({ method: 'GET', url: `/api/v1/pods?limit=1&continue=${token}` });
      assert.equal(c.statusCode, 200, c.body);
    } finally {
      await server.shutdown();
      await agent.close();
    }
  });
});

/** What one request left behind: its debug log line and its sample of the request counter. */
interface Observed {
  log: { served_from: string; reason: string; code: number; verb: string };
  metric: { served_from: string; reason: string; code: string; verb: string };
}

/** A request that produces a reason, with the server and cache state it needs. */
interface Case {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  over?: Partial<ServerOptions>;
  /** Sets up the cache (`cache`: the pods FakeCache) or the server before the request. */
  prepare?: (cache: FakeCache, server: KubeServer) => void;
  /** Sends the request itself (default: `app.inject`). */
  send?: (server: KubeServer, cache: FakeCache) => Promise<void>;
}

/** A pods cache that is not synced and waits for sync until the request is aborted. */
class NeverSyncedCache extends FakeCache {
  override synced = false;
  override async waitSynced(_timeoutMs?: number, signal?: AbortSignal) {
    this.calls.push('waitSynced');
    await new Promise((r) => signal?.addEventListener('abort', r, { once: true }));
    return false;
  }
}

const untilTrue = (f: () => boolean, what: string) => until(what, f);

/** Sends the request over a real connection and hangs up while the cache waits for sync. */
async function abortWhileWaiting(server: KubeServer, cache: FakeCache): Promise<void> {
  await server.app.listen({ host: '127.0.0.1', port: 0 });
  const port = (server.app.server.address() as AddressInfo).port;
  const req = request({ host: '127.0.0.1', port, path: '/api/v1/pods?resourceVersion=0', agent: false });
  req.on('error', () => {});
  req.end();
  await untilTrue(() => cache.calls.includes('waitSynced'), 'the sync wait');
  req.destroy();
}

/** An authenticated-mode gate whose TokenReview knows every token as `alice`, and whose SubjectAccessReview fails. */
const delegated = new AccessControl({
  delegatedAuth: true,
  impersonateCertificateClients: false,
  tokens: {
    authenticate: async () => ({
      authenticated: true,
      user: { username: 'alice', uid: '', groups: [], extra: {} },
      cached: false,
    }),
  } as unknown as TokenReviewAuthenticator,
  authorizer: {
    authorize: async () => {
      throw new Error('SubjectAccessReview: connection refused');
    },
  } as unknown as SubjectAccessReviewAuthorizer,
});

/** An upstream known to honour `shardSelector`. */
const honouring = new ShardSupport(async () => undefined);

const cases: Record<UpstreamReason, Case> = {
  'not-resource-path': { url: '/version' },
  'not-get': { method: 'POST', url: '/api/v1/namespaces/a/pods' },
  subresource: { url: '/api/v1/namespaces/a/pods/p1/status' },
  'not-cached': { url: '/api/v1/configmaps' },
  'other-version': {
    url: '/apis/apps/v1beta2/deployments',
    over: { caches: [new FakeCache(resourceInfo('apps/v1', 'deployments', 'Deployment'))] },
  },
  'invalid-name': { url: '/api/v1/namespaces/a/pods/a%25b' },
  'namespace-for-cluster-scoped': {
    url: '/api/v1/namespaces/a/nodes',
    over: { caches: [new FakeCache(resourceInfo('v1', 'nodes', 'Node', { namespaced: false }))] },
  },
  'cluster-path-for-namespaced': { url: '/api/v1/pods/p1' },
  'namespace-outside-cache': { url: '/api/v1/namespaces/b/pods?resourceVersion=0', over: { namespace: 'a' } },
  impersonation: { url: '/api/v1/pods?resourceVersion=0', headers: { 'impersonate-user': 'bob' } },
  unauthenticated: { url: '/api/v1/pods?resourceVersion=0', over: { access: delegated } },
  'other-identity': {
    url: '/api/v1/pods?resourceVersion=0',
    headers: { authorization: 'Bearer someone-else' },
    // Simple mode without a way to compare identities: any credential is another identity.
    over: { access: new AccessControl({ delegatedAuth: false, impersonateCertificateClients: false }) },
  },
  'authorization-error': {
    url: '/api/v1/pods?resourceVersion=0',
    headers: { authorization: 'Bearer alice' },
    over: { access: delegated },
  },
  'media-type': {
    url: '/api/v1/pods?resourceVersion=0',
    headers: { accept: 'application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io' },
  },
  'table-printer': {
    url: '/api/v1/podtemplates?resourceVersion=0',
    headers: { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' },
    over: { caches: [new FakeCache(resourceInfo('v1', 'podtemplates', 'PodTemplate'))] },
  },
  'single-object-watch': { url: '/api/v1/namespaces/a/pods/p1?watch=1' },
  'unknown-parameter': { url: '/api/v1/pods?resourceVersion=0&fooBar=1' },
  'verb-not-supported': {
    url: '/api/v1/namespaces/a/pods/p1',
    over: { caches: [new FakeCache(resourceInfo('v1', 'pods', 'Pod', { verbs: ['list', 'watch'] }))] },
  },
  // A scoped cache (issue 13) and a LIST whose selectors do not contain the scope's requirement.
  'outside-scope': {
    url: '/api/v1/pods?resourceVersion=0&labelSelector=app%3Dy',
    over: {
      caches: [new FakeCache({ ...resourceInfo('v1', 'pods', 'Pod'), scope: { labelSelector: 'app=x' } })],
    },
  },
  'field-selector-unknown': { url: '/api/v1/pods?resourceVersion=0&fieldSelector=spec.nodeName%3Dn1' },
  'rv-unparsable': { url: '/api/v1/pods?resourceVersion=007' },
  'continue-with-rv': {
    url: `/api/v1/pods?limit=1&continue=${encodeContinue('a/p1', 9n)}&resourceVersion=5`,
  },
  'continue-undecodable': { url: '/api/v1/pods?continue=abc' },
  'shard-support-unknown': {
    url: `/api/v1/pods?resourceVersion=0&shardSelector=${encodeURIComponent("shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')")}`,
    over: { shardSupport: new ShardSupport(async () => undefined) },
  },
  'shard-selector-unparsed': {
    url: `/api/v1/pods?resourceVersion=0&shardSelector=${encodeURIComponent("shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') && true")}`,
    over: { shardSupport: honouring },
    prepare: (cache) => honouring.learn(cache, 'honoured'),
  },
  'protobuf-off': {
    url: '/api/v1/pods?resourceVersion=0',
    headers: { accept: 'application/vnd.kubernetes.protobuf' },
    over: { protobufAnswers: 'json' }, // protobuf answers turned off
  },
  'protobuf-version': {
    url: '/api/v1/pods?resourceVersion=0',
    headers: { accept: 'application/vnd.kubernetes.protobuf' },
    over: { upstreamVersion: () => 'v1.36.4' }, // the schema table is v1.37's
  },
  // A field the schema table does not know: the encoder cannot be exact.
  'protobuf-inexact': {
    url: '/api/v1/pods?resourceVersion=0',
    headers: { accept: 'application/vnd.kubernetes.protobuf' },
    over: { protobufAnswers: 'cache' },
    prepare: (cache) => {
      const o = {
        kind: 'Pod',
        apiVersion: 'v1',
        metadata: { name: 'x', namespace: 'a', resourceVersion: '7' },
        novel: 1,
      };
      cache.objects.push({ object: o, raw: Buffer.from(JSON.stringify(o)) });
    },
  },
  'not-synced': {
    url: '/api/v1/pods?resourceVersion=0',
    prepare: (cache) => {
      cache.synced = false;
    },
  },
  'consistent-reads-upstream': { url: '/api/v1/pods', over: { consistentReads: 'upstream' } },
  'not-live': {
    url: '/api/v1/pods',
    prepare: (cache) => {
      cache.live = false;
    },
  },
  'behind-upstream': {
    url: '/api/v1/pods',
    prepare: (_cache, server) => server.writes.shown('pods.', 50n, 0),
  },
  'write-pending': {
    url: '/api/v1/pods',
    prepare: (_cache, server) => server.writes.record('pods.', 50n),
  },
  // A fake cache cannot learn the upstream's revision.
  'freshness-unproven': { url: '/api/v1/pods', over: { consistentReads: 'proven' } },
  'freshness-timeout': { url: '/api/v1/pods?resourceVersion=99' },
  'exact-outside-window': { url: '/api/v1/pods?resourceVersion=2&resourceVersionMatch=Exact' },
  'continue-outside-window': { url: `/api/v1/pods?limit=1&continue=${encodeContinue('a/p1', 2n)}` },
  // RV 2 is below the fake's window (5), the upstream did not prove it unchanged since, and a
  // forwarded LIST showed a client RV 2 just before.
  'watch-outside-window': {
    url: '/api/v1/pods?watch=1&resourceVersion=2',
    prepare: (cache, server) => {
      Object.assign(cache, { extendWindowBack: async (rv: bigint) => rv >= cache.windowStart });
      server.writes.shown('pods.', 2n, Date.now());
    },
  },
  compacted: {
    url: `/api/v1/pods?limit=1&continue=${encodeContinue('a/p1', 7n)}`,
    prepare: (cache) => {
      cache.compactedFloor = 7n;
    },
  },
  aborted: { url: '/api/v1/pods?resourceVersion=0', over: {}, send: abortWhileWaiting },
};

/** Runs one request through a server with metrics and a debug logger; returns what it recorded. */
async function observe(c: Case, pods = new FakeCache()): Promise<Observed> {
  const { logger, lines: logged } = logLines<{ msg: string } & Observed['log']>('debug');
  const requestLines = () => logged.filter((l) => l.msg === 'request');
  const metrics = createMetrics({ processMetrics: false });
  const { agent, server } = mockServer([], { caches: [pods], metrics, logger, ...c.over });
  pods.objects = [pod('a', 'p1', 7), pod('a', 'p2', 8)];
  agent
    .get('https://apiserver.test:6443')
    .intercept({ path: () => true, method: () => true })
    .reply(200, '{"upstream":true,"metadata":{"resourceVersion":"1"}}')
    .persist();
  try {
    c.prepare?.(pods, server);
    if (c.send) await c.send(server, pods);
    else
      await server.app.inject({
        method: (c.method ?? 'GET') as 'GET',
        url: c.url,
        ...(c.headers ? { headers: c.headers } : {}),
      });
    await untilTrue(() => requestLines().length > 0, 'the request log line');
    const samples = (await metrics.requests.get()).values;
    assert.equal(requestLines().length, 1);
    assert.equal(samples.length, 1);
    return { log: requestLines()[0]!, metric: samples[0]!.labels as Observed['metric'] };
  } finally {
    await server.shutdown();
    await agent.close();
  }
}

describe('every upstream reason', () => {
  it('has a case for every reason of the closed list', () => {
    assert.deepEqual(Object.keys(cases), [...UPSTREAM_REASONS]);
  });

  for (const reason of UPSTREAM_REASONS) {
    it(reason, async () => {
      const c = cases[reason];
      const o = await observe(c, reason === 'aborted' ? new NeverSyncedCache() : new FakeCache());
      assert.equal(o.log.reason, reason);
      assert.equal(o.metric.reason, reason);
      // issue 11 item 12: a client that left is not passed upstream (nothing to answer).
      const from = reason === 'aborted' ? 'none' : 'upstream';
      assert.equal(o.log.served_from, from);
      assert.equal(o.metric.served_from, from);
      assert.equal(o.metric.code, String(o.log.code));
      if (reason === 'aborted') assert.equal(o.log.code, 499);
    });
  }

  it('answers from the cache carry served_from="cache" and reason=""', async () => {
    const o = await observe({ url: '/api/v1/namespaces/a/pods?resourceVersion=0' });
    assert.deepEqual(o.log, { ...o.log, served_from: 'cache', reason: '', code: 200, verb: 'LIST' });
    assert.deepEqual(o.metric, { ...o.metric, served_from: 'cache', reason: '', code: '200', verb: 'LIST' });
  });
});

describe('docs/delegation.md', () => {
  it('has one table row per reason, in the order of the closed list', () => {
    const doc = readFileSync(new URL('../../../docs/delegation.md', import.meta.url), 'utf8');
    const rows = [...doc.matchAll(/^\| `([a-z-]+)` *\|/gm)].map((m) => m[1]);
    assert.deepEqual(rows, [...UPSTREAM_REASONS]);
  });
});
