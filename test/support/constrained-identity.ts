/**
 * A proxy identity with the RBAC that deploy/ ships for the authenticated mode, instead of
 * cluster-admin: a ServiceAccount bound to the base ClusterRole (list/watch of the cached
 * resources), `system:auth-delegator` (TokenReview, SubjectAccessReview) and the constrained
 * impersonation ClusterRole of deploy/overlays/authenticated (KEP-5284), its `impersonate-on:`
 * rules widened to the resources and verbs a test forwards — as that file's comment tells
 * operators to do for the uncached resources their x509 clients use.
 *
 * Why not cluster-admin: to test what deploy/ ships, constrained impersonation alone (a proxy that
 * may also use the legacy `impersonate` verb is covered by identity-impersonation-mode.test.ts).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { type Fixture, writeKubeconfig } from '../fixture/index.ts';

const deploy = fileURLToPath(new URL('../../deploy/', import.meta.url));

interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

const MODES = ['user-info', 'arbitrary-node'] as const;
const VERBS = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'];

/** The shipped impersonation rules with `impersonate-on:` rules for core `resources`, every verb, both modes. */
export function widenedImpersonationRules(resources: string[]): Rule[] {
  const shipped = parse(
    readFileSync(join(deploy, 'overlays/authenticated/impersonation-clusterrole.yaml'), 'utf8'),
  ) as { rules: Rule[] };
  const who = shipped.rules.filter((r) => r.apiGroups.includes('authentication.k8s.io'));
  return [
    ...who,
    { apiGroups: [''], resources, verbs: MODES.flatMap((m) => VERBS.map((v) => `impersonate-on:${m}:${v}`)) },
  ];
}

/**
 * Creates ServiceAccount `name` in `kcp-system` with the RBAC above (cluster-scoped objects named
 * `name`), a token and a kubeconfig for it; returns the kubeconfig path and a cleanup.
 * Throws with kubectl's stderr on failure.
 */
export async function constrainedProxyIdentity(
  f: Fixture,
  name: string,
  o: { cached: string[]; forwarded: string[] },
): Promise<{ kubeconfig: string; cleanup(): Promise<void> }> {
  const crb = (suffix: string, role: string) => ({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: `${name}-${suffix}` },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
    subjects: [{ kind: 'ServiceAccount', name, namespace: 'kcp-system' }],
  });
  const items = [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: 'kcp-system' } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: `${name}-cache` },
      rules: [{ apiGroups: [''], resources: o.cached, verbs: ['list', 'watch'] }],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: `${name}-impersonate` },
      rules: widenedImpersonationRules(o.forwarded),
    },
    crb('cache', `${name}-cache`),
    crb('impersonate', `${name}-impersonate`),
    crb('auth-delegator', 'system:auth-delegator'),
  ];
  const r = await f.kubectl(['apply', '-f', '-'], {
    input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items }),
  });
  if (r.code !== 0) throw new Error(`constrained proxy identity: ${r.stderr}`);
  const t = await f.kubectl(['create', 'token', name, '-n', 'kcp-system', '--duration=2h']);
  if (t.code !== 0) throw new Error(`constrained proxy identity token: ${t.stderr}`);
  const kubeconfig = await writeKubeconfig(join(f.dir, `${name}.kubeconfig`), {
    server: f.server,
    caFile: f.caFile,
    user: { token: t.stdout.trim() },
  });
  return {
    kubeconfig,
    async cleanup() {
      await f.kubectl(['delete', '-f', '-', '--ignore-not-found'], {
        input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items }),
      });
    },
  };
}
