/**
 * Issue 32's kept-message dictionary (apimachinery/protobuf/spliced.ts) side by side with the
 * fixture apiserver, mixed kinds: the first object of a type unusual (a ~600 KiB ConfigMap with
 * 300 labels, a tiny one after it), LIST bodies of ~700 KB (the body filled batch by batch, items
 * cut inside dictionary spans), GET, PartialObjectMetadata(List) v1 and v1beta1, then every
 * object updated (its kept message replaced) and all of it again; watch-list and resumed watches,
 * objects and metadata-only: byte for byte.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { decodeProtobufMeta } from '../../src/apimachinery/protobuf-meta.ts';
import { type Fixture, sharedFixture } from '../fixture/index.ts';
import { type InProcessProxy, startProxy } from '../support/proxy.ts';

const PB = 'application/vnd.kubernetes.protobuf';
const metaAccept = (as: string, v: string) => `${PB};as=${as};g=meta.k8s.io;v=${v}`;

interface Answer {
  status: number;
  body: Buffer;
  headers: Record<string, string | string[] | undefined>;
}

/** Splits a protobuf watch stream into its frames (4-byte big-endian length + WatchEvent). */
function frames(body: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at + 4 <= body.length; ) {
    const n = body.readUInt32BE(at);
    if (at + 4 + n > body.length) break;
    out.push(body.subarray(at, at + 4 + n));
    at += 4 + n;
  }
  return out;
}
/** A frame's event type (WatchEvent{1: type, …}: a one-byte length). */
const typeOf = (frame: Buffer) => frame.subarray(6, 6 + frame[5]!).toString();

const labelsOf = (n: number, salt: string) =>
  Object.fromEntries(Array.from({ length: n }, (_, i) => [`example.com/l-${i}`, `${salt}-${i % 7}`]));

describe('issue 32: the kept-message dictionary, byte for byte the apiserver', () => {
  let f: Fixture;
  let agent: Agent;
  let auth: Record<string, string>;
  let proxy: InProcessProxy;
  let ns: string;

  const direct = async (path: string, accept: string, init: { method?: string; body?: unknown } = {}) => {
    const r = await request(`${f.server}${path}`, {
      dispatcher: agent,
      method: (init.method ?? 'GET') as 'GET',
      headers: {
        ...auth,
        accept,
        'content-type': init.method === 'PATCH' ? 'application/merge-patch+json' : 'application/json',
      },
      ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
    });
    return {
      status: r.statusCode,
      body: Buffer.from(await r.body.arrayBuffer()),
      headers: r.headers,
    } as Answer;
  };
  const via = async (path: string, accept: string): Promise<Answer> => {
    const r = await request(`${proxy.url}${path}`, { headers: { ...auth, accept } });
    return { status: r.statusCode, body: Buffer.from(await r.body.arrayBuffer()), headers: r.headers };
  };
  /** The ListMeta's RV (a v1beta1 PartialObjectMetadataList numbers its ListMeta 2). */
  const rvOf = (a: Answer, v1beta1 = false) =>
    decodeProtobufMeta(a.body, v1beta1)?.metadata?.resourceVersion ?? '';
  const create = async (path: string, body: unknown) => {
    const r = await direct(path, 'application/json', { method: 'POST', body });
    assert.equal(r.status, 201, r.body.toString());
    return JSON.parse(r.body.toString()).metadata.resourceVersion as string;
  };

  const kinds = () => ({
    configmaps: `/api/v1/namespaces/${ns}/configmaps`,
    secrets: `/api/v1/namespaces/${ns}/secrets`,
    services: `/api/v1/namespaces/${ns}/services`,
    serviceaccounts: `/api/v1/namespaces/${ns}/serviceaccounts`,
  });
  const names: Record<string, string[]> = {};

  before(async () => {
    f = await sharedFixture();
    agent = new Agent({ connect: { ca: f.caPem } });
    auth = { authorization: `Bearer ${f.tokens.admin}`, 'user-agent': 'e2e' };
    ns = await f.newNamespace('pbdict');
    const k = kinds();
    // The first ConfigMap (by name, the first kept): huge, 300 labels; then a tiny one; then common ones.
    await create(k.configmaps, {
      metadata: { name: 'a-huge', labels: labelsOf(300, 'h'), annotations: { big: 'z'.repeat(70_000) } },
      data: { blob: 'abcdefgh'.repeat(75_000), small: 'x' },
    });
    await create(k.configmaps, { metadata: { name: 'b' } });
    names.configmaps = ['a-huge', 'b'];
    for (let i = 0; i < 40; i++) {
      const name = `c-${i}`;
      names.configmaps.push(name);
      await create(k.configmaps, {
        metadata: { name, labels: labelsOf(i % 12, 'c'), annotations: { note: `n ${'y'.repeat(i * 5)}` } },
        data: { key: `value-${'v'.repeat(i * 30)}`, q: 'b "q" ü𝄞' },
      });
    }
    names.secrets = [];
    for (let i = 0; i < 12; i++) {
      const name = i === 0 ? 'a-tiny' : `s-${i}`;
      names.secrets.push(name);
      await create(k.secrets, {
        metadata: { name, labels: labelsOf(i, 's') },
        ...(i > 0 && { stringData: { token: 't'.repeat(i * 40), other: 'o' } }),
        type: i % 2 ? 'Opaque' : 'example.com/x',
      });
    }
    names.services = [];
    for (let i = 0; i < 8; i++) {
      const name = `svc-${i}`;
      names.services.push(name);
      await create(k.services, {
        metadata: { name, labels: labelsOf(i * 3, 'v') },
        spec: {
          ports: Array.from({ length: 1 + i }, (_, p) => ({
            name: `p${p}`,
            port: 80 + p,
            targetPort: 8080 + p,
          })),
          selector: { app: `a${i}` },
        },
      });
    }
    names.serviceaccounts = [];
    for (let i = 0; i < 6; i++) {
      const name = `sa-${i}`;
      names.serviceaccounts.push(name);
      await create(k.serviceaccounts, { metadata: { name, annotations: { a: 'q'.repeat(i * 100) } } });
    }
    proxy = await startProxy(f, { resources: 'configmaps,secrets,services,serviceaccounts' });
  });
  after(async () => {
    await proxy?.stop();
    await agent?.close();
  });

  /** Every LIST, GET and metadata form of every kind, through the proxy and direct at its RV. */
  const compareAll = async (label: string, minRV: number) => {
    let compared = 0;
    for (const [kind, base] of Object.entries(kinds())) {
      for (const accept of [
        PB,
        metaAccept('PartialObjectMetadataList', 'v1'),
        metaAccept('PartialObjectMetadataList', 'v1beta1'),
      ]) {
        // Until the proxy's cache has seen the last write (a condition, not a duration).
        const v1beta1 = accept.endsWith('v1beta1');
        let a = await via(base, accept);
        while (Number(rvOf(a, v1beta1)) < minRV) a = await via(base, accept);
        assert.equal(a.status, 200, a.body.toString());
        assert.equal(a.headers['audit-id'], undefined, `${label} ${kind} ${accept}: from the cache`);
        assert.match(rvOf(a, v1beta1), /^[0-9]+$/);
        const d = await direct(
          `${base}?resourceVersion=${rvOf(a, v1beta1)}&resourceVersionMatch=Exact`,
          accept,
        );
        assert.equal(d.status, 200);
        assert.ok(
          a.body.equals(d.body),
          `${label}: LIST ${kind} ${accept} (${a.body.length} against ${d.body.length} bytes)`,
        );
        compared++;
      }
      for (const name of names[kind]!)
        for (const accept of [
          PB,
          metaAccept('PartialObjectMetadata', 'v1'),
          metaAccept('PartialObjectMetadata', 'v1beta1'),
        ]) {
          const g = await via(`${base}/${name}`, accept);
          const d = await direct(`${base}/${name}`, accept);
          assert.equal(g.status, d.status, `${label}: GET ${kind}/${name} ${accept}`);
          assert.ok(g.body.equals(d.body), `${label}: GET ${kind}/${name} ${accept}`);
          compared++;
        }
    }
    return compared;
  };

  test('mixed kinds with unusual first objects; then every object updated (its kept message replaced)', async () => {
    const before = await compareAll('first', 0);
    let last = 0;
    for (const [kind, base] of Object.entries(kinds()))
      for (const name of names[kind]!) {
        const r = await direct(`${base}/${name}`, 'application/json', {
          method: 'PATCH',
          body: { metadata: { labels: { updated: `yes-${name}`, 'example.com/l-0': null } } },
        });
        assert.equal(r.status, 200, r.body.toString());
        last = Math.max(last, Number(JSON.parse(r.body.toString()).metadata.resourceVersion));
      }
    const afterUpdate = await compareAll('updated', last);
    assert.equal(before, afterUpdate);
    assert.ok(before > 200, `${before} answers compared`);
  });

  test('watch-list and resumed watches, objects and metadata-only: the same frames', async () => {
    const accepts = [PB, metaAccept('PartialObjectMetadata', 'v1')];
    let compared = 0;
    for (const [kind, base] of Object.entries(kinds()))
      for (const accept of accepts) {
        const path = `${base}?watch=1&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=2`;
        const [a, d] = await Promise.all([via(path, accept), direct(path, accept)]);
        assert.equal(a.headers['audit-id'], undefined, `${kind} ${accept}: from the cache`);
        const added = (b: Buffer) => frames(b).filter((x) => typeOf(x) === 'ADDED');
        assert.equal(added(a.body).length, names[kind]!.length, `${kind} ${accept}`);
        assert.deepEqual(added(a.body), added(d.body), `${kind} ${accept}: the initial ADDED frames`);
        compared += added(a.body).length;
      }
    // Live events of kept messages replaced again: resumed from the RV before the writes.
    const list = await via(kinds().configmaps, PB);
    const from = rvOf(list);
    for (const name of names.configmaps!.slice(0, 6)) {
      const r = await direct(`${kinds().configmaps}/${name}`, 'application/json', {
        method: 'PATCH',
        body: { metadata: { annotations: { again: `x-${name}` } } },
      });
      assert.equal(r.status, 200, r.body.toString());
    }
    for (const accept of accepts) {
      const resume = `${kinds().configmaps}?watch=1&resourceVersion=${from}&timeoutSeconds=2`;
      const [ra, rd] = await Promise.all([via(resume, accept), direct(resume, accept)]);
      const events = (b: Buffer) => frames(b).filter((x) => typeOf(x) !== 'BOOKMARK');
      assert.equal(events(ra.body).length, 6, accept);
      assert.deepEqual(events(ra.body), events(rd.body), `${accept}: the resumed frames`);
      compared += 6;
    }
    assert.ok(compared > 100, `${compared} frames compared`);
  });
});
