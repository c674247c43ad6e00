/**
 * Issue 32, ingresses and ingress classes (`src/printers/ingress.ts`: `printIngress`,
 * `printIngressClass`), side by side with the fixture apiserver
 * (`test/support/table-side-by-side.ts`).
 */
import { type TableKind, tableSuite } from '../support/table-side-by-side.ts';

const KINDS: TableKind[] = [
  ['ns:/apis/networking.k8s.io/v1/ingresses', 'ingresses.networking.k8s.io'],
  ['/apis/networking.k8s.io/v1/ingressclasses', 'ingressclasses.networking.k8s.io'],
];

tableSuite('issue 32: Table answers of ingresses and ingress classes equal the apiserver', KINDS, {
  async setup(s) {
    const { create, status, meta, ns, run } = s;
    const net = `/apis/networking.k8s.io/v1`;
    await create(`${net}/namespaces/${ns}/ingresses`, {
      metadata: meta('ing-a'),
      spec: {
        ingressClassName: 'nginx',
        tls: [{ hosts: ['a.example.com'], secretName: 'sec-tls' }],
        rules: [
          { host: 'a.example.com' },
          { host: 'b.example.com' },
          {},
          { host: 'c.example.com' },
          { host: 'd.example.com' },
        ],
      },
    });
    await status(`${net}/namespaces/${ns}/ingresses/ing-a`, {
      loadBalancer: {
        ingress: [
          { ip: '10.9.9.9' },
          { hostname: 'a-very-long-load-balancer.example.com' },
          { ip: '10.1.1.1' },
        ],
      },
    });
    await create(`${net}/namespaces/${ns}/ingresses`, {
      metadata: meta('ing-b'),
      spec: { defaultBackend: { service: { name: 'svc-ip', port: { number: 80 } } } },
    });
    await create(`${net}/ingressclasses`, {
      metadata: meta(`${run}-ic-a`, {
        annotations: { 'ingressclass.kubernetes.io/is-default-class': 'true' },
      }),
      spec: {
        controller: 'example.com/ingress',
        parameters: { kind: 'Params', apiGroup: 'example.com', name: 'p', scope: 'Cluster' },
      },
    });
    await create(`${net}/ingressclasses`, {
      metadata: meta(`${run}-ic-b`),
      spec: {
        controller: 'example.com/other',
        parameters: { kind: 'ConfigMap', name: 'cm-a', scope: 'Namespace', namespace: ns },
      },
    });
  },
  async cleanup(s) {
    for (const n of ['ic-a', 'ic-b'])
      await s.f.kubectl(['delete', 'ingressclass', `${s.run}-${n}`, '--wait=false']);
  },
});
