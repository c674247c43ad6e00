/**
 * A scripted fake apiserver (node:http, plain HTTP on 127.0.0.1) for integration tests of the
 * whole proxy: it serves discovery for core/v1 configmaps and hands every WATCH request to the
 * test as a {@link ScriptedWatch} whose events the test writes one by one. Everything else is a
 * 404 Status. Requests are recorded (method + path with query).
 *
 * Identity (the proxy's simple-mode rule, docs/design.md §4): it answers TokenReview and
 * SelfSubjectReview itself (not recorded): the proxy's token `fake` and the clients' token
 * `client` are the SAME identity ({@link FAKE_USER}, as a rotated service-account token is),
 * any other token is not authenticated.
 */
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One upstream watch request, held open until the test ends it. */
export interface ScriptedWatch {
  path: string;
  query: URLSearchParams;
  /** Writes one event line `{"type":…,"object":…}` (object given as JSON text or a value). */
  send(type: string, object: unknown): void;
  /** Writes a 200 with an ERROR event carrying a Status of `code` (e.g. 410) and ends. */
  error(code: number, reason: string, message: string): void;
  end(): void;
  /** Sends the 200 headers of a watch held by `holdWatches` (no-op once sent). */
  accept(): void;
  /** Answers a watch held by `holdWatches` with HTTP `code` and a Status body instead. */
  fail(code: number, reason: string, message: string): void;
  /** Resolves when the proxy closed it. */
  closed: Promise<void>;
}

/** The fake server. */
export interface FakeUpstream {
  url: string;
  /** `METHOD path?query` of every request, in arrival order. */
  requests: string[];
  /** Resolves with the next WATCH request (answered with 200 headers, unless `holdWatches`). */
  nextWatch(): Promise<ScriptedWatch>;
  /**
   * When true, a new WATCH request gets no response headers until the test calls `accept()`
   * (or sends on it): the upstream is slow to accept a re-watch. Default false.
   */
  holdWatches: boolean;
  /**
   * Answers other requests when set and it returns true (e.g. a LIST with a given RV); else
   * the 404 below.
   */
  answer?: (req: IncomingMessage, url: URL, res: ServerResponse) => boolean;
  /** Writes a kubeconfig for it (bearer token `fake`) to `path`. */
  writeKubeconfig(path: string): Promise<string>;
  close(): Promise<void>;
}

/** The identity of the tokens `fake` and `client`. */
export const FAKE_USER = {
  username: 'system:serviceaccount:kcp:fake',
  uid: 'fake-uid',
  groups: ['system:serviceaccounts', 'system:serviceaccounts:kcp', 'system:authenticated'],
};

/** Answers TokenReview and SelfSubjectReview POSTs (true = answered). */
export function answerReview(req: IncomingMessage, res: ServerResponse): boolean {
  const path = (req.url ?? '').split('?')[0];
  if (req.method !== 'POST') return false;
  const review = path === '/apis/authentication.k8s.io/v1/tokenreviews';
  if (!review && path !== '/apis/authentication.k8s.io/v1/selfsubjectreviews') return false;
  let body = '';
  req.on('data', (c: Buffer) => {
    body += c.toString();
  });
  req.on('end', () => {
    res.writeHead(201, { 'content-type': 'application/json' });
    if (!review) {
      res.end(JSON.stringify({ kind: 'SelfSubjectReview', status: { userInfo: FAKE_USER } }));
      return;
    }
    const token = (JSON.parse(body) as { spec?: { token?: string } }).spec?.token;
    const ok = token === 'fake' || token === 'client';
    res.end(
      JSON.stringify({ kind: 'TokenReview', status: ok ? { authenticated: true, user: FAKE_USER } : {} }),
    );
  });
  return true;
}

const CORE_V1 = {
  kind: 'APIResourceList',
  groupVersion: 'v1',
  resources: [
    {
      name: 'configmaps',
      singularName: 'configmap',
      namespaced: true,
      kind: 'ConfigMap',
      verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
      shortNames: ['cm'],
    },
  ],
};

function status(res: ServerResponse, code: number, reason: string, message: string): void {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(
    JSON.stringify({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message,
      reason,
      code,
    }),
  );
}

/**
 * Answers a request itself before the scripted defaults (true = answered): e.g. a 422 for a
 * watch-list, a LIST body.
 */
export type Intercept = (req: IncomingMessage, url: URL, res: ServerResponse) => boolean;

/** A Status answer (`kind: Status`) as the apiserver writes it. */
export function writeStatus(res: ServerResponse, code: number, reason: string, message: string): void {
  status(res, code, reason, message);
}

/** Starts the fake on an ephemeral loopback port; `intercept` sees every request first. */
export async function startFakeUpstream(intercept?: Intercept): Promise<FakeUpstream> {
  const requests: string[] = [];
  const waiting: ((w: ScriptedWatch) => void)[] = [];
  const pending: ScriptedWatch[] = [];
  const open = new Set<ServerResponse>();
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    if (answerReview(req, res)) return;
    // The proxy's upstream check (readiness): answered as an apiserver does, not recorded.
    if (req.url === '/version') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ major: '1', minor: '37', gitVersion: 'v1.37.2' }));
      return;
    }
    requests.push(`${req.method} ${req.url}`);
    const url = new URL(req.url ?? '/', 'http://x');
    if (intercept?.(req, url, res)) return;
    if (url.pathname === '/api') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'APIVersions', versions: ['v1'] }));
      return;
    }
    if (url.pathname === '/api/v1') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(CORE_V1));
      return;
    }
    if (url.pathname === '/apis') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'APIGroupList', apiVersion: 'v1', groups: [] }));
      return;
    }
    if (
      /^\/api\/v1(\/namespaces\/[^/]+)?\/configmaps$/.test(url.pathname) &&
      url.searchParams.get('watch') === '1'
    ) {
      const accept = () => {
        if (res.headersSent) return;
        res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
        res.flushHeaders();
      };
      if (!fake.holdWatches) accept();
      open.add(res);
      const closed = once(res, 'close').then(() => {
        open.delete(res);
      });
      const w: ScriptedWatch = {
        path: url.pathname,
        query: url.searchParams,
        accept,
        fail(code, reason, message) {
          status(res, code, reason, message);
        },
        send(type, object) {
          accept();
          const o = typeof object === 'string' ? object : JSON.stringify(object);
          res.write(`{"type":"${type}","object":${o}}\n`);
        },
        error(code, reason, message) {
          w.send('ERROR', {
            kind: 'Status',
            apiVersion: 'v1',
            metadata: {},
            status: 'Failure',
            message,
            reason,
            code,
          });
          res.end();
        },
        end() {
          accept();
          res.end();
        },
        closed,
      };
      const waiter = waiting.shift();
      if (waiter) waiter(w);
      else pending.push(w);
      return;
    }
    if (fake.answer?.(req, url, res)) return;
    status(
      res,
      404,
      'NotFound',
      `the server could not find the requested resource (${req.method} ${url.pathname})`,
    );
  };
  const server: Server = createServer(handle);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const fake: FakeUpstream = {
    url,
    requests,
    holdWatches: false,
    nextWatch() {
      const w = pending.shift();
      if (w) return Promise.resolve(w);
      return new Promise((res) => waiting.push(res));
    },
    async writeKubeconfig(path) {
      const doc = {
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'fake', cluster: { server: url } }],
        users: [{ name: 'fake', user: { token: 'fake' } }],
        contexts: [{ name: 'fake', context: { cluster: 'fake', user: 'fake' } }],
        'current-context': 'fake',
      };
      await writeFile(path, JSON.stringify(doc), { mode: 0o600 });
      return path;
    },
    async close() {
      for (const r of open) r.destroy();
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
  return fake;
}

/** A ConfigMap as the apiserver writes it in watch events (kind and apiVersion first). */
export function configMap(
  name: string,
  rv: number,
  labels: Record<string, string> = {},
): Record<string, unknown> {
  return {
    kind: 'ConfigMap',
    apiVersion: 'v1',
    metadata: { name, namespace: 'ns', uid: `uid-${name}`, resourceVersion: String(rv), labels },
  };
}
