/**
 * The Helm chart (deploy/helm/kube-cache-proxy) against the kustomizations and the fixture
 * apiserver: for each mode, `helm template` renders the same objects as `kubectl kustomize` of
 * the kustomization it stands for (with `namespace:` and `namePrefix: RELEASE-`), but for the
 * labels Helm adds, so the two cannot drift; the rendering passes `kubectl apply
 * --dry-run=server`; `helm lint` passes; the RBAC follows the cache list it is given. helm is
 * built from its Go module (test/helm/build.sh, through `test/apiserver/build.sh --helm`).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, stringify } from 'yaml';
import { runBuildScript } from '../fixture/fixture.ts';
import { type Fixture, sharedFixture } from '../fixture/index.ts';
import { cacheRbacRules, SNAPSHOT_IDENTITY_RULE } from '../support/rbac-rules.ts';

const deployDir = fileURLToPath(new URL('../../deploy/', import.meta.url));
const chart = join(deployDir, 'helm', 'kube-cache-proxy');

// biome-ignore lint/suspicious/noExplicitAny: rendered Kubernetes objects are compared whole.
type Obj = any;

/** The labels Helm's chart adds to every object's metadata (the kustomizations have none of them). */
const HELM_LABELS = [
  'helm.sh/chart',
  'app.kubernetes.io/managed-by',
  'app.kubernetes.io/instance',
  'app.kubernetes.io/version',
];

/** Each mode and the kustomization it renders the objects of. */
const MODES: Array<{ name: string; set: string[]; kustomization: string }> = [
  { name: 'sidecar', set: [], kustomization: 'base' },
  { name: 'sidecar, namespaced', set: ['sidecar.namespaced=true'], kustomization: 'overlays/namespaced' },
  { name: 'node-local', set: ['mode=node-local'], kustomization: 'overlays/node-local' },
  { name: 'pool', set: ['mode=pool'], kustomization: 'overlays/pool' },
];

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(cmd: string, args: string[]): Promise<Run> {
  return new Promise((resolve) =>
    execFile(cmd, args, { timeout: 120_000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    ),
  );
}

/** The objects of a multi-document YAML stream, empty documents left out. */
function objectsOf(yaml: string): Obj[] {
  return parseAllDocuments(yaml)
    .map((d) => d.toJS())
    .filter((o) => o !== null && o !== undefined);
}

/** `Kind/name` of each object, sorted. */
const names = (objs: Obj[]) => objs.map((o) => `${o.kind}/${o.metadata.name}`).sort();

/** The objects without Helm's labels, sorted by kind and name. */
function withoutHelmLabels(objs: Obj[]): Obj[] {
  return structuredClone(objs)
    .map((o: Obj) => {
      for (const l of HELM_LABELS) delete o.metadata.labels?.[l];
      return o;
    })
    .sort((a: Obj, b: Obj) => (`${a.kind}/${a.metadata.name}` < `${b.kind}/${b.metadata.name}` ? -1 : 1));
}

describe('deploy/helm/kube-cache-proxy: the kustomizations as a Helm chart', { timeout: 900_000 }, () => {
  let f: Fixture;
  let helmBin: string;
  const tmp = mkdtempSync(join(tmpdir(), 'kcp-helm-'));

  before(async () => {
    f = await sharedFixture();
    helmBin = join(await runBuildScript(['--helm']), 'helm');
  });
  after(() => rmSync(tmp, { recursive: true, force: true }));

  const helm = (args: string[]) => run(helmBin, args);

  /** `helm template RELEASE chart -n NAMESPACE --set …`: the objects; fails the test on an error. */
  async function template(release: string, namespace: string, set: string[], extra: string[] = []) {
    const r = await helm([
      'template',
      release,
      chart,
      '--namespace',
      namespace,
      ...set.flatMap((s) => ['--set', s]),
      ...extra,
    ]);
    assert.equal(r.code, 0, r.stderr);
    return { yaml: r.stdout, objects: objectsOf(r.stdout) };
  }

  /** `kubectl kustomize` of deploy/DIR with `namespace:` and `namePrefix: PREFIX`, as deploy.test.ts renders it. */
  async function kustomize(dir: string, namespace: string, prefix: string): Promise<Obj[]> {
    const wrap = mkdtempSync(join(tmp, 'wrap-'));
    writeFileSync(
      join(wrap, 'kustomization.yaml'),
      stringify({ namespace, namePrefix: prefix, resources: [relative(wrap, join(deployDir, dir))] }),
    );
    const r = await f.kubectl(['kustomize', wrap]);
    assert.equal(r.code, 0, r.stderr);
    return objectsOf(r.stdout);
  }

  for (const mode of MODES) {
    it(`${mode.name}: helm template equals kubectl kustomize deploy/${mode.kustomization}, but for Helm's labels`, async () => {
      const namespace = await f.newNamespace('helm');
      const release = namespace;
      const fromHelm = await template(release, namespace, mode.set);
      const fromKustomize = await kustomize(mode.kustomization, namespace, `${release}-`);
      assert.deepEqual(names(fromHelm.objects), names(fromKustomize));
      for (const o of fromHelm.objects)
        assert.deepEqual(
          HELM_LABELS.map((l) => typeof o.metadata.labels?.[l]),
          ['string', 'string', 'string', 'string'],
          `${o.kind}/${o.metadata.name} has Helm's labels`,
        );
      assert.deepEqual(withoutHelmLabels(fromHelm.objects), withoutHelmLabels(fromKustomize));
    });

    it(`${mode.name}: the rendering passes a server-side dry-run`, async () => {
      const namespace = await f.newNamespace('helm');
      const { yaml, objects } = await template(namespace, namespace, mode.set);
      const r = await f.kubectl(['apply', '--dry-run=server', '-f', '-'], { input: yaml });
      assert.equal(r.code, 0, r.stderr);
      const lines = r.stdout.trim().split('\n');
      assert.equal(lines.length, objects.length, r.stdout);
      for (const l of lines) assert.match(l, / created \(server dry run\)$/);
    });
  }

  it('node-local: the kube-system get (the snapshot identity) only with nodeLocal.snapshot.enabled', async () => {
    const rules = async (set: string[]) =>
      (await template('r1', 'ns1', ['mode=node-local', ...set])).objects.find((o) => o.kind === 'ClusterRole')
        .rules;
    const on = await rules([]);
    assert.deepEqual(on.at(-1), SNAPSHOT_IDENTITY_RULE);
    const off = await rules(['nodeLocal.snapshot.enabled=false']);
    assert.deepEqual(off, on.slice(0, -1));
    assert.ok(!JSON.stringify(off).includes('namespaces'));
  });

  it('helm lint passes in every mode', async () => {
    for (const set of [[], ['sidecar.namespaced=true'], ['mode=node-local'], ['mode=pool']]) {
      const r = await helm(['lint', chart, ...set.flatMap((s) => ['--set', s])]);
      assert.equal(r.code, 0, `${set.join(' ')}: ${r.stdout}${r.stderr}`);
      assert.match(r.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
    }
  });

  it('the RBAC follows the cache list: list/watch per group, a scope dropped; an unknown mode fails', async () => {
    const values = join(tmp, 'values.yaml');
    const cache = [
      'secrets',
      'pods[fieldSelector=spec.nodeName=n1]',
      'deployments.apps',
      'leases.coordination.k8s.io',
    ];
    writeFileSync(
      values,
      stringify({ sidecar: { cache, controller: { name: 'ctl', image: 'example/ctl:1', args: ['--v=2'] } } }),
    );
    const { objects } = await template('r1', 'ns1', [], ['-f', values]);
    const deployment = objects.find((o) => o.kind === 'Deployment');
    const sidecar = deployment.spec.template.spec.initContainers[0];
    const resourcesArg = `${cache.join(',')}`;
    assert.equal(sidecar.args[0], `--resources=${resourcesArg}`);
    assert.equal(sidecar.image, 'kube-cache-proxy:0.1.0');
    assert.deepEqual(objects.find((o) => o.kind === 'ClusterRole').rules, cacheRbacRules(resourcesArg));
    assert.deepEqual(objects.find((o) => o.kind === 'ClusterRole').rules, [
      { apiGroups: [''], resources: ['pods', 'secrets'], verbs: ['list', 'watch'] },
      { apiGroups: ['apps'], resources: ['deployments'], verbs: ['list', 'watch'] },
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['list', 'watch'] },
    ]);
    const controller = deployment.spec.template.spec.containers[0];
    assert.deepEqual(
      { name: controller.name, image: controller.image, args: controller.args },
      { name: 'ctl', image: 'example/ctl:1', args: ['--v=2'] },
    );
    assert.equal(deployment.metadata.name, 'r1-ctl');
    // deploy/README.md says so (user trial: it said "named like the controller").
    assert.equal(objects.find((o) => o.kind === 'ServiceAccount').metadata.name, 'r1-ctl');
    assert.equal(deployment.spec.template.spec.serviceAccountName, 'r1-ctl');
    // deploy/README.md's Helm note on step 4 of the node-local cache: the chart's kubeconfig
    // ConfigMap carries the release prefix, the Secret it mounts does not.
    const nodeLocal = (await template('kcp-node', 'kube-system', ['mode=node-local'])).objects;
    assert.deepEqual(
      nodeLocal.filter((o) => o.kind === 'ConfigMap').map((o) => o.metadata.name),
      ['kcp-node-kube-cache-proxy-node-local-kubeconfig'],
    );
    const ds = nodeLocal.find((o) => o.kind === 'DaemonSet');
    assert.deepEqual(
      ds.spec.template.spec.volumes.filter((v: Obj) => v.secret).map((v: Obj) => v.secret.secretName),
      ['kube-cache-proxy-node-local-tls'],
    );

    const bad = await helm(['template', 'r1', chart, '--set', 'mode=sidecars']);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /mode: "sidecars" is not one of sidecar, node-local, pool/);
  });
});
