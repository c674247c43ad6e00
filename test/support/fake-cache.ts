/**
 * A small in-memory stand-in for the watch cache's serving API (`ServedCache`, `CacheCodec`),
 * so routes can be tested with `fastify.inject()` before/independently of `src/cache/`.
 * Label selectors: `k=v` terms joined by commas; field selectors: `metadata.name=x` only.
 */

import { PassThrough, type Readable } from 'node:stream';
import { MockAgent } from 'undici';
import { decodeContinue } from '../../src/apimachinery/continue-token.ts';
import type { ResourceInfo } from '../../src/apimachinery/gvr.ts';
import { bufferItems } from '../../src/apimachinery/list-items.ts';
import type { UpstreamObject } from '../../src/apimachinery/object.ts';
import { badRequest, expired } from '../../src/apimachinery/status.ts';
import { encodeMetadataList, GET_END, metadataHead, metadataOf } from '../../src/cache/metadata-view.ts';
import { buildServer, type ServerOptions } from '../../src/server/app.ts';
import type { CacheCodec, CacheWatch, ServedCache } from '../../src/server/cache-api.ts';
import { silentLogger } from '../../src/util/logger.ts';
import { resourceInfo } from './resource-info.ts';

export const podsInfo: ResourceInfo = resourceInfo('v1', 'pods', 'Pod', {
  verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
});

export function pod(
  namespace: string,
  name: string,
  rv: number,
  labels: Record<string, string> = {},
): UpstreamObject {
  const object = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, uid: `uid-${name}`, resourceVersion: String(rv), labels },
  };
  return { raw: Buffer.from(JSON.stringify(object)), object };
}

type Sel = Record<string, string>;

export class FakeCache implements ServedCache {
  readonly resource: ResourceInfo;
  synced = true;
  live = true;
  rv = 10n;
  windowStart = 5n;
  /** The compaction floor `compactedAt` answers by (0n: nothing compacted). */
  compactedFloor = 0n;
  objects: UpstreamObject[] = [];
  /** What waitUntilFresh / waitSynced answer (they resolve at once). */
  becomesFresh = false;
  becomesSynced = false;
  watches: { q: Parameters<ServedCache['watch']>[0]; stream: PassThrough }[] = [];
  calls: string[] = [];

  constructor(resource: ResourceInfo = podsInfo) {
    this.resource = resource;
  }
  isSynced() {
    return this.synced;
  }
  async waitSynced() {
    this.calls.push('waitSynced');
    if (this.becomesSynced) this.synced = true;
    return this.synced;
  }
  isLive() {
    return this.live;
  }
  resourceVersion() {
    return this.rv;
  }
  async waitUntilFresh(rv: bigint) {
    this.calls.push(`waitUntilFresh ${rv}`);
    if (this.becomesFresh && this.rv < rv) this.rv = rv;
    return this.rv >= rv;
  }
  async compactedAt(rv: bigint) {
    this.calls.push(`compactedAt ${rv}`);
    return rv <= this.compactedFloor;
  }
  list(q: Parameters<ServedCache['list']>[0]) {
    this.calls.push(
      `list ns=${q.namespace ?? ''} exact=${q.exactRV ?? ''}${q.limit ? ` limit=${q.limit}` : ''}${q.continueFrom ? ` continue=${q.continueFrom.rv}:${q.continueFrom.start}` : ''}`,
    );
    // A snapshot at an exact RV or a continue token's RV exists only inside the window.
    const at = q.exactRV ?? q.continueFrom?.rv;
    if (at !== undefined && (at < this.windowStart || at > this.rv)) {
      throw expired(`too old resource version: ${at} (${this.windowStart})`);
    }
    const label = q.labelSelector as Sel;
    const field = q.fieldSelector as Sel;
    const items = this.objects
      .filter((o) => q.namespace === undefined || o.object.metadata.namespace === q.namespace)
      .filter((o) => Object.entries(label).every(([k, v]) => o.object.metadata.labels?.[k] === v))
      .filter(
        (o) => field['metadata.name'] === undefined || o.object.metadata.name === field['metadata.name'],
      )
      .map((o) => (q.metadata ? metadataOf(o.raw) : o.raw));
    return { resourceVersion: String(q.exactRV ?? this.rv), items: bufferItems(items) };
  }
  get(namespace: string | undefined, name: string) {
    const o = this.objects.find(
      (o) => o.object.metadata.namespace === namespace && o.object.metadata.name === name,
    );
    return o
      ? {
          object: o.object,
          wire: [o.raw],
          metadataWire: (v: 'v1' | 'v1beta1') => [metadataHead(v), metadataOf(o.raw), GET_END],
        }
      : undefined;
  }
  watch(q: Parameters<ServedCache['watch']>[0]): CacheWatch {
    const stream = new PassThrough();
    this.watches.push({ q, stream });
    return {
      stream: stream as Readable,
      close: () => stream.end(),
      get closed() {
        return stream.writableEnded;
      },
    };
  }
}

function parseTerms(s: string): Sel {
  const out: Sel = {};
  for (const t of s.split(',').filter(Boolean)) {
    const m = /^([a-z./]+)==?([a-z0-9-]*)$/i.exec(t);
    if (!m) throw badRequest(`unable to parse requirement: ${t}`);
    out[m[1]!] = m[2]!;
  }
  return out;
}

export const fakeCodec: CacheCodec = {
  parseLabelSelector: (s) => parseTerms(s),
  parseFieldSelector: (s) => {
    const sel = parseTerms(s);
    return Object.keys(sel).every((k) => k === 'metadata.name' || k === 'metadata.namespace')
      ? sel
      : undefined;
  },
  encodeList: (r, page, metadata) => {
    if (metadata) return encodeMetadataList(metadata, page);
    const { resourceVersion, items } = page;
    return {
      head: Buffer.from(
        `{"kind":"${r.listKind}","apiVersion":"${r.apiVersion}","metadata":{"resourceVersion":"${resourceVersion}"},"items":[`,
      ),
      items,
      open: Buffer.alloc(0),
      close: Buffer.alloc(0),
      tail: Buffer.from(']}'),
    };
  },
  decodeContinue,
};

/**
 * A server over one {@link FakeCache} holding `objects`, with an undici MockAgent upstream at
 * `https://apiserver.test:6443` (network disabled); `over` overrides any ServerOptions.
 */
export function mockServer(objects: UpstreamObject[] = [], over: Partial<ServerOptions> = {}) {
  const agent = new MockAgent();
  agent.disableNetConnect();
  const cache = new FakeCache();
  cache.objects = objects;
  const server = buildServer({
    upstream: {
      server: new URL('https://apiserver.test:6443'),
      dispatcher: agent,
      longRunningDispatcher: agent,
      authorization: () => undefined,
    },
    caches: [cache],
    codec: fakeCodec,
    consistentReads: 'cache',
    logger: silentLogger,
    ...over,
  });
  return { agent, cache, server };
}
