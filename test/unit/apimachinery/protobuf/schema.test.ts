/**
 * The schema table's version check (src/apimachinery/protobuf/schema.ts `schemaMatches`): protobuf
 * answers only for an apiserver of the table's minor version.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SCHEMA_MINOR, SCHEMA_MODULES, schemaMatches } from '../../../../src/apimachinery/protobuf/schema.ts';

describe('schemaMatches', () => {
  it("the table's minor comes from k8s.io/api v0.N.x", () => {
    assert.equal(SCHEMA_MINOR, `1.${SCHEMA_MODULES['k8s.io/api']!.split('.')[1]}`);
    assert.match(SCHEMA_MINOR, /^1\.\d+$/);
  });
  it('the same major.minor matches, whatever the patch and suffix', () => {
    const [, minor] = SCHEMA_MINOR.split('.').map(Number);
    for (const v of [
      `v1.${minor}.0`,
      `v1.${minor}.2`,
      `v1.${minor}.2-gke.1100`,
      `v1.${minor}.0-rc.1+abc`,
      `1.${minor}.3`,
    ])
      assert.equal(schemaMatches(v), true, v);
    for (const v of [
      `v1.${minor! - 1}.9`,
      `v1.${minor! + 1}.0`,
      `v1.${minor}1.0`,
      `v2.${minor}.0`,
      'v',
      '',
      undefined,
    ])
      assert.equal(schemaMatches(v), false, String(v));
  });
});
