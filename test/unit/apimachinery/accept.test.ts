/**
 * Cases marked `attack:` are inputs found by attacking the proxy against a real apiserver
 * (v1.37.2) where the cache answered differently from the apiserver; each must now reach the
 * apiserver (or be accepted like it does).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  acceptAsksPretty,
  acceptsPlainJson,
  cacheForm,
  protobufForm,
  sortLikeGo,
} from '../../../src/apimachinery/accept.ts';

describe('acceptsPlainJson', () => {
  const cases: [string | undefined, boolean][] = [
    [undefined, true],
    ['', true],
    ['application/json', true],
    ['*/*', true],
    ['application/json, */*', true],
    [
      'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json',
      false,
    ],
    ['application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json', false],
    ['application/vnd.kubernetes.protobuf', false],
    // issue 13: protobuf-first clients allow plain JSON, answered from the cache as JSON.
    // Captured on the fixture: client-go rest.Config{ContentType: protobuf} (kube components,
    // controller-runtime typed clients of built-in kinds)…
    ['application/vnd.kubernetes.protobuf, */*', true],
    // …with AcceptContentTypes "application/vnd.kubernetes.protobuf,application/json"…
    ['application/vnd.kubernetes.protobuf,application/json', true],
    // …and client-go's metadata client: a PartialObjectMetadataList conversion, passed through.
    [
      'application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json',
      false,
    ],
    // Its WATCH (captured too): PartialObjectMetadata, not …List.
    [
      'application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json',
      false,
    ],
    // The apiserver drops a protobuf Table clause (Table is JSON/YAML only) and answers plain
    // JSON (checked on v1.37.2): the cache may too.
    ['application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1,application/json', true],
    ['application/vnd.kubernetes.protobuf,application/json;as=Table;g=meta.k8s.io;v=v1', false],
    ['application/vnd.kubernetes.protobuf,application/*', true],
    ['application/yaml,application/json', true],
    ['application/cbor,application/json;q=0', false],
    ['application/vnd.kubernetes.protobuf;q=0.5,application/json', true],
    ['application/cbor', false],
    ['application/yaml', false],
    ['text/html,application/json', true],
  ];
  for (const [h, want] of cases) it(String(h), () => assert.equal(acceptsPlainJson(h), want));
});

describe('attack: Accept media types are case-sensitive like the apiserver', () => {
  it('`APPLICATION/JSON`, `Application/json`, `*/JSON` are not plain JSON (apiserver: 406)', () => {
    assert.equal(acceptsPlainJson('APPLICATION/JSON'), false);
    assert.equal(acceptsPlainJson('Application/json'), false);
    assert.equal(acceptsPlainJson('application/JSON'), false);
    assert.equal(acceptsPlainJson('APPLICATION/*'), false);
    assert.equal(acceptsPlainJson('application/json'), true);
    // Parameter names stay case-insensitive (`Q=0` is q=0 there too).
    assert.equal(acceptsPlainJson('application/json;AS=Table;g=meta.k8s.io;v=v1'), false);
  });
});

describe('attack: clauses the apiserver answers 406 or otherwise (side by side on v1.37.2)', () => {
  // Each was served 200 from the cache while the apiserver answered 406 Not Acceptable.
  const notAcceptable = [
    'application',
    '*',
    '*/json',
    'text/plain, application',
    'application/json;v=v1',
    'application/json;g=meta.k8s.io',
    'application/json; v = v1',
    'application/json;as=Table',
    'application/json;stream=bogus',
    'application/yaml;stream=watch',
    'application/json/x',
  ];
  for (const h of notAcceptable) it(`${h}: upstream`, () => assert.equal(acceptsPlainJson(h), false));
  it('`pretty=1` on the chosen clause: the apiserver indents, and so does the cache (acceptAsksPretty)', () => {
    assert.equal(acceptsPlainJson('application/json;pretty=1'), true);
    assert.equal(acceptAsksPretty('application/json;pretty=1'), true);
    // Only `1` (acceptMediaTypeOptions: `v == "1"`).
    assert.equal(acceptsPlainJson('application/json;pretty=true'), true);
    assert.equal(acceptAsksPretty('application/json;pretty=true'), false);
    assert.equal(acceptAsksPretty('application/json'), false);
    assert.equal(acceptAsksPretty(undefined), false);
    assert.equal(acceptAsksPretty('*/*;pretty=1'), true, 'the JSON serializer takes */*');
    assert.equal(acceptAsksPretty('application/json;as=Table;g=meta.k8s.io;v=v1;pretty=1'), true);
    // A clause not picked, or picked for protobuf (no pretty protobuf serializer): not indented.
    assert.equal(acceptAsksPretty('application/json,application/json;pretty=1;q=0.5'), false);
    assert.equal(acceptAsksPretty('application/vnd.kubernetes.protobuf;pretty=1,application/json'), false);
    // A protobuf-first client's JSON clause with pretty=1 is no JSON stand-in for its protobuf answer.
    assert.equal(acceptsPlainJson('application/vnd.kubernetes.protobuf,application/json;pretty=1'), false);
    // goautoneg's `strings.Trim(v, " ")` keeps a tab: `1\t` is no `1` (compact on v1.37.2).
    assert.equal(acceptAsksPretty('application/json;pretty=1\t;q=1'), false);
    assert.equal(acceptAsksPretty('application/json;pretty=\t1'), false);
    assert.equal(acceptAsksPretty('application/json;  pretty=1  '), true);
  });
  it('names are case-sensitive and q is a Go float: `V=v1`, `Q=0` are unknown parameters', () => {
    assert.equal(acceptsPlainJson('application/json;V=v1'), true);
    assert.equal(acceptsPlainJson('application/json;Q=0'), true);
    // `q= 0.5` does not parse in Go (0): YAML (q=0.4) is chosen, the apiserver answers YAML.
    assert.equal(acceptsPlainJson('application/json;q= 0.5, application/yaml;q=0.4'), false);
  });
  it('a clause the apiserver drops does not decide: the next one does', () => {
    assert.equal(acceptsPlainJson('application/json;stream=bogus, application/json'), true);
    assert.equal(acceptsPlainJson('application/json;as=Bogus;g=meta.k8s.io;v=v1, application/json'), true);
  });
  it('a huge Accept header is still decided', () => {
    const h = Array.from({ length: 4000 }, (_, i) => `text/x;q=0.${String(i).padStart(4, '0')}`).join(',');
    assert.equal(acceptsPlainJson(`${h},application/json`), true);
    assert.equal(acceptsPlainJson(`${h},application/json;q=0`), false);
  });
  // Timing of the whole header: bench/tools/hot-paths.ts.
  it('no quadratic sort past 12 clauses: O(n log n) comparisons, counted', () => {
    const n = 4000;
    // Ascending q: the order where an insertion sort moves every clause to the front (n²/2 = 8M).
    const cases = [
      Array.from({ length: n }, (_, i) => i),
      Array.from({ length: n }, (_, i) => (i * 7919) % n),
    ];
    let calls = 0;
    const counted = (a: number, b: number) => {
      calls++;
      return a > b;
    };
    for (const xs of cases) {
      calls = 0;
      const sorted = sortLikeGo([...xs], counted);
      assert.deepEqual(
        sorted,
        [...xs].sort((a, b) => b - a),
      );
      assert.ok(calls <= 2 * n * Math.ceil(Math.log2(n)), `${calls} comparisons for ${n} clauses`);
    }
    // Up to 12, Go's insertion sort, comparisons and all: 12 ascending clauses make 66.
    calls = 0;
    sortLikeGo(
      Array.from({ length: 12 }, (_, i) => i),
      counted,
    );
    assert.equal(calls, 66);
  });
});

describe('cacheForm (issue 15: PartialObjectMetadata from the cache)', () => {
  const meta = (kind: string, version = 'v1') => ({ form: 'metadata', kind, version });
  const cases: [string | undefined, unknown][] = [
    [undefined, { form: 'plain' }],
    ['application/json', { form: 'plain' }],
    // client-go k8s.io/client-go/metadata (metadata.go) List, used by controller-runtime's
    // metadata client and cache (pkg/cache/internal/informers.go): protobuf first.
    [
      'application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json',
      meta('PartialObjectMetadataList'),
    ],
    // Its Get and Watch.
    [
      'application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json',
      meta('PartialObjectMetadata'),
    ],
    ['application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1', meta('PartialObjectMetadataList')],
    [
      'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1',
      meta('PartialObjectMetadata', 'v1beta1'),
    ],
    // The apiserver would answer protobuf metadata; no JSON clause asks for the same conversion.
    ['application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1', undefined],
    [
      'application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json',
      undefined,
    ],
    [
      'application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1',
      undefined,
    ],
    // Indented: the same form (acceptAsksPretty indents it); YAML, unknown group/version: upstream.
    [
      'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1;pretty=1',
      { form: 'metadata', kind: 'PartialObjectMetadata', version: 'v1' },
    ],
    // Table: JSON (kubectl get), v1 or v1beta1, indented too; YAML and protobuf-only Tables upstream.
    ['application/json;as=Table;g=meta.k8s.io;v=v1,application/json', { form: 'table', version: 'v1' }],
    [
      'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json',
      { form: 'table', version: 'v1' },
    ],
    ['application/json;as=Table;g=meta.k8s.io;v=v1beta1', { form: 'table', version: 'v1beta1' }],
    ['*/*;as=Table;g=meta.k8s.io;v=v1', { form: 'table', version: 'v1' }],
    ['application/yaml;as=Table;g=meta.k8s.io;v=v1,application/json', undefined],
    ['application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1', undefined],
    // The apiserver skips a protobuf Table clause (Table is JSON/YAML only) and takes the next.
    ['application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1,application/json', { form: 'plain' }],
    ['application/json;as=Table;g=meta.k8s.io;v=v1;pretty=1', { form: 'table', version: 'v1' }],
    ['application/json;as=Table;g=meta.k8s.io;v=v2', undefined],
    ['application/yaml;as=PartialObjectMetadata;g=meta.k8s.io;v=v1', undefined],
    ['application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v2,application/json', { form: 'plain' }],
    // q=0 refuses the JSON metadata clause.
    [
      'application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1;q=0',
      undefined,
    ],
  ];
  for (const [accept, want] of cases) {
    it(`${accept ?? '(none)'} → ${JSON.stringify(want)}`, () => {
      assert.deepEqual(cacheForm(accept), want);
    });
  }
});

describe('protobufForm (issue 32): the apiserver would answer protobuf', () => {
  const META_LIST = 'as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';
  const cases: [string | undefined, unknown][] = [
    [undefined, undefined],
    ['application/json', undefined],
    ['application/json, application/vnd.kubernetes.protobuf', undefined],
    ['application/vnd.kubernetes.protobuf', { form: 'plain' }],
    ['application/vnd.kubernetes.protobuf, */*', { form: 'plain' }],
    ['application/vnd.kubernetes.protobuf,application/json', { form: 'plain' }],
    ['application/vnd.kubernetes.protobuf;q=0.5,application/json', undefined],
    ['application/vnd.kubernetes.protobuf;stream=watch', { form: 'plain' }],
    // The protobuf serializer has no pretty form: the same bytes (test/e2e/pretty-answers.test.ts).
    ['application/vnd.kubernetes.protobuf;pretty=1', { form: 'plain' }],
    // client-go's metadata client: protobuf PartialObjectMetadataList.
    [
      `application/vnd.kubernetes.protobuf;${META_LIST},application/json;${META_LIST},application/json`,
      { form: 'metadata', kind: 'PartialObjectMetadataList', version: 'v1' },
    ],
    // Table is JSON/YAML only: the protobuf clause is dropped, the next one picked.
    ['application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1,application/json', undefined],
    ['*/*', undefined],
  ];
  for (const [h, want] of cases) it(String(h), () => assert.deepEqual(protobufForm(h), want));

  it('CBOR picked first goes upstream, even when JSON is accepted too', () => {
    assert.equal(cacheForm('application/cbor, application/json'), undefined);
    assert.equal(cacheForm('application/cbor;q=0.9, application/json;q=0.8'), undefined);
    assert.deepEqual(cacheForm('application/json, application/cbor'), { form: 'plain' });
  });
});

describe('attack: `application/*` (side by side on v1.37.2)', () => {
  // Built-in kinds (namespaces, deployments, CRDs, a configmaps watch): the apiserver answers
  // `application/*` 406 — with `as=Table` or `as=PartialObjectMetadataList` too — while the cache
  // answered 200 from the cache. Custom resources: the apiserver takes it (JSON, Table, metadata).
  // The cache cannot tell them apart here: a chosen `type/*` clause goes upstream.
  for (const h of [
    'application/*',
    'application/*;as=Table;v=v1;g=meta.k8s.io',
    'application/*;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io',
    'application/*;stream=watch',
  ])
    it(`${h}: upstream`, () => {
      assert.equal(cacheForm(h), undefined);
      assert.equal(protobufForm(h), undefined);
    });
  it('a specific clause sorts first (goautoneg `Less` puts it before a wildcard whatever its q): it decides', () => {
    // Both kinds of resource answered JSON (built-ins) and a Table (custom resources) here.
    assert.deepEqual(cacheForm('application/*;q=0.9,application/json;q=0.1'), { form: 'plain' });
    assert.deepEqual(cacheForm('application/*;q=0.9,application/json;as=Table;v=v1;g=meta.k8s.io;q=0.5'), {
      form: 'table',
      version: 'v1',
    });
  });
});

describe('one Accept read several times (the last header parsed is remembered)', () => {
  it('the same header again gives the same answers; another header in between is read afresh', () => {
    const pb = 'application/vnd.kubernetes.protobuf, */*';
    const meta =
      'application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';
    const table = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json';
    for (let i = 0; i < 3; i++) {
      assert.deepEqual(protobufForm(pb), { form: 'plain' });
      assert.deepEqual(cacheForm(pb), { form: 'plain' });
      assert.deepEqual(protobufForm(meta), {
        form: 'metadata',
        kind: 'PartialObjectMetadataList',
        version: 'v1',
      });
      assert.deepEqual(cacheForm(meta), {
        form: 'metadata',
        kind: 'PartialObjectMetadataList',
        version: 'v1',
      });
      assert.equal(protobufForm(table), undefined);
      assert.deepEqual(cacheForm(table), { form: 'table', version: 'v1' });
      // An equal header in a new string (as each request brings) reads the same.
      assert.deepEqual(cacheForm(`${table}`.slice(0)), { form: 'table', version: 'v1' });
      assert.equal(cacheForm('application/yaml'), undefined);
    }
  });
});
