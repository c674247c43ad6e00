/**
 * Shared by bench/tools/sync.ts and the reflector e2e tests: seeding ConfigMaps through the upstream,
 * a direct paginated LIST for comparison, and a Map-based CacheSink (the real watch cache lives
 * in src/cache/ and is not needed to measure or check the reflector).
 */
import { request } from 'undici';
import type { UpstreamObject } from '../../src/apimachinery/object.ts';
import type { CacheSink } from '../../src/reflector/cache-sink.ts';
import type { Upstream } from '../../src/upstream/connection.ts';
import { upstreamGetBuffer } from '../../src/upstream/request.ts';

/** A CacheSink keeping `namespace/name` → object, the RV and counters. */
export class MapSink implements CacheSink {
  readonly objects = new Map<string, UpstreamObject>();
  rv = '';
  live = false;
  replaces = 0;
  events = 0;
  #waiters: Array<() => void> = [];

  replace(objects: UpstreamObject[], resourceVersion: string): void {
    this.objects.clear();
    for (const o of objects) this.objects.set(key(o), o);
    this.rv = resourceVersion;
    this.replaces++;
    this.#notify();
  }
  add(obj: UpstreamObject): void {
    this.#set(obj);
  }
  update(obj: UpstreamObject): void {
    this.#set(obj);
  }
  delete(obj: UpstreamObject): void {
    this.objects.delete(key(obj));
    this.rv = obj.object.metadata.resourceVersion;
    this.events++;
    this.#notify();
  }
  bookmark(resourceVersion: string): void {
    this.rv = resourceVersion;
    this.#notify();
  }
  setLive(live: boolean): void {
    this.live = live;
    this.#notify();
  }
  #set(obj: UpstreamObject): void {
    this.objects.set(key(obj), obj);
    this.rv = obj.object.metadata.resourceVersion;
    this.events++;
    this.#notify();
  }
  #notify(): void {
    const ws = this.#waiters;
    this.#waiters = [];
    for (const w of ws) w();
  }

  /** Resolves when `pred()` holds (checked on every sink call); rejects after `timeoutMs`. */
  async waitFor(pred: () => boolean, timeoutMs: number, what = 'condition'): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!pred()) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.min(left, 250));
        this.#waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  /** `key → resourceVersion` of the objects whose key starts with `prefix`. */
  versions(prefix = ''): Map<string, string> {
    const m = new Map<string, string>();
    for (const [k, o] of this.objects) if (k.startsWith(prefix)) m.set(k, o.object.metadata.resourceVersion);
    return m;
  }
}

function key(o: UpstreamObject): string {
  const m = o.object.metadata;
  return m.namespace ? `${m.namespace}/${m.name}` : m.name;
}

/**
 * Creates `n` ConfigMaps `cm-00000…` of about `bytes` bytes each in `namespace`, `concurrency`
 * POSTs at a time. Throws on the first non-201 answer.
 */
export async function seedConfigMaps(
  up: Upstream,
  namespace: string,
  n: number,
  opts: { bytes?: number; concurrency?: number; prefix?: string } = {},
): Promise<void> {
  const filler = 'x'.repeat(Math.max(0, (opts.bytes ?? 1024) - 200));
  const auth = await up.authorization();
  let next = 0;
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= n) return;
      const body = JSON.stringify({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {
          name: `${opts.prefix ?? 'cm'}-${String(i).padStart(6, '0')}`,
          labels: { seeded: 'true' },
        },
        data: { i: String(i), filler },
      });
      const res = await request(`${up.baseUrl}/api/v1/namespaces/${namespace}/configmaps`, {
        method: 'POST',
        dispatcher: up.dispatcher,
        headers: { 'content-type': 'application/json', ...(auth ? { authorization: auth } : {}) },
        body,
      });
      const text = await res.body.text();
      if (res.statusCode !== 201) throw new Error(`seed ${i}: ${res.statusCode} ${text.slice(0, 200)}`);
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency ?? 16 }, worker));
}

/**
 * A direct, paginated, consistent (RV="") LIST of `path` (e.g. `/api/v1/namespaces/ns/configmaps`):
 * `key → resourceVersion` and the list's RV.
 */
export async function directList(
  up: Upstream,
  path: string,
): Promise<{ rv: string; versions: Map<string, string> }> {
  const versions = new Map<string, string>();
  let cont = '';
  let rv = '';
  do {
    const body = JSON.parse(
      (await upstreamGetBuffer(up, path, { limit: 500, continue: cont || undefined })).toString('utf8'),
    ) as {
      metadata: { resourceVersion: string; continue?: string };
      items: { metadata: { name: string; namespace?: string; resourceVersion: string } }[];
    };
    if (!cont) rv = body.metadata.resourceVersion;
    for (const i of body.items) {
      const m = i.metadata;
      versions.set(m.namespace ? `${m.namespace}/${m.name}` : m.name, m.resourceVersion);
    }
    cont = body.metadata.continue ?? '';
  } while (cont);
  return { rv, versions };
}
