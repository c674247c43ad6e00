/**
 * After a suite ran through the proxy: does every cache the proxy holds equal the apiserver? For
 * each synced, unscoped cache of `/debug/cache` (docs/operations.md), LIST it through the proxy at
 * `resourceVersion=0` (any state: the cache answers at once, with its own snapshot and that
 * snapshot's RV P), then directly at exactly that RV (`resourceVersion=P&resourceVersionMatch=Exact`,
 * etcd's state at revision P), and compare the two sets of `namespace/name@resourceVersion`. Both
 * answers are then one state at one revision: a write between the two requests (Leases renew
 * every 2 s) cannot make them differ, and a difference is the cache's.
 *
 * Not the other way round (directly at RV="", then through the proxy NotOlderThan that RV): that
 * RV is etcd's revision, moved by writes to EVERY resource, so a cache reaches it only with its
 * resource's next event — a write after the direct LIST, which the proxy's answer then holds and
 * the direct one lacks (leases differed on most tries) — or not within the proxy's freshness wait
 * (3 s), and then the proxy passes the LIST upstream and the apiserver is compared with itself.
 *
 * When etcd has compacted P (410), the proxy's snapshot is compared with the apiserver's current
 * state instead: equal sets still prove the cache right (a change after P would show an RV above
 * P, or lack an object deleted since); a difference is retried with a new P until the deadline.
 */
import { Agent, request } from 'undici';

/** A cache whose contents differ from the apiserver's. */
export interface CacheMismatch {
  /** `resource.group/version` (`pods/v1`, `deployments.apps/v1`). */
  resource: string;
  /** Keys only the apiserver has, only the proxy has (first 10 of each). */
  onlyDirect: string[];
  onlyProxy: string[];
  /**
   * The RVs of the last try: the proxy's snapshot, and the apiserver's list (the same RV, or a
   * later one when etcd had compacted the proxy's).
   */
  proxyRV?: string;
  directRV?: string;
}

interface DebugEntry {
  group: string;
  version: string;
  resource: string;
  scope: string;
  namespace: string;
  synced: boolean;
}

interface List {
  metadata: { resourceVersion: string };
  items: { metadata: { namespace?: string; name: string; resourceVersion: string } }[];
}

async function get(
  url: string,
  headers: Record<string, string>,
  dispatcher?: Agent,
): Promise<{ status: number; body: string }> {
  const r = await request(url, { headers: { accept: 'application/json', ...headers }, dispatcher });
  return { status: r.statusCode, body: await r.body.text() };
}

async function getJson<T>(url: string, headers: Record<string, string>, dispatcher?: Agent): Promise<T> {
  const { status, body } = await get(url, headers, dispatcher);
  if (status !== 200) throw new Error(`GET ${url}: ${status} ${body.slice(0, 300)}`);
  return JSON.parse(body) as T;
}

const keys = (l: List) =>
  new Set(
    l.items.map((i) => `${i.metadata.namespace ?? ''}/${i.metadata.name}@${i.metadata.resourceVersion}`),
  );

/** Tries per differing resource even when the (shared) deadline has passed. */
const MIN_TRIES = 3;

/**
 * The caches of the proxy (`ops`: its ops listener, `proxy`: its API listener) that still differ
 * from the apiserver `server` after `deadlineMs` of retries; `authorization` is the bearer header
 * of the proxy's own identity (so the proxy serves it from the cache), `caPem` the CA of both
 * TLS listeners. Throws when `/debug/cache` or a LIST fails.
 */
export async function cacheMismatches(o: {
  ops: string;
  proxy: string;
  server: string;
  authorization: string;
  caPem: string;
  deadlineMs?: number;
}): Promise<CacheMismatch[]> {
  const agent = new Agent({ connect: { ca: o.caPem } });
  try {
    const debug = await getJson<{ resources: DebugEntry[] }>(`${o.ops}/debug/cache`, {});
    const entries = debug.resources.filter((e) => e.synced && !e.scope);
    const deadline = Date.now() + (o.deadlineMs ?? 60_000);
    const out: CacheMismatch[] = [];
    for (const e of entries) {
      const base = e.group ? `/apis/${e.group}/${e.version}` : `/api/${e.version}`;
      const path = `${base}${e.namespace ? `/namespaces/${e.namespace}` : ''}/${e.resource}`;
      const auth = { authorization: o.authorization };
      for (let tries = 1; ; tries++) {
        // The cache's snapshot first (RV=0 needs no freshness wait, so it is not passed upstream
        // for being behind), then the apiserver at exactly its RV.
        const viaProxy = await getJson<List>(`${o.proxy}${path}?resourceVersion=0`, auth, agent);
        const rv = viaProxy.metadata.resourceVersion;
        const exact = await get(
          `${o.server}${path}?resourceVersion=${encodeURIComponent(rv)}&resourceVersionMatch=Exact`,
          auth,
          agent,
        );
        let direct: List;
        if (exact.status === 200) direct = JSON.parse(exact.body) as List;
        else if (exact.status === 410) direct = await getJson<List>(`${o.server}${path}`, auth, agent);
        else
          throw new Error(
            `GET ${o.server}${path} at ${rv} (Exact): ${exact.status} ${exact.body.slice(0, 300)}`,
          );
        const d = keys(direct);
        const p = keys(viaProxy);
        const onlyDirect = [...d].filter((k) => !p.has(k));
        const onlyProxy = [...p].filter((k) => !d.has(k));
        if (onlyDirect.length + onlyProxy.length === 0) break;
        if (Date.now() > deadline && tries >= MIN_TRIES) {
          out.push({
            resource: `${e.resource}${e.group ? `.${e.group}` : ''}/${e.version}`,
            onlyDirect: onlyDirect.slice(0, 10),
            onlyProxy: onlyProxy.slice(0, 10),
            proxyRV: rv,
            directRV: direct.metadata.resourceVersion,
          });
          break;
        }
        await new Promise((r) => setTimeout(r, 500));
      }
    }
    return out;
  } finally {
    await agent.close();
  }
}
