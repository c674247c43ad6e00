/**
 * Issue 32: the protobuf encoder (src/apimachinery/protobuf/) byte for byte against the real
 * apiserver. Every listable resource discovery serves (built-in and aggregated, every served
 * version) is LISTed twice at one resourceVersion (`resourceVersionMatch=Exact`): in JSON, which
 * the encoder turns into protobuf, and in protobuf; the two answers must be equal bytes, the
 * envelope, the ListMeta and every item. Up to three objects per resource are also compared as GET
 * answers. Objects of many kinds are created first, plus a seeded fuzz of unusual ones (empty vs
 * absent maps and slices, huge and odd quantities, non-ASCII and astral-plane map keys — Go sorts
 * keys by UTF-8 bytes, not UTF-16 —, int64 beyond 2^53, zero and microsecond times), so the lists
 * hold more than the apiserver's own objects. The table the test prints says per resource:
 * equal / declined (the encoder's named reason) / differs. A decline is allowed only where the
 * bytes are not recoverable from JSON (raw JSON: ControllerRevision `data`, CRD schemas) or the
 * kind has no protobuf form (custom resources: the apiserver answers 406 too).
 *
 * KCP_PROTOBUF_SEED picks the fuzz seed (default 32).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Agent, request } from 'undici';
import { CannotEncode, parseGoJSON } from '../../src/apimachinery/protobuf/encode-object.ts';
import {
  encodeParsed,
  listRaw,
  objectAnswer,
  unknownEnvelope,
} from '../../src/apimachinery/protobuf/envelope.ts';
import { kindSpec } from '../../src/apimachinery/protobuf/schema.ts';
import { type Fixture, sharedFixture } from '../fixture/index.ts';
import { eventually } from '../support/eventually.ts';
import { prng } from '../support/prng.ts';

const PB = 'application/vnd.kubernetes.protobuf';
const SEED = Number(process.env.KCP_PROTOBUF_SEED ?? 32);
const root = join(fileURLToPath(import.meta.url), '../../..');

interface Resource {
  path: string;
  groupVersion: string;
  kind: string;
  namespaced: boolean;
}

/** Splits a protobuf message into its top-level fields (length-delimited ones only). */
function fields(b: Buffer): { num: number; bytes: Buffer }[] {
  const out: { num: number; bytes: Buffer }[] = [];
  let pos = 0;
  const varint = () => {
    let v = 0;
    let mul = 1;
    for (;;) {
      const byte = b[pos++]!;
      v += (byte & 0x7f) * mul;
      mul *= 128;
      if ((byte & 0x80) === 0) return v;
    }
  };
  while (pos < b.length) {
    const key = varint();
    assert.equal(key % 8, 2, 'only length-delimited fields at the top of an envelope/list');
    const len = varint();
    out.push({ num: Math.floor(key / 8), bytes: b.subarray(pos, pos + len) });
    pos += len;
  }
  return out;
}

/** The raw field of a `k8s\0` + Unknown answer. */
function rawOf(body: Buffer): Buffer {
  assert.deepEqual([...body.subarray(0, 4)], [0x6b, 0x38, 0x73, 0x00]);
  return fields(body.subarray(4)).find((f) => f.num === 2)!.bytes;
}

type Outcome = { kind: 'equal' } | { kind: 'declined'; reason: string } | { kind: 'differs'; detail: string };

describe('issue 32: protobuf encoder byte for byte against the apiserver', () => {
  let f: Fixture;
  let agent: Agent;
  let auth: Record<string, string>;
  let ns: string;
  const report = new Map<
    string,
    { items: number; equal: number; declined: Map<string, number>; differs: string[] }
  >();

  const get = async (path: string, accept: string) => {
    const r = await request(`${f.server}${path}`, { dispatcher: agent, headers: { ...auth, accept } });
    return {
      status: r.statusCode,
      body: Buffer.from(await r.body.arrayBuffer()),
      ct: r.headers['content-type'],
    };
  };
  const post = async (path: string, body: unknown) => {
    const r = await request(`${f.server}${path}`, {
      dispatcher: agent,
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: r.statusCode, text: await r.body.text() };
  };
  const create = async (path: string, body: unknown) => {
    const r = await post(path, body);
    assert.equal(r.status, 201, `${path}: ${r.text}`);
  };

  before(async () => {
    f = await sharedFixture();
    agent = new Agent({ connect: { ca: f.caPem } });
    auth = { authorization: `Bearer ${f.tokens.admin}`, 'user-agent': 'e2e-protobuf' };
    ns = await f.newNamespace('pbenc');
    await createObjects();
    await createFuzz();
    await createCustom();
  });
  after(async () => {
    await agent.close();
  });

  async function createObjects(): Promise<void> {
    const n = `/api/v1/namespaces/${ns}`;
    const labels = { app: 'pb', 'example.com/tier': 'x' };
    await create(`${n}/configmaps`, { metadata: { name: 'plain', labels }, data: { a: '1', b: '' } });
    await create(`${n}/configmaps`, {
      metadata: { name: 'empty-maps', labels: {}, annotations: {} },
      data: {},
    });
    await create(`${n}/configmaps`, {
      metadata: { name: 'binary' },
      binaryData: { bin: 'AAEC/w==', none: '' },
    });
    await create(`${n}/secrets`, { metadata: { name: 's' }, type: 'Opaque', data: { k: 'dmFs', e: '' } });
    await create(`${n}/serviceaccounts`, { metadata: { name: 'sa' }, automountServiceAccountToken: false });
    await create(`${n}/services`, {
      metadata: { name: 'svc' },
      spec: {
        selector: { app: 'pb' },
        ports: [
          { name: 'a', port: 80, targetPort: 8080 },
          { name: 'b', port: 81, targetPort: 'http', protocol: 'UDP' },
        ],
        sessionAffinity: 'ClientIP',
        sessionAffinityConfig: { clientIP: { timeoutSeconds: 300 } },
      },
    });
    const container = {
      name: 'c',
      image: 'registry.example/app:1',
      args: [],
      command: ['/bin/app', 'ünïcødé'],
      env: [
        { name: 'A', value: '' },
        { name: 'B', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
        { name: 'C', valueFrom: { resourceFieldRef: { resource: 'limits.memory', divisor: '1Mi' } } },
      ],
      ports: [{ containerPort: 8080, name: 'http' }],
      resources: { requests: { cpu: '100m', memory: '1.5Gi' }, limits: { cpu: '2', memory: '2Gi' } },
      readinessProbe: { httpGet: { path: '/ready', port: 'http' }, periodSeconds: 3 },
      livenessProbe: { tcpSocket: { port: 8080 }, initialDelaySeconds: 0 },
      securityContext: { runAsUser: 1000, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
    };
    const podSpec = {
      serviceAccountName: 'sa',
      automountServiceAccountToken: false,
      containers: [container],
      volumes: [
        { name: 'e', emptyDir: { sizeLimit: '64Mi' } },
        { name: 'cm', configMap: { name: 'plain', defaultMode: 420, items: [{ key: 'a', path: 'a' }] } },
        { name: 'csi', csi: { driver: 'x.example', volumeAttributes: { '€': '1', a: '2' } } },
        {
          name: 'p',
          projected: { sources: [{ serviceAccountToken: { path: 't', expirationSeconds: 3600 } }] },
        },
      ],
      tolerations: [{ key: 'k', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 5 }],
      nodeSelector: { 'kubernetes.io/os': 'linux' },
      activeDeadlineSeconds: 2147483647,
      terminationGracePeriodSeconds: 0,
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchExpressions: [{ key: 'a', operator: 'In', values: ['x', 'y'] }] }],
          },
        },
      },
    };
    await create(`${n}/pods`, { metadata: { name: 'pod', labels }, spec: podSpec });
    await create(`${n}/podtemplates`, {
      metadata: { name: 'pt' },
      template: { metadata: { labels }, spec: podSpec },
    });
    const tmpl = { metadata: { labels }, spec: { containers: [container] } };
    await create(`${n}/replicationcontrollers`, {
      metadata: { name: 'rc' },
      spec: { replicas: 0, selector: labels, template: tmpl },
    });
    const a = `/apis/apps/v1/namespaces/${ns}`;
    const sel = { matchLabels: labels };
    await create(`${a}/deployments`, {
      metadata: { name: 'd' },
      spec: {
        replicas: 0,
        selector: sel,
        template: tmpl,
        strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%', maxUnavailable: 0 } },
      },
    });
    await create(`${a}/replicasets`, {
      metadata: { name: 'rs' },
      spec: { replicas: 0, selector: sel, template: tmpl },
    });
    await create(`${a}/statefulsets`, {
      metadata: { name: 'ss' },
      spec: {
        replicas: 0,
        selector: sel,
        serviceName: 'svc',
        template: tmpl,
        volumeClaimTemplates: [
          {
            metadata: { name: 'data' },
            spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
          },
        ],
      },
    });
    await create(`${a}/daemonsets`, { metadata: { name: 'ds' }, spec: { selector: sel, template: tmpl } });
    await create(`${a}/controllerrevisions`, { metadata: { name: 'cr' }, data: { a: 1 }, revision: 3 });
    const b = `/apis/batch/v1/namespaces/${ns}`;
    const jobTmpl = { spec: { restartPolicy: 'Never', containers: [container] } };
    await create(`${b}/jobs`, {
      metadata: { name: 'j' },
      spec: { suspend: true, backoffLimit: 0, activeDeadlineSeconds: 4294967296, template: jobTmpl },
    });
    await create(`${b}/cronjobs`, {
      metadata: { name: 'cj' },
      spec: { schedule: '*/5 * * * *', suspend: true, jobTemplate: { spec: { template: jobTmpl } } },
    });
    await create(`${n}/events`, {
      metadata: { name: 'ev' },
      involvedObject: { kind: 'Pod', name: 'pod', namespace: ns },
      reason: 'R',
      message: 'm ✓ 𝄞',
      type: 'Normal',
      count: 0,
    });
    await create(`${n}/events`, {
      metadata: { name: 'ev-micro' },
      involvedObject: { kind: 'Pod', name: 'pod', namespace: ns },
      eventTime: '2026-01-02T03:04:05.123456Z',
      reportingComponent: 'e2e',
      reportingInstance: 'i',
      action: 'A',
      reason: 'R',
      type: 'Warning',
      firstTimestamp: '1970-01-01T00:00:00Z',
      lastTimestamp: '1969-12-31T23:59:59Z',
    });
    await create(`/apis/events.k8s.io/v1/namespaces/${ns}/events`, {
      metadata: { name: 'ev2' },
      eventTime: '2026-01-02T03:04:05.000001Z',
      reportingController: 'example.com/c',
      reportingInstance: 'i',
      action: 'A',
      reason: 'R',
      type: 'Normal',
      regarding: { kind: 'Pod', name: 'pod', namespace: ns },
    });
    await create(`/apis/coordination.k8s.io/v1/namespaces/${ns}/leases`, {
      metadata: { name: 'l' },
      spec: {
        holderIdentity: 'h',
        leaseDurationSeconds: 15,
        renewTime: '2026-01-02T03:04:05.999999Z',
        leaseTransitions: 0,
      },
    });
    await create(`/apis/policy/v1/namespaces/${ns}/poddisruptionbudgets`, {
      metadata: { name: 'pdb' },
      spec: { minAvailable: '50%', selector: sel },
    });
    await create(`/apis/autoscaling/v2/namespaces/${ns}/horizontalpodautoscalers`, {
      metadata: { name: 'hpa' },
      spec: {
        scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'd' },
        minReplicas: 1,
        maxReplicas: 3,
        metrics: [
          {
            type: 'Resource',
            resource: { name: 'cpu', target: { type: 'AverageValue', averageValue: '500m' } },
          },
        ],
      },
    });
    await create(`/apis/networking.k8s.io/v1/namespaces/${ns}/networkpolicies`, {
      metadata: { name: 'np' },
      spec: {
        podSelector: {},
        ingress: [
          { ports: [{ port: 80 }, { port: 'http', protocol: 'TCP' }, { port: 1000, endPort: 2000 }] },
          {},
        ],
        policyTypes: ['Ingress'],
      },
    });
    await create(`/apis/networking.k8s.io/v1/namespaces/${ns}/ingresses`, {
      metadata: { name: 'ing' },
      spec: {
        rules: [
          {
            host: 'a.example.com',
            http: {
              paths: [
                {
                  path: '/',
                  pathType: 'Prefix',
                  backend: { service: { name: 'svc', port: { number: 80 } } },
                },
              ],
            },
          },
        ],
      },
    });
    await create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`, {
      metadata: { name: 'r' },
      rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] }],
    });
    await create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`, {
      metadata: { name: 'rb' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'r' },
      subjects: [{ kind: 'ServiceAccount', name: 'sa', namespace: ns }],
    });
    await create(`${n}/persistentvolumeclaims`, {
      metadata: { name: 'pvc' },
      spec: {
        accessModes: ['ReadWriteOnce'],
        resources: { requests: { storage: '1Gi' } },
        storageClassName: '',
      },
    });
    await create(`${n}/resourcequotas`, {
      metadata: { name: 'q' },
      spec: {
        hard: { pods: '1e3', 'requests.storage': '123456789012345678901234567890', 'requests.cpu': '0.5' },
      },
    });
    await create(`${n}/limitranges`, {
      metadata: { name: 'lr' },
      spec: {
        limits: [
          { type: 'Container', max: { cpu: '1e30' }, default: { memory: '1500Mi' }, min: { cpu: '0.001' } },
        ],
      },
    });
    await create(`/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices`, {
      metadata: { name: 'es', labels: { 'kubernetes.io/service-name': 'svc' } },
      addressType: 'IPv4',
      endpoints: [
        { addresses: ['10.0.0.1'], conditions: { ready: true }, hints: { forZones: [{ name: 'z' }] } },
      ],
      ports: [{ name: 'a', port: 8080, protocol: 'TCP' }],
    });
  }

  /** A CRD (its schema is raw JSON: declined) and a custom resource (no protobuf upstream). */
  async function createCustom(): Promise<void> {
    const group = `pb${Date.now().toString(36)}.example.com`;
    const schema = { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } };
    await create('/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {
      metadata: { name: `gadgets.${group}` },
      spec: {
        group,
        names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget' },
        scope: 'Namespaced',
        versions: [{ name: 'v1', served: true, storage: true, schema }],
      },
    });
    await eventually('the custom resource can be created', 30_000, async () => {
      const r = await post(`/apis/${group}/v1/namespaces/${ns}/gadgets`, {
        apiVersion: `${group}/v1`,
        kind: 'Gadget',
        metadata: { name: 'g' },
        spec: { n: 1 },
      });
      return r.status === 201 ? true : undefined;
    });
  }

  /** Seeded unusual objects: map keys and values across Unicode, odd quantities, big ints, times. */
  async function createFuzz(): Promise<void> {
    const rnd = prng(SEED);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
    const chars = [
      'a',
      'Z',
      '0',
      '_',
      'é',
      'ß',
      '€',
      '中',
      '\uE000',
      '\uFFFD',
      '😀',
      '𝄞',
      '𐀀',
      ' ',
      '"',
      '<',
      '&',
      '\\',
    ];
    const word = (n: number) => Array.from({ length: 1 + Math.floor(rnd() * n) }, () => pick(chars)).join('');
    const quantities = [
      '0',
      '1',
      '1e30',
      '1E3',
      '0.1',
      '100m',
      '1Ki',
      '1.5Gi',
      '1e-3',
      '12345678901234567890',
      '999999999999999999999Ei',
      '0.000001',
      '2.5e6',
      '7Ti',
    ];
    for (let i = 0; i < 12; i++) {
      const params: Record<string, string> = {};
      for (let k = 0; k < 1 + Math.floor(rnd() * 6); k++) params[word(4)] = word(6);
      await create('/apis/storage.k8s.io/v1/storageclasses', {
        metadata: { name: `pb-${ns}-${i}`, annotations: { [`example.com/k${i}`]: word(8) } },
        provisioner: 'example.com/p',
        parameters: rnd() < 0.2 ? {} : params,
        mountOptions: rnd() < 0.3 ? [] : [word(3)],
        ...(rnd() < 0.5 ? { allowVolumeExpansion: rnd() < 0.5 } : {}),
      });
      const data: Record<string, string> = {};
      for (let k = 0; k < Math.floor(rnd() * 4); k++) data[`k${k}`] = word(10);
      await create(`/api/v1/namespaces/${ns}/configmaps`, {
        metadata: {
          name: `fuzz-${i}`,
          labels: rnd() < 0.3 ? {} : { [`l${i}`]: 'v' },
          annotations: { a: word(12), [`b.example.com/${i}`]: '' },
          finalizers: rnd() < 0.3 ? [] : [`example.com/f${i}`],
        },
        ...(rnd() < 0.5 ? { data } : {}),
        immutable: rnd() < 0.5,
      });
      await create(`/api/v1/namespaces/${ns}/resourcequotas`, {
        metadata: { name: `fuzz-${i}` },
        spec: {
          hard: {
            'requests.storage': pick(quantities),
            'requests.memory': pick(quantities),
            'limits.cpu': pick(quantities),
          },
        },
      });
      const big = pick(['1', '2147483648', '9007199254740991', '9007199254740993', '9223372036854775807']);
      const args = rnd() < 0.5 ? '[]' : JSON.stringify([word(5)]);
      const cpu = pick(['0.1', '100m', '1', '2.5']);
      const mem = pick(quantities.slice(4, 8));
      // Raw JSON text: int64 values beyond 2^53 do not survive a JS number.
      const job = `{"metadata":{"name":"fuzz-${i}"},"spec":{"suspend":true,"activeDeadlineSeconds":${big},"template":{"spec":{"restartPolicy":"Never","terminationGracePeriodSeconds":${big},"containers":[{"name":"c","image":"x","args":${args},"resources":{"requests":{"cpu":"${cpu}","memory":"${mem}"}}}]}}}}`;
      const r = await request(`${f.server}/apis/batch/v1/namespaces/${ns}/jobs`, {
        dispatcher: agent,
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: job,
      });
      const text = await r.body.text();
      assert.equal(r.statusCode, 201, text);
      assert.ok(text.includes(`"activeDeadlineSeconds":${big}`), 'the apiserver kept the int64 exactly');
    }
  }

  async function resources(): Promise<Resource[]> {
    const out: Resource[] = [];
    const groups = [{ gv: 'v1', base: '/api/v1' }];
    const apis = JSON.parse((await get('/apis', 'application/json')).body.toString()) as {
      groups: { versions: { groupVersion: string }[] }[];
    };
    for (const g of apis.groups)
      for (const v of g.versions) groups.push({ gv: v.groupVersion, base: `/apis/${v.groupVersion}` });
    for (const { gv, base } of groups) {
      const list = JSON.parse((await get(base, 'application/json')).body.toString()) as {
        resources: { name: string; kind: string; namespaced: boolean; verbs: string[] }[];
      };
      for (const r of list.resources) {
        if (r.name.includes('/') || !r.verbs.includes('list')) continue;
        out.push({ path: `${base}/${r.name}`, groupVersion: gv, kind: r.kind, namespaced: r.namespaced });
      }
    }
    return out;
  }

  function record(key: string, outcome: Outcome): void {
    let r = report.get(key);
    if (!r) {
      r = { items: 0, equal: 0, declined: new Map(), differs: [] };
      report.set(key, r);
    }
    r.items++;
    if (outcome.kind === 'equal') r.equal++;
    else if (outcome.kind === 'declined')
      r.declined.set(outcome.reason, (r.declined.get(outcome.reason) ?? 0) + 1);
    else r.differs.push(outcome.detail);
  }

  /** Encodes one JSON object (a list item or a GET answer); the outcome against `expected`. */
  function compare(typeName: string, obj: unknown, expected: Buffer, what: string): Outcome {
    let mine: Buffer;
    try {
      mine = encodeParsed(typeName, obj);
    } catch (e) {
      if (e instanceof CannotEncode)
        return { kind: 'declined', reason: `${e.reason}: ${e.message.slice(e.message.indexOf('): ') + 3)}` };
      throw e;
    }
    if (mine.equals(expected)) return { kind: 'equal' };
    let at = 0;
    while (at < mine.length && mine[at] === expected[at]) at++;
    return {
      kind: 'differs',
      detail: `${what}: first difference at byte ${at} of ${expected.length} (mine ${mine.length}): apiserver ${expected.subarray(at, at + 24).toString('hex')} mine ${mine.subarray(at, at + 24).toString('hex')}`,
    };
  }

  test('every listable resource: LIST and GET bytes equal the apiserver protobuf', async () => {
    const all = await resources();
    assert.ok(all.length > 50, `discovery lists ${all.length} resources`);
    for (const res of all) {
      const key = `${res.groupVersion} ${res.kind}`;
      const json = await get(res.path, 'application/json');
      assert.equal(json.status, 200, `${res.path}: ${json.body.toString().slice(0, 300)}`);
      const list = parseGoJSON(json.body.toString()) as {
        metadata: { resourceVersion: string };
        items: Record<string, unknown>[];
      };
      const rv = list.metadata.resourceVersion;
      const pb = await get(`${res.path}?resourceVersion=${rv}&resourceVersionMatch=Exact`, PB);
      const spec = kindSpec(res.groupVersion, res.kind);
      if (pb.status === 406 || !String(pb.ct).startsWith(PB)) {
        // No protobuf form upstream (custom resources): the encoder must have none either.
        assert.equal(spec, undefined, `${key}: the apiserver has no protobuf for it, the table has`);
        record(key, { kind: 'declined', reason: 'unknown-kind: no protobuf upstream (406)' });
        continue;
      }
      assert.equal(pb.status, 200, `${res.path}: ${pb.body.toString().slice(0, 300)}`);
      assert.ok(spec, `${key}: the apiserver answers protobuf, the table has no type for it`);
      // The whole LIST answer: envelope + ListMeta + items.
      const raw = rawOf(pb.body);
      const parts = fields(raw);
      const items = parts.filter((p) => p.num === 2);
      assert.equal(items.length, list.items.length, `${key}: the same objects at RV ${rv}`);
      // In the protobuf LIST's order (the whole answer is compared below). ComponentStatus is not
      // stored: the apiserver lists it in the order its probes answer, so the two LISTs may order
      // it differently; an item unequal at its index is paired with an equal one elsewhere.
      const mine: Buffer[] = [];
      let matched = 0;
      for (const [i, item] of list.items.entries()) {
        let at = i;
        let o = compare(spec.name, item, items[i]!.bytes, `${key} item ${i}`);
        if (o.kind === 'differs') {
          const j = items.findIndex(
            (p, k) => mine[k] === undefined && compare(spec.name, item, p.bytes, '').kind === 'equal',
          );
          if (j >= 0) [at, o] = [j, { kind: 'equal' }];
        }
        record(key, o);
        if (o.kind === 'equal' && mine[at] === undefined) {
          mine[at] = items[at]!.bytes;
          matched++;
        }
      }
      if (matched === items.length) {
        const listKind = `${res.kind}List`;
        const whole = Buffer.concat(
          unknownEnvelope(res.groupVersion, listKind, listRaw(list.metadata, mine)),
        );
        assert.ok(whole.equals(pb.body), `${key}: the whole LIST answer (envelope, ListMeta) differs`);
      }
      // GET of up to three objects.
      for (const item of list.items.slice(0, 3)) {
        const m = (item as { metadata: { name: string; namespace?: string } }).metadata;
        const path = res.namespaced
          ? res.path.replace(/\/([^/]+)$/, `/namespaces/${m.namespace}/$1/${encodeURIComponent(m.name)}`)
          : `${res.path}/${encodeURIComponent(m.name)}`;
        const gj = await get(path, 'application/json');
        const gp = await get(path, PB);
        if (gj.status === 404 || gp.status === 404) continue; // deleted meanwhile (the apiserver's own churn)
        const obj = parseGoJSON(gj.body.toString()) as Record<string, unknown>;
        const objRv = (obj.metadata as { resourceVersion: string }).resourceVersion;
        const o = compare(spec.name, obj, rawOf(gp.body), `${key} GET ${m.name}`);
        if (o.kind === 'equal') {
          const answer = objectAnswer(res.groupVersion, res.kind, encodeParsed(spec.name, obj));
          if (!answer.equals(gp.body))
            record(key, { kind: 'differs', detail: `${key} GET ${m.name}: envelope` });
        } else if (o.kind === 'differs') {
          // An object updated between the two GETs differs legitimately: re-read once at its RV.
          const again = await get(`${path}?resourceVersion=${objRv}`, PB);
          record(key, compare(spec.name, obj, rawOf(again.body), `${key} GET ${m.name}`));
        }
      }
    }
    const rows = [...report.entries()].sort(([a], [b]) => (a < b ? -1 : 1));
    const lines = rows.map(([k, r]) => {
      const declined = [...r.declined.entries()].map(([why, n]) => `${n} declined (${why})`).join(', ');
      return `${k}: ${r.items} compared, ${r.equal} equal${declined ? `, ${declined}` : ''}${r.differs.length ? `, ${r.differs.length} DIFFER` : ''}`;
    });
    console.log(`protobuf byte-diff report (seed ${SEED}):\n${lines.join('\n')}`);
    const differs = rows.flatMap(([, r]) => r.differs);
    assert.deepEqual(differs, [], 'objects whose encoding differs from the apiserver protobuf');
    const allowed = /^(raw-json|unknown-kind)/;
    const badDeclines = rows.flatMap(([k, r]) =>
      [...r.declined.keys()].filter((w) => !allowed.test(w)).map((w) => `${k}: ${w}`),
    );
    assert.deepEqual(badDeclines, [], 'declines other than raw JSON and kinds without protobuf');
    // The kinds this file created were compared, and equal.
    for (const k of [
      'v1 Pod',
      'v1 ConfigMap',
      'apps/v1 Deployment',
      'storage.k8s.io/v1 StorageClass',
      'v1 Event',
      'coordination.k8s.io/v1 Lease',
      'v1 ResourceQuota',
    ]) {
      assert.ok((report.get(k)?.equal ?? 0) > 0, `${k} compared equal at least once`);
    }
  });

  test('the committed schema table is what test/apiserver/protoschema generates (when Go is on PATH)', async (t) => {
    const go = await promisify(execFile)('go', ['version']).catch(() => undefined);
    if (!go) {
      t.skip('no Go toolchain on PATH');
      return;
    }
    const { stdout } = await promisify(execFile)('nice', ['go', 'run', './protoschema'], {
      cwd: join(root, 'test/apiserver'),
      maxBuffer: 64 << 20,
    });
    const committed = readFileSync(join(root, 'src/apimachinery/protobuf/schema.json'), 'utf8');
    assert.ok(
      stdout === committed,
      'src/apimachinery/protobuf/schema.json is stale: regenerate it (see schema.ts)',
    );
  });
});
