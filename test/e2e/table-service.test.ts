/**
 * Issue 32, services (`src/printers/service.ts`, `printService`), side by side with the fixture
 * apiserver (`test/support/table-side-by-side.ts`): each Service type, external IPs, a load
 * balancer's ingress, a headless one.
 */
import { type TableKind, tableSuite } from '../support/table-side-by-side.ts';

const KINDS: TableKind[] = [['ns:/api/v1/services', 'services']];

tableSuite('issue 32: Table answers of services (printService) equal the apiserver', KINDS, {
  async setup(s) {
    const { create, status, meta, ns } = s;
    const P = `/api/v1/namespaces/${ns}`;
    await create(`${P}/services`, {
      metadata: meta('svc-ip'),
      spec: {
        selector: { app: 'web', tier: 'fe' },
        ports: [
          { port: 80, name: 'http' },
          { port: 53, protocol: 'UDP', name: 'dns' },
        ],
      },
    });
    await create(`${P}/services`, {
      metadata: meta('svc-np'),
      spec: { type: 'NodePort', externalIPs: ['5.6.7.8'], ports: [{ port: 443 }] },
    });
    await create(`${P}/services`, {
      metadata: meta('svc-lb'),
      spec: { type: 'LoadBalancer', ports: [{ port: 8080 }] },
    });
    await status(`${P}/services/svc-lb`, {
      loadBalancer: { ingress: [{ ip: '9.9.9.9' }, { hostname: 'lb.example.com' }, { ip: '9.9.9.1' }] },
    });
    await create(`${P}/services`, {
      metadata: meta('svc-en'),
      spec: { type: 'ExternalName', externalName: 'db.example.com' },
    });
    await create(`${P}/services`, {
      metadata: meta('svc-none'),
      spec: { clusterIP: 'None', selector: { app: 'x' } },
    });
  },
});
