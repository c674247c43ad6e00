/**
 * After a suite ran through the proxy: does every cache the proxy holds equal the apiserver? For
 * each synced, unscoped cache of `/debug/cache` (docs/operations.md), LIST it directly (JSON, no
 * limit), then through the proxy at that list's resourceVersion (`resourceVersionMatch=NotOlderThan`,
 * so the cache answers once it has caught up), and compare the two sets of
 * `namespace/name@resourceVersion`. Controllers may still be writing (namespaces being finalized),
 * so a resource that differs is listed again until it matches or the deadline passes.
 */
import { Agent, request } from 'undici';

/** A cache whose contents differ from the apiserver's. */
export interface CacheMismatch {
  /** `resource.group/version` (`pods/v1`, `deployments.apps/v1`). */
  resource: string;
  /** Keys only the apiserver has, only the proxy has (first 10 of each). */
  onlyDirect: string[];
  onlyProxy: string[];
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

async function getJson<T>(url: string, headers: Record<string, string>, dispatcher?: Agent): Promise<T> {
  const r = await request(url, { headers: { accept: 'application/json', ...headers }, dispatcher });
  const body = await r.body.text();
  if (r.statusCode !== 200) throw new Error(`GET ${url}: ${r.statusCode} ${body.slice(0, 300)}`);
  return JSON.parse(body) as T;
}

const keys = (l: List) =>
  new Set(
    l.items.map((i) => `${i.metadata.namespace ?? ''}/${i.metadata.name}@${i.metadata.resourceVersion}`),
  );

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
      for (;;) {
        const direct = await getJson<List>(`${o.server}${path}`, auth, agent);
        const rv = direct.metadata.resourceVersion;
        const viaProxy = await getJson<List>(
          `${o.proxy}${path}?resourceVersion=${rv}&resourceVersionMatch=NotOlderThan`,
          auth,
          agent,
        );
        const d = keys(direct);
        const p = keys(viaProxy);
        const onlyDirect = [...d].filter((k) => !p.has(k));
        const onlyProxy = [...p].filter((k) => !d.has(k));
        if (onlyDirect.length + onlyProxy.length === 0) break;
        if (Date.now() > deadline) {
          out.push({
            resource: `${e.resource}${e.group ? `.${e.group}` : ''}/${e.version}`,
            onlyDirect: onlyDirect.slice(0, 10),
            onlyProxy: onlyProxy.slice(0, 10),
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
