/**
 * Issue 32, the convertors that are not pkg/printers ports (`src/printers/convertors.ts`): the
 * apiserver's default one (roles, clusterroles: NAME and CREATED AT) and the
 * CustomResourceDefinition one, side by side with the fixture apiserver
 * (`test/support/table-side-by-side.ts`).
 */
import { type TableKind, tableSuite } from '../support/table-side-by-side.ts';

const KINDS: TableKind[] = [
  ['ns:/apis/rbac.authorization.k8s.io/v1/roles', 'roles.rbac.authorization.k8s.io'],
  ['/apis/rbac.authorization.k8s.io/v1/clusterroles', 'clusterroles.rbac.authorization.k8s.io'],
  [
    '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
    'customresourcedefinitions.apiextensions.k8s.io',
  ],
];

tableSuite('issue 32: Table answers of the default and CRD convertors equal the apiserver', KINDS, {
  async setup(s) {
    const { create, meta, ns, run } = s;
    const rbac = '/apis/rbac.authorization.k8s.io/v1';
    const rules = [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }];
    await create(`${rbac}/namespaces/${ns}/roles`, { metadata: meta('role-a'), rules });
    await create(`${rbac}/clusterroles`, { metadata: meta(`${run}-cr`), rules });
    const group = `${run}.example.com`;
    const schema = { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } };
    await create('/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {
      metadata: meta(`gadgets.${group}`),
      spec: {
        group,
        names: { plural: 'gadgets', kind: 'Gadget', shortNames: ['gd', 'gdg'] },
        scope: 'Namespaced',
        versions: [
          { name: 'v1', served: true, storage: true, schema },
          { name: 'v1beta1', served: true, storage: false, schema },
          { name: 'v1alpha1', served: false, storage: false, schema },
        ],
      },
    });
  },
  async cleanup(s) {
    await s.f.kubectl(['delete', 'clusterrole', `${s.run}-cr`, '--wait=false']);
    await s.f.kubectl(['delete', 'crd', `gadgets.${s.run}.example.com`, '--wait=false']);
  },
});
