/** `printIngress` and `printIngressClass` (cases of printers_test.go `TestPrintIngress*`, v1.37.2); the e2e suite compares real objects with the apiserver. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { printIngress, printIngressClass } from '../../../src/printers/ingress.ts';

const NOW = Date.parse('2026-01-01T01:00:00Z');
const metadata = { name: 'x', creationTimestamp: '2026-01-01T00:00:00Z' };

describe('printIngress', () => {
  it('class, hosts (first 3 non-empty, + N more… counting every rule), sorted unique addresses, TLS ports', () => {
    const rules = [{ host: 'a' }, {}, { host: 'b' }, { host: 'c' }, { host: 'd' }];
    const o = {
      metadata,
      spec: { ingressClassName: 'nginx', rules, tls: [{}] },
      status: {
        loadBalancer: { ingress: [{ ip: '2.2.2.2' }, { hostname: 'h.example.com' }, { ip: '2.2.2.2' }] },
      },
    };
    assert.deepEqual(printIngress(o, NOW).cells, [
      'x',
      'nginx',
      'a,b,c + 2 more...',
      '2.2.2.2,h.example.com',
      '80, 443',
      '60m',
    ]);
  });
  it('no class, no rules: <none>, *, empty address, port 80', () => {
    assert.deepEqual(printIngress({ metadata, spec: {} }, NOW).cells, ['x', '<none>', '*', '', '80', '60m']);
  });
});

describe('printIngressClass', () => {
  it('the default annotation, parameters Kind.group/name or <none>', () => {
    const o = {
      metadata: { ...metadata, annotations: { 'ingressclass.kubernetes.io/is-default-class': 'true' } },
      spec: { controller: 'c', parameters: { kind: 'K', apiGroup: 'g.io', name: 'p' } },
    };
    assert.deepEqual(printIngressClass(o, NOW).cells, ['x (default)', 'c', 'K.g.io/p', '60m']);
    assert.deepEqual(printIngressClass({ metadata, spec: { controller: 'c' } }, NOW).cells, [
      'x',
      'c',
      '<none>',
      '60m',
    ]);
    assert.deepEqual(
      printIngressClass(
        { metadata, spec: { controller: 'c', parameters: { kind: 'ConfigMap', name: 'p' } } },
        NOW,
      ).cells[2],
      'ConfigMap/p',
    );
  });
});
