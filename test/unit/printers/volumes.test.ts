/** `printPersistentVolume` and `printPersistentVolumeClaim` (printers_test.go `TestPrintPersistentVolume*`, v1.37.2). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { printPersistentVolume, printPersistentVolumeClaim } from '../../../src/printers/volumes.ts';

const NOW = Date.parse('2026-01-01T01:00:00Z');
const metadata = { name: 'x', creationTimestamp: '2026-01-01T00:00:00Z' };

describe('printPersistentVolume', () => {
  it('capacity, access modes in RWO,ROX,RWX,RWOP order once each, claim, class, reason, wide volume mode', () => {
    const o = {
      metadata,
      spec: {
        capacity: { storage: '5Gi' },
        accessModes: ['ReadWriteOncePod', 'ReadWriteOnce', 'ReadWriteOnce', 'ReadOnlyMany'],
        persistentVolumeReclaimPolicy: 'Retain',
        claimRef: { namespace: 'ns', name: 'c' },
        storageClassName: 'fast',
        volumeAttributesClassName: 'gold',
        volumeMode: 'Block',
      },
      status: { phase: 'Bound', reason: 'r' },
    };
    assert.deepEqual(printPersistentVolume(o, NOW).cells, [
      'x',
      '5Gi',
      'RWO,ROX,RWOP',
      'Retain',
      'Bound',
      'ns/c',
      'fast',
      'gold',
      'r',
      '60m',
      'Block',
    ]);
  });
  it('terminating, no capacity (0), the beta class annotation first, <unset>s', () => {
    const o = {
      metadata: {
        ...metadata,
        deletionTimestamp: '2026-01-01T00:30:00Z',
        annotations: { 'volume.beta.kubernetes.io/storage-class': 'old' },
      },
      spec: { storageClassName: 'new' },
      status: { phase: 'Available' },
    };
    assert.deepEqual(printPersistentVolume(o, NOW).cells, [
      'x',
      '0',
      '',
      '',
      'Terminating',
      '',
      'old',
      '<unset>',
      '',
      '60m',
      '<unset>',
    ]);
  });
});

describe('printPersistentVolumeClaim', () => {
  it('bound: the status capacity and access modes; unbound: empty', () => {
    const bound = {
      metadata,
      spec: { volumeName: 'pv', storageClassName: 'fast', resources: { requests: { storage: '1Gi' } } },
      status: { phase: 'Bound', capacity: { storage: '5Gi' }, accessModes: ['ReadWriteMany'] },
    };
    assert.deepEqual(printPersistentVolumeClaim(bound, NOW).cells, [
      'x',
      'Bound',
      'pv',
      '5Gi',
      'RWX',
      'fast',
      '<unset>',
      '60m',
      '<unset>',
    ]);
    const pending = { metadata, spec: { volumeMode: 'Filesystem' }, status: { phase: 'Pending' } };
    assert.deepEqual(printPersistentVolumeClaim(pending, NOW).cells, [
      'x',
      'Pending',
      '',
      '',
      '',
      '',
      '<unset>',
      '60m',
      'Filesystem',
    ]);
  });
});
