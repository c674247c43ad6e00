import assert from 'node:assert/strict';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { HttpListerWatcher } from '../../../src/reflector/list-watch.ts';
import { isExpired } from '../../../src/upstream/api-errors.ts';
import { createUpstream, type Upstream } from '../../../src/upstream/connection.ts';
import { configMapInfo } from '../../support/fake-lister-watcher.ts';

describe('HttpListerWatcher (against a scripted HTTP upstream)', () => {
  let server: Server;
  let up: Upstream;
  const reqs: { url: string; accept?: string; encoding?: string }[] = [];
  let handler: (url: URL, res: ServerResponse) => void = () => {};

  before(async () => {
    server = createServer((req, res) => {
      reqs.push({
        url: req.url ?? '',
        accept: req.headers.accept,
        encoding: req.headers['accept-encoding'] as string,
      });
      handler(new URL(req.url ?? '/', 'http://x'), res);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [
        {
          name: 'c',
          server: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
          skipTLSVerify: true,
        },
      ],
      users: [{ name: 'u' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    up = await createUpstream({ loaded: { kc, tokenFile: undefined } });
  });
  after(async () => {
    await up.close();
    server.close();
  });

  it('watch-list request: exact query, asks for identity (the default watch encoding), events decoded as lines arrive', async () => {
    let res!: ServerResponse;
    const opened = new Promise<void>((r) => {
      handler = (_u, rs) => {
        res = rs;
        rs.writeHead(200, { 'content-type': 'application/json' });
        rs.write(
          '{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"n","resourceVersion":"5"}}}\n{"type":"BOOK',
        );
        r();
      };
    });
    const lw = new HttpListerWatcher(up, configMapInfo, 'n');
    const w = await lw.watch({
      resourceVersion: '',
      allowWatchBookmarks: true,
      sendInitialEvents: true,
      resourceVersionMatch: 'NotOlderThan',
      timeoutSeconds: 321,
    });
    await opened;
    assert.deepEqual(reqs.at(-1), {
      url: '/api/v1/namespaces/n/configmaps?watch=1&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&allowWatchBookmarks=true&timeoutSeconds=321',
      accept: 'application/json',
      encoding: 'identity',
    });
    const e1 = await w.next();
    assert.equal(e1?.type, 'ADDED');
    assert.equal(e1?.object.object.metadata.name, 'a');
    const pending = w.next();
    res.write(
      'MARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"9","annotations":{"k8s.io/initial-events-end":"true"}}}}\n',
    );
    const e2 = await pending;
    assert.equal(e2?.type, 'BOOKMARK');
    assert.equal(e2?.object.object.metadata.resourceVersion, '9');
    res.end();
    assert.equal(await w.next(), undefined);
  });

  it('watch: asks for gzip with --upstream-watch-encoding=gzip; a LIST always asks for gzip', async () => {
    handler = (u, rs) => {
      rs.writeHead(200, { 'content-type': 'application/json' });
      if (u.searchParams.get('watch') === '1') rs.end();
      else rs.end('{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[]}');
    };
    const lw = new HttpListerWatcher({ ...up, watchEncoding: 'gzip' }, configMapInfo, 'n');
    const w = await lw.watch({ resourceVersion: '7', allowWatchBookmarks: true, timeoutSeconds: 5 });
    assert.equal(await w.next(), undefined);
    assert.equal(reqs.at(-1)?.encoding, 'gzip');
    await new HttpListerWatcher(up, configMapInfo, 'n').list({ resourceVersion: '0' });
    assert.equal(reqs.at(-1)?.encoding, 'gzip');
  });

  it('list: limit/continue/resourceVersion sent only when set; 410 becomes an Expired UpstreamError', async () => {
    handler = (u, rs) => {
      if (u.searchParams.get('continue') === 'old') {
        rs.writeHead(410, { 'content-type': 'application/json' });
        rs.end(
          '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"The provided continue parameter is too old","reason":"Expired","code":410}',
        );
        return;
      }
      rs.writeHead(200, { 'content-type': 'application/json' });
      rs.end(
        '{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"77","continue":"c2"},"items":[{"metadata":{"name":"a","namespace":"n","resourceVersion":"70"}}]}',
      );
    };
    const lw = new HttpListerWatcher(up, configMapInfo);
    const l = await lw.list({ resourceVersion: '0', limit: 500 });
    assert.equal(reqs.at(-1)?.url, '/api/v1/configmaps?resourceVersion=0&limit=500');
    assert.deepEqual([l.resourceVersion, l.continue, l.items.length], ['77', 'c2', 1]);
    assert.equal(
      l.items[0]?.raw.toString(),
      '{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"n","resourceVersion":"70"}}',
    );
    await lw.list({ resourceVersion: '123', limit: 0 });
    assert.equal(reqs.at(-1)?.url, '/api/v1/configmaps?resourceVersion=123');
    await assert.rejects(lw.list({ resourceVersion: '', limit: 500, continue: 'old' }), (err) => {
      assert.equal(isExpired(err), true);
      assert.equal(
        (err as Error).message,
        'GET /api/v1/configmaps: 410 The provided continue parameter is too old',
      );
      return true;
    });
    assert.equal(reqs.at(-1)?.url, '/api/v1/configmaps?limit=500&continue=old');
    // issue 15: a namespace-restricted resource lists its namespace (ResourceInfo.namespace).
    await new HttpListerWatcher(up, { ...configMapInfo, namespace: 'a' }).list({ resourceVersion: '0' });
    assert.equal(reqs.at(-1)?.url, '/api/v1/namespaces/a/configmaps?resourceVersion=0');
  });

  it('a scoped resource lists and watches with its selectors; a 400 names the rejected scope', async () => {
    const info = {
      ...configMapInfo,
      scope: { fieldSelector: 'metadata.name=a', labelSelector: 'app=x' },
    };
    const lw = new HttpListerWatcher(up, info);
    handler = (_u, rs) => {
      rs.writeHead(200, { 'content-type': 'application/json' });
      rs.end('{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[]}');
    };
    await lw.list({ resourceVersion: '0', limit: 500 });
    assert.equal(
      reqs.at(-1)?.url,
      '/api/v1/configmaps?resourceVersion=0&limit=500&fieldSelector=metadata.name%3Da&labelSelector=app%3Dx',
    );
    handler = (_u, rs) => {
      rs.writeHead(200, { 'content-type': 'application/json' });
      rs.end();
    };
    const w = await lw.watch({ resourceVersion: '7', allowWatchBookmarks: true, timeoutSeconds: 300 });
    w.close();
    assert.equal(
      reqs.at(-1)?.url,
      '/api/v1/configmaps?watch=1&resourceVersion=7&allowWatchBookmarks=true&timeoutSeconds=300&fieldSelector=metadata.name%3Da&labelSelector=app%3Dx',
    );
    // The apiserver's answer to a field its kind does not support (checked on the fixture).
    const bad = new HttpListerWatcher(up, { ...configMapInfo, scope: { fieldSelector: 'spec.nodeName=n1' } });
    handler = (_u, rs) => {
      rs.writeHead(400, { 'content-type': 'application/json' });
      rs.end(
        '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"\\"spec.nodeName\\" is not a known field selector: only \\"metadata.name\\", \\"metadata.namespace\\"","reason":"BadRequest","code":400}',
      );
    };
    await assert.rejects(bad.list({ resourceVersion: '0' }), (err: Error & { statusCode?: number }) => {
      assert.equal(err.statusCode, 400);
      assert.match(
        err.message,
        /^the apiserver rejected the scope of configmaps\[fieldSelector=spec\.nodeName=n1\] \(--resources\): .*"spec\.nodeName" is not a known field selector: only "metadata\.name", "metadata\.namespace"$/,
      );
      return true;
    });
    await assert.rejects(
      bad.watch({ resourceVersion: '7', allowWatchBookmarks: true, timeoutSeconds: 300 }),
      /rejected the scope of configmaps/,
    );
  });
});
