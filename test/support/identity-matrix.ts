/**
 * The requests of issue 10's differential matrix and how two answers to one of them are compared:
 * a `metav1.Status` (every error) in full, a list by its kind and its items' `namespace/name@rv`,
 * an object by its kind and key, a watch by its events (bookmarks left out: their timing is the
 * server's own). Resources: `configmaps` and `pods` are cached by the proxy under test, `secrets`
 * and `serviceaccounts` are not; writes are server-side dry runs (nothing persists) or deletes of
 * objects that do not exist (404 or 403), so every identity can send every cell.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Answer, Identity, IdentityClient, Req } from './identities.ts';

/** One request of the matrix. */
export interface Cell extends Req {
  name: string;
  /** Whether the proxy under test caches the resource AND the verb is a read. */
  cached: boolean;
  watch?: boolean;
}

/** Namespaces of the matrix: `own` (the `limited` namespace), `other` (a fresh one); `run` labels its objects. */
export interface MatrixScope {
  own: string;
  other: string;
  run: string;
}

/** Name of the ConfigMap, and the pods bound to n1 and n2, the matrix creates in each namespace. */
export const MATRIX_OBJECTS = { configMap: 'idm-cm', podN1: 'idm-pod-n1', podN2: 'idm-pod-n2' } as const;

/** The matrix's requests for `s`. */
export function matrixCells(s: MatrixScope): Cell[] {
  const { own, other, run } = s;
  const sel = `labelSelector=${encodeURIComponent(`idm=${run}`)}`;
  const node = (n: string) => `fieldSelector=${encodeURIComponent(`spec.nodeName=${n}`)}`;
  const w = 'watch=1&resourceVersion=0&timeoutSeconds=1';
  const o = MATRIX_OBJECTS;
  const c = (name: string, path: string, extra: Partial<Cell> = {}): Cell => ({
    name,
    path,
    cached: !/\/(secrets|serviceaccounts)\b/.test(path) && (extra.method ?? 'GET') === 'GET',
    ...extra,
  });
  const cm = (ns: string) => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'idm-dry', namespace: ns },
  });
  const pod = (ns: string) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'idm-dry', namespace: ns },
    spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'registry.invalid/none' }] },
  });
  return [
    c('LIST configmaps own', `/api/v1/namespaces/${own}/configmaps`),
    c('LIST configmaps other', `/api/v1/namespaces/${other}/configmaps`),
    c('LIST configmaps cluster', '/api/v1/configmaps'),
    c('LIST configmaps own label', `/api/v1/namespaces/${own}/configmaps?${sel}`),
    c('LIST configmaps cluster label', `/api/v1/configmaps?${sel}`),
    c(
      'LIST configmaps own field name',
      `/api/v1/namespaces/${own}/configmaps?fieldSelector=metadata.name%3D${o.configMap}`,
    ),
    c('LIST pods cluster', '/api/v1/pods'),
    c('LIST pods cluster nodeName=n1', `/api/v1/pods?${node('n1')}`),
    c('LIST pods cluster nodeName=n2', `/api/v1/pods?${node('n2')}`),
    c('LIST pods cluster nodeName=n1 label', `/api/v1/pods?${node('n1')}&${sel}`),
    c('LIST pods own nodeName=n1', `/api/v1/namespaces/${own}/pods?${node('n1')}`),
    c('LIST pods other', `/api/v1/namespaces/${other}/pods?${sel}`),
    c('GET configmap own', `/api/v1/namespaces/${own}/configmaps/${o.configMap}`),
    c('GET configmap other', `/api/v1/namespaces/${other}/configmaps/${o.configMap}`),
    c('GET configmap own missing', `/api/v1/namespaces/${own}/configmaps/idm-missing`),
    c('GET pod own n1', `/api/v1/namespaces/${own}/pods/${o.podN1}`),
    c('GET pod other n2', `/api/v1/namespaces/${other}/pods/${o.podN2}`),
    c('WATCH configmaps own', `/api/v1/namespaces/${own}/configmaps?${w}&${sel}`, { watch: true }),
    c('WATCH configmaps other', `/api/v1/namespaces/${other}/configmaps?${w}`, { watch: true }),
    c('WATCH pods cluster', `/api/v1/pods?${w}&${sel}`, { watch: true }),
    c('WATCH pods cluster nodeName=n1', `/api/v1/pods?${w}&${node('n1')}&${sel}`, { watch: true }),
    c('uncached LIST secrets own', `/api/v1/namespaces/${own}/secrets?${sel}`),
    c('uncached GET secret other missing', `/api/v1/namespaces/${other}/secrets/idm-missing`),
    c('uncached LIST serviceaccounts cluster', `/api/v1/serviceaccounts?${sel}`),
    c('uncached LIST serviceaccounts own', `/api/v1/namespaces/${own}/serviceaccounts`),
    c('write POST configmap own (dry run)', `/api/v1/namespaces/${own}/configmaps?dryRun=All`, {
      method: 'POST',
      body: cm(own),
    }),
    c('write POST configmap other (dry run)', `/api/v1/namespaces/${other}/configmaps?dryRun=All`, {
      method: 'POST',
      body: cm(other),
    }),
    c('write POST pod other on n1 (dry run)', `/api/v1/namespaces/${other}/pods?dryRun=All`, {
      method: 'POST',
      body: pod(other),
    }),
    c('write DELETE configmap own missing', `/api/v1/namespaces/${own}/configmaps/idm-missing`, {
      method: 'DELETE',
    }),
  ];
}

type Obj = {
  kind?: string;
  apiVersion?: string;
  metadata?: { namespace?: string; name?: string; resourceVersion?: string };
};
const key = (o: Obj) =>
  `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}@${o.metadata?.resourceVersion ?? ''}`;

/**
 * What must be equal between two answers to `cell`: the status code, and a Status body in full
 * (with the media type), a list's kind/apiVersion and item keys (sorted), an object's
 * kind/apiVersion and key (a dry-run create: without the resourceVersion it never gets), or a
 * watch's non-BOOKMARK events as `TYPE key` (sorted: two servers may interleave namespaces
 * differently).
 */
export function comparable(cell: Cell, a: Answer): unknown {
  if (cell.watch && a.status === 200) {
    const events = a.body
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as { type: string; object: Obj & { reason?: string } })
      .filter((e) => e.type !== 'BOOKMARK')
      .map((e) => (e.type === 'ERROR' ? `ERROR ${e.object.reason}` : `${e.type} ${key(e.object)}`))
      .sort();
    return { status: a.status, events };
  }
  let j: (Obj & { items?: Obj[] }) | undefined;
  try {
    j = JSON.parse(a.body) as Obj & { items?: Obj[] };
  } catch {
    return { status: a.status, contentType: a.contentType, text: a.body };
  }
  if (j.kind === 'Status') return { status: a.status, contentType: a.contentType.split(';')[0], body: j };
  if (Array.isArray(j.items))
    return { status: a.status, kind: j.kind, apiVersion: j.apiVersion, items: j.items.map(key).sort() };
  const k = cell.method === 'POST' ? `${j.metadata?.namespace}/${j.metadata?.name}` : key(j);
  return { status: a.status, kind: j.kind, apiVersion: j.apiVersion, key: k };
}

/** One cell's outcome: the two answers and their comparables. */
export interface CellResult {
  cell: Cell;
  identity: Identity;
  direct: Answer;
  proxy: Answer;
  want: unknown;
  got: unknown;
}

/**
 * Sends `cell` as `id` directly and through the proxy, up to `tries` times while the two differ:
 * other test files write to the shared apiserver concurrently, and a cache lags the apiserver by a
 * moment, so a difference counts only once it survives retries. Returns the last pair.
 */
export async function sendBoth(
  client: IdentityClient,
  bases: { direct: string; proxy: string },
  id: Identity,
  cell: Cell,
  tries = 6,
): Promise<CellResult> {
  let r: CellResult | undefined;
  for (let i = 0; i < tries; i++) {
    const [direct, proxy] = await Promise.all([
      client.send(bases.direct, id, cell),
      client.send(bases.proxy, id, cell),
    ]);
    r = { cell, identity: id, direct, proxy, want: comparable(cell, direct), got: comparable(cell, proxy) };
    if (isDeepStrictEqual(r.want, r.got)) return r;
    await new Promise((res) => setTimeout(res, 250 * (i + 1)));
  }
  return r!;
}

/** Runs `fn` over `items` with at most `n` at a time; results in input order. */
export async function pool<T, R>(items: T[], n: number, fn: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!);
      }
    }),
  );
  return out;
}

/** A failing cell as one readable block (for assertion messages and the contract's findings). */
export function describeMismatch(r: CellResult): string {
  return [
    `${r.identity.name} × ${r.cell.name} (${r.cell.method ?? 'GET'} ${r.cell.path})`,
    `  direct ${r.direct.status}: ${r.direct.body.slice(0, 600)}`,
    `  proxy  ${r.proxy.status}: ${r.proxy.body.slice(0, 600)}`,
  ].join('\n');
}
