/**
 * A fake apiserver (node:http, plain HTTP on 127.0.0.1) that churns objects as fast as the proxy
 * reads them, for memory tests of the whole proxy: discovery for `pods`, `configmaps`
 * (core/v1) and `deployments` (apps/v1); every watch-list request (`sendInitialEvents=true`)
 * gets the resource's objects as ADDED events and the `k8s.io/initial-events-end` bookmark, then,
 * once {@link ChurnUpstream.churn} is called, MODIFIED events of those objects with new
 * contents. RVs come from one counter, increasing across resources like etcd's revision.
 * Writes wait for the socket to drain (the proxy's reading speed paces the churn).
 */
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { churnConfigMap, churnDeployment, churnPod } from './churn-objects.ts';
import { answerReview } from './fake-upstream.ts';

/** One churned resource: its URL path and how to build its objects. */
interface ChurnResource {
  path: RegExp;
  /** Object `i` of the resource at `rv`, generation `gen`. */
  make(i: number, rv: number, gen: number): Record<string, unknown>;
  count: number;
  kind: string;
  apiVersion: string;
}

/** The fake server. */
export interface ChurnUpstream {
  url: string;
  /** Writes a kubeconfig for it (bearer token `fake`) to `path`. */
  writeKubeconfig(path: string): Promise<string>;
  /**
   * Sends MODIFIED events on every open watch until `bytesPerResource` bytes of objects were
   * sent for each resource (or `signal` aborts); resolves with the events sent per resource.
   */
  churn(bytesPerResource: number, signal?: AbortSignal): Promise<Record<string, number>>;
  close(): Promise<void>;
}

const RESOURCES: Record<string, ChurnResource> = {
  pods: {
    path: /^\/api\/v1(\/namespaces\/[^/]+)?\/pods$/,
    make: (i, rv, gen) => churnPod(`ns${i % 5}`, `churn-${i}-abcde`, rv, gen),
    count: 500,
    kind: 'Pod',
    apiVersion: 'v1',
  },
  configmaps: {
    path: /^\/api\/v1(\/namespaces\/[^/]+)?\/configmaps$/,
    make: (i, rv, gen) => churnConfigMap(`ns${i % 5}`, `cm-${i}`, rv, gen, 16 * 1024),
    count: 100,
    kind: 'ConfigMap',
    apiVersion: 'v1',
  },
  deployments: {
    path: /^\/apis\/apps\/v1(\/namespaces\/[^/]+)?\/deployments$/,
    make: (i, rv, gen) => churnDeployment(`ns${i % 5}`, `churn-${i}`, rv, gen),
    count: 500,
    kind: 'Deployment',
    apiVersion: 'apps/v1',
  },
};

const VERBS = ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'];
const DISCOVERY: Record<string, unknown> = {
  // The proxy's upstream check (readiness) asks it first.
  '/version': { major: '1', minor: '37', gitVersion: 'v1.37.2' },
  '/api': { kind: 'APIVersions', versions: ['v1'] },
  '/api/v1': {
    kind: 'APIResourceList',
    groupVersion: 'v1',
    resources: [
      { name: 'pods', singularName: 'pod', namespaced: true, kind: 'Pod', verbs: VERBS },
      { name: 'configmaps', singularName: 'configmap', namespaced: true, kind: 'ConfigMap', verbs: VERBS },
    ],
  },
  '/apis': {
    kind: 'APIGroupList',
    apiVersion: 'v1',
    groups: [
      {
        name: 'apps',
        versions: [{ groupVersion: 'apps/v1', version: 'v1' }],
        preferredVersion: { groupVersion: 'apps/v1', version: 'v1' },
      },
    ],
  },
  '/apis/apps/v1': {
    kind: 'APIResourceList',
    groupVersion: 'apps/v1',
    resources: [
      { name: 'deployments', singularName: 'deployment', namespaced: true, kind: 'Deployment', verbs: VERBS },
    ],
  },
};

/** Starts the fake on an ephemeral loopback port. */
export async function startChurnUpstream(): Promise<ChurnUpstream> {
  let rv = 1000;
  const watches = new Map<string, ServerResponse>();
  const gens = new Map<string, number>();
  const server = createServer((req, res) => {
    // The clients' token `client` is the proxy's identity (`fake`), as in fake-upstream.ts.
    if (answerReview(req, res)) return;
    const url = new URL(req.url ?? '/', 'http://x');
    const doc = DISCOVERY[url.pathname];
    if (doc) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(doc));
      return;
    }
    const name = Object.keys(RESOURCES).find((n) => RESOURCES[n]!.path.test(url.pathname));
    if (
      name &&
      url.searchParams.get('watch') === '1' &&
      url.searchParams.get('sendInitialEvents') === 'true'
    ) {
      const r = RESOURCES[name]!;
      res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
      for (let i = 0; i < r.count; i++)
        res.write(`{"type":"ADDED","object":${JSON.stringify(r.make(i, 100 + i, 0))}}\n`);
      const end = {
        kind: r.kind,
        apiVersion: r.apiVersion,
        metadata: { resourceVersion: String(++rv), annotations: { 'k8s.io/initial-events-end': 'true' } },
      };
      res.write(`{"type":"BOOKMARK","object":${JSON.stringify(end)}}\n`);
      watches.set(name, res);
      res.on('close', () => {
        if (watches.get(name) === res) watches.delete(name);
      });
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        reason: 'NotFound',
        code: 404,
      }),
    );
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const churnOne = async (name: string, budget: number, signal?: AbortSignal): Promise<number> => {
    const r = RESOURCES[name]!;
    let sent = 0;
    let events = 0;
    while (sent < budget && !signal?.aborted) {
      const res = watches.get(name);
      if (!res) {
        await new Promise((ok) => setTimeout(ok, 50));
        continue;
      }
      const i = events % r.count;
      const gen = (gens.get(name) ?? 0) + 1;
      gens.set(name, gen);
      const object = JSON.stringify(r.make(i, ++rv, gen));
      sent += object.length;
      events++;
      if (!res.write(`{"type":"MODIFIED","object":${object}}\n`))
        await Promise.race([once(res, 'drain'), once(res, 'close')]);
    }
    return events;
  };

  return {
    url,
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
    async churn(bytesPerResource, signal) {
      const names = Object.keys(RESOURCES);
      const counts = await Promise.all(names.map((n) => churnOne(n, bytesPerResource, signal)));
      return Object.fromEntries(names.map((n, i) => [n, counts[i]!]));
    },
    async close() {
      for (const r of watches.values()) r.destroy();
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}
