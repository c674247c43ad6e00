/**
 * The path and method filter (`--accept-paths`, `--reject-paths`, `--reject-methods`) against the
 * fixture, side by side with the apiserver and with the fixture's own `kubectl proxy`:
 *
 * - every spelling of a pod's exec/attach path the apiserver routes to exec (direct: its 404
 *   `pods "nope" not found`, from the exec handler) is refused 403 by default without
 *   `--delegated-auth`, over plain requests and HTTP Upgrade (SPDY, WebSocket), as kubectl proxy
 *   refuses them (kubectl proxy: `text/plain` `Forbidden`; the proxy: a Status naming the flag);
 * - with `--reject-paths=` the same requests get the apiserver's answer, byte for byte the Status;
 * - with `--delegated-auth` no path is rejected by default (the client's own identity travels);
 * - `--reject-methods` refuses writes; refusals are counted under a fixed `filter` label.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { after, before, describe, test } from 'node:test';
import { type Fixture, sharedFixture } from '../fixture/index.ts';
import { metricSum } from '../support/prometheus-text.ts';
import { type InProcessProxy, startProxy } from '../support/proxy.ts';
import { type RawAnswer, type RawTarget, rawRequest } from '../support/raw-http.ts';

/** Spellings of `POST …/pods/nope/exec` (and attach) that the apiserver routes to the pod's exec/attach. */
const EXEC_PATHS = [
  '/api/v1/namespaces/default/pods/nope/exec?command=true',
  '/api/v1/namespaces/default/pods/nope/exec/?command=true',
  '/api/v1/namespaces/default/pods/nope/ex%65c?command=true',
  '/api/v1/namespaces/default/pods/nope%2Fexec?command=true',
  '/api/v1/namespaces/default/pods/nope/attach?container=c',
];

const header = (a: RawAnswer, name: string) => a.headers.find(([k]) => k === name)?.[1];

describe('path and method filter: proxy vs apiserver vs kubectl proxy', { timeout: 180_000 }, () => {
  let f: Fixture;
  let simple: InProcessProxy;
  let open: InProcessProxy;
  let kubectlProxy: ChildProcess;
  let kubectlProxyUrl: string;
  let direct: RawTarget;
  const auth = () => `Authorization: Bearer ${f.tokens.admin}`;
  const post = (t: RawTarget, path: string, extra = '', withAuth = true) =>
    rawRequest(t, `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1${withAuth ? `\r\n${auth()}` : ''}${extra}`);

  before(async () => {
    f = await sharedFixture();
    direct = { url: f.server, ca: f.caPem };
    simple = await startProxy(f, { resources: 'configmaps' });
    open = await startProxy(f, { resources: 'configmaps', args: ['--reject-paths', ''] });
    kubectlProxy = spawn(f.bin.kubectl, ['proxy', '--port=0', '--kubeconfig', f.kubeconfigs.adminToken], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    kubectlProxy.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
    });
    while (!/Starting to serve on (\S+)/.test(out)) await once(kubectlProxy.stdout!, 'data');
    kubectlProxyUrl = `http://${/Starting to serve on (\S+)/.exec(out)![1]}`;
  });
  after(async () => {
    kubectlProxy?.kill();
    await simple?.stop();
    await open?.stop();
  });

  test('default without --delegated-auth: every exec/attach spelling the apiserver routes is refused, as by kubectl proxy', async () => {
    for (const path of EXEC_PATHS) {
      const d = await post(direct, path);
      assert.equal(d.status, 404, `${path} direct: ${d.body}`);
      assert.match(
        JSON.parse(d.body).message,
        /^pods "nope" not found$/,
        `${path}: routed to the pod's handler`,
      );
      const k = await post({ url: kubectlProxyUrl }, path, '', false);
      assert.equal(k.status, 403, `${path} kubectl proxy`);
      assert.equal(header(k, 'content-type'), 'text/plain; charset=utf-8');
      assert.equal(k.body, 'Forbidden\n');
      for (const withAuth of [false, true]) {
        const p = await post({ url: simple.url }, path, '', withAuth);
        assert.equal(p.status, 403, `${path} through the proxy`);
        assert.equal(header(p, 'content-type'), 'application/json');
        const s = JSON.parse(p.body);
        assert.equal(s.kind, 'Status');
        assert.equal(s.reason, 'Forbidden');
        const re = path.includes('attach') ? '^/api/.*/pods/.*/attach' : '^/api/.*/pods/.*/exec';
        assert.match(
          s.message,
          /^forbidden: kube-cache-proxy refuses POST "\/api\/v1\/namespaces\/default\/pods\//,
        );
        assert.ok(s.message.endsWith(`: the path matches --reject-paths "${re}"`), s.message);
      }
    }
  });

  test('HTTP Upgrade (SPDY and WebSocket, as kubectl exec sends them) is refused before the tunnel', async () => {
    for (const upgrade of ['SPDY/3.1', 'websocket']) {
      const extra = `\r\nConnection: Upgrade\r\nUpgrade: ${upgrade}\r\nX-Stream-Protocol-Version: v4.channel.k8s.io`;
      const p = await post({ url: simple.url }, EXEC_PATHS[0]!, extra);
      assert.equal(p.status, 403, upgrade);
      assert.equal(JSON.parse(p.body).reason, 'Forbidden');
      const k = await post({ url: kubectlProxyUrl }, EXEC_PATHS[0]!, extra, false);
      assert.equal(k.status, 403, `kubectl proxy ${upgrade}`);
      // Allowed: the apiserver's own answer comes back through the tunnel.
      const o = await post({ url: open.url }, EXEC_PATHS[0]!, extra);
      const d = await post(direct, EXEC_PATHS[0]!, extra);
      assert.equal(o.status, d.status, upgrade);
      assert.equal(o.status, 404);
    }
    // kubectl's own exec of a pod that exists (Pending: the fixture schedules nothing): the
    // apiserver answers the exec itself (400, no host assigned); through the proxy the exec is
    // refused before it reaches the apiserver, and kubectl prints the Status message.
    const ns = await f.newNamespace('filter');
    // No controller-manager here: the ServiceAccount admission needs `default` to exist.
    assert.equal((await f.kubectl(['create', 'serviceaccount', 'default', '-n', ns])).code, 0);
    const made = await f.kubectl(['run', 'p', '-n', ns, '--image=busybox']);
    assert.equal(made.code, 0, made.stderr);
    const exec = (kubeconfig: string) => f.kubectl(['exec', '-n', ns, 'p', '--', 'true'], { kubeconfig });
    const viaDirect = await exec(f.kubeconfigs.adminToken);
    assert.equal(viaDirect.code, 1);
    assert.match(viaDirect.stderr, /pod p does not have a host assigned/);
    const viaOpen = await exec(open.kubeconfig);
    assert.equal(viaOpen.stderr, viaDirect.stderr);
    const viaProxy = await exec(simple.kubeconfig);
    assert.equal(viaProxy.code, 1);
    assert.match(
      viaProxy.stderr,
      /forbidden: kube-cache-proxy refuses (GET|POST) "\/api\/v1\/namespaces\/[^/]+\/pods\/p\/exec": the path matches --reject-paths "\^\/api\/\.\*\/pods\/\.\*\/exec"/,
      viaProxy.stderr,
    );
  });

  test('--reject-paths= lets exec and attach through: the apiserver answers, byte for byte', async () => {
    for (const path of EXEC_PATHS) {
      const d = await post(direct, path);
      const o = await post({ url: open.url }, path);
      assert.equal(o.status, d.status, path);
      assert.equal(o.body, d.body, path);
    }
  });

  test('refusals are counted by the flag that refused them, never by path', async () => {
    const text = await (await fetch(`${simple.ops}/metrics`)).text();
    const n = metricSum(text, 'kube_cache_proxy_requests_filtered_total', { filter: 'reject-paths' });
    assert.ok(n >= EXEC_PATHS.length * 2 + 2, `filtered: ${n}`);
    assert.equal(metricSum(text, 'kube_cache_proxy_requests_filtered_total'), n);
    assert.ok(!/requests_filtered_total\{[^}]*(path|url)=/.test(text));
  });

  describe('with --delegated-auth and --reject-methods', () => {
    let authenticated: InProcessProxy;
    let readOnly: InProcessProxy;
    before(async () => {
      authenticated = await startProxy(f, { resources: 'configmaps', delegatedAuth: true });
      readOnly = await startProxy(f, {
        resources: 'configmaps',
        args: ['--reject-methods', 'POST,PUT,PATCH,DELETE', '--reject-paths', ''],
      });
    });
    after(async () => {
      await authenticated?.stop();
      await readOnly?.stop();
    });

    test('--delegated-auth: no path rejected by default, the client is itself upstream', async () => {
      const tls = { url: authenticated.url, ca: f.caPem };
      for (const path of EXEC_PATHS) {
        const d = await post(direct, path);
        const p = await post(tls, path);
        assert.equal(p.status, d.status, path);
        assert.equal(p.body, d.body, path);
      }
    });

    test('--reject-methods POST,PUT,PATCH,DELETE: writes refused, reads served', async () => {
      const w = await f.kubectl(['create', 'configmap', 'filtered', '-n', 'default'], {
        kubeconfig: readOnly.kubeconfig,
      });
      assert.notEqual(w.code, 0);
      assert.match(
        w.stderr,
        /forbidden: kube-cache-proxy refuses POST "\/api\/v1\/namespaces\/default\/configmaps": the method matches --reject-methods "POST"/,
      );
      const r = await f.kubectl(['get', 'configmaps', '-n', 'kube-system', '-o', 'name'], {
        kubeconfig: readOnly.kubeconfig,
      });
      assert.equal(r.code, 0, r.stderr);
      const text = await (await fetch(`${readOnly.ops}/metrics`)).text();
      assert.equal(
        metricSum(text, 'kube_cache_proxy_requests_filtered_total', { filter: 'reject-methods' }),
        1,
      );
    });
  });
});
