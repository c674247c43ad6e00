/**
 * Cases marked `attack:` are inputs found by attacking the proxy against a real apiserver
 * (v1.37.2) where the cache answered differently from the apiserver; each must now reach the
 * apiserver (or be accepted like it does).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { acceptsPlainJson } from '../../../src/apimachinery/accept.ts';

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
    ['application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1,application/json', false],
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
