/**
 * A Secret's kept protobuf message never enters the process's dictionary of own bytes
 * (apimachinery/protobuf/spliced.ts): the dictionary lives as long as the process, so the first
 * Secret's data would stay in memory and heap dumps after the Secret is deleted (found in issue
 * 32's attack round). A ConfigMap of the same shape does enter it (the control: this file runs in
 * a process of its own, so each type's first kept message here is these).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import type { KubeObject, UpstreamObject } from '../../../src/apimachinery/object.ts';
import { dictionaryBytes } from '../../../src/apimachinery/protobuf/spliced.ts';
import { protobufGet } from '../../../src/server/protobuf-answers.ts';
import { resourceInfo } from '../../support/resource-info.ts';
import { newCache } from '../../support/watch-cache-fixtures.ts';

const SECRETS = resourceInfo('v1', 'secrets', 'Secret');
const CONFIGMAPS = resourceInfo('v1', 'configmaps', 'ConfigMap');

/** An object of `kind` named `name` whose `data.k` holds `value` (base64 for a Secret). */
function objectOf(kind: 'Secret' | 'ConfigMap', name: string, value: string): UpstreamObject {
  const object = {
    kind,
    apiVersion: 'v1',
    metadata: { name, namespace: 'a', uid: `u-${name}`, resourceVersion: '5', labels: { team: 'payments' } },
    data: { k: value },
    ...(kind === 'Secret' && { type: 'Opaque' }),
  };
  return { raw: Buffer.from(JSON.stringify(object)), object: object as KubeObject };
}

describe('the kept-message dictionary and Secrets', () => {
  it("a Secret's data and name never enter it; a ConfigMap's do", () => {
    const secretValue = randomBytes(40);
    const secretName = `s-${randomBytes(8).toString('hex')}`;
    const secrets = newCache({ resource: SECRETS }).cache;
    secrets.replace([objectOf('Secret', secretName, secretValue.toString('base64'))], '10');
    const secret = secrets.get('a', secretName)!;
    // Kept in both slots (object and PartialObjectMetadata), as a protobuf client's reads keep it.
    const got = protobufGet(SECRETS, secret.wire, undefined, secret);
    protobufGet(SECRETS, secret.wire, 'v1', secret);
    assert.ok(got.includes(secretValue), 'the answer carries the data');
    assert.ok(got.equals(protobufGet(SECRETS, secret.wire)), 'the same bytes as a fresh encode');
    assert.equal(dictionaryBytes().includes(secretValue), false, 'the data is not in the dictionary');
    assert.equal(dictionaryBytes().includes(Buffer.from(secretName)), false, 'nor its name');

    const cmValue = `v-${randomBytes(20).toString('hex')}`;
    const cmName = `c-${randomBytes(8).toString('hex')}`;
    const configMaps = newCache({ resource: CONFIGMAPS }).cache;
    configMaps.replace([objectOf('ConfigMap', cmName, cmValue)], '10');
    const cm = configMaps.get('a', cmName)!;
    protobufGet(CONFIGMAPS, cm.wire, undefined, cm);
    assert.ok(dictionaryBytes().includes(Buffer.from(cmValue)), "the control: a ConfigMap's data is");
  });
});
