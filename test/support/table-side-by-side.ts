/**
 * The side-by-side Table harness of the `test/e2e/table-*.test.ts` files (issue 32: kubectl's
 * Table answered from the cache, one file per printer family of `src/printers/`). A suite creates
 * its objects directly (a fresh namespace; every object labelled `t32=<run>`), starts a proxy
 * caching its kinds, then for every kind:
 * - the Table JSON (`includeObject` Metadata, None, Object; v1 and v1beta1) of a LIST, of an empty
 *   LIST and of a GET of each object equals the apiserver's field for field, with the age cells
 *   and the list's resourceVersion (the cache's own, as for any LIST) masked, served from the cache;
 * - each page of a paged LIST (`limit=2`, namespaced kinds) equals the apiserver's;
 * - kubectl's `get`, `-o wide`, `--show-labels`, `-L`, `--sort-by` print the same (ages masked),
 *   with no Table of the kind forwarded for its form;
 * - `kubectl get -w` (and `-w -o wide` where the kind has wide columns) prints the same lines
 *   through the proxy as directly while one object is changed (a label patch) and deleted, both
 *   watches served from the cache. This test runs last (after the suite's own): it deletes an
 *   object of every kind (the first not already being deleted; a namespace: the suite's own).
 * A suite adds its own tests (watches, …) with the session it is given.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { type Fixture, sharedFixture } from '../fixture/index.ts';
import { eventually } from './eventually.ts';
import { parsePrometheus, sum } from './prometheus-text.ts';
import { type InProcessProxy, startProxy } from './proxy.ts';

export const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io';
export const KUBECTL =
  'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';
const AGE = /^(<invalid>|\d+[smhdy](\d+[smhd])?)$/;
const AGE_IN_TEXT = /\b\d+[smhdy](\d+[smhd])?\b/g;

export interface Answer {
  status: number;
  body: string;
  fromCache: boolean;
}

/** A Table with its ages and its list RV (and the continue token carrying it) masked. */
export function masked(body: string): unknown {
  const t = JSON.parse(body) as {
    metadata: { resourceVersion?: string; continue?: string };
    rows: { cells: unknown[] }[] | null;
  };
  if (t.metadata.resourceVersion !== undefined) t.metadata.resourceVersion = 'N';
  if (t.metadata.continue !== undefined) t.metadata.continue = 'TOKEN';
  for (const r of t.rows ?? [])
    r.cells = r.cells.map((c) =>
      typeof c === 'string'
        ? AGE.test(c)
          ? 'AGE'
          : c.replace(/\(\d+[smhdy](\d+[smhd])? ago\)/, '(AGE ago)')
        : c,
    );
  return t;
}

/** kubectl's printed table with ages masked and column padding collapsed (ages change widths). */
export function printed(out: string): string[] {
  return out
    .split('\n')
    .map((l) => l.replace(AGE_IN_TEXT, 'AGE').replace(/\s+/g, ' ').trim())
    .filter((l) => l !== '');
}

/** [resource path (namespaced under the suite's namespace when it starts with `ns:`), kubectl resource name]. */
export type TableKind = [string, string];

/** What a suite's setup and its own tests work with (filled in before its tests run). */
export interface TableSession {
  f: Fixture;
  agent: Agent;
  auth: Record<string, string>;
  proxy: InProcessProxy;
  /** The suite's namespace. */
  ns: string;
  /** `t<time>`: names cluster-scoped objects and labels every object (`t32=<run>`). */
  run: string;
  /** `t32=<run>`. */
  sel: string;
  http(base: string, path: string, accept?: string, method?: string, body?: unknown): Promise<Answer>;
  direct(path: string, accept?: string): Promise<Answer>;
  via(path: string, accept?: string): Promise<Answer>;
  /** POST to the apiserver (201 asserted). */
  create(path: string, obj: Record<string, unknown>): Promise<{ metadata: { name: string } }>;
  /** PATCH of `path/status` on the apiserver (200 asserted). */
  status(path: string, st: Record<string, unknown>): Promise<void>;
  /** ObjectMeta named `name`, labelled `t32=<run>` and `app=<name's first dash part>`. */
  meta(name: string, extra?: Record<string, unknown>): Record<string, unknown>;
  /** RFC 3339 (seconds) `s` seconds ago. */
  ago(s: number): string;
  /** A kind's path, `ns:` resolved. */
  path(p: string): string;
}

/**
 * One side-by-side Table suite: `kinds` cached by its proxy, `setup` creating their objects
 * directly, `cleanup` deleting what the namespace's deletion does not (cluster-scoped objects),
 * `more` adding the suite's own tests.
 */
export function tableSuite(
  title: string,
  kinds: readonly TableKind[],
  o: {
    /** The run id (`t<time>`): given when `kinds` name it (a custom resource's group). */
    run?: string;
    /** More resources the proxy caches (kubectl names): what the kinds' printers read. */
    alsoCached?: readonly string[];
    setup(s: TableSession): Promise<void>;
    cleanup?(s: TableSession): Promise<void>;
    more?(s: TableSession): void;
  },
): void {
  const s = {} as TableSession;
  describe(title, () => {
    before(async () => {
      s.f = await sharedFixture();
      s.agent = new Agent({ connect: { ca: s.f.caPem } });
      s.auth = { authorization: `Bearer ${s.f.tokens.admin}`, 'user-agent': 'e2e' };
      s.ns = await s.f.newNamespace('table');
      s.run = o.run ?? `t${Date.now().toString(36)}`;
      s.sel = `t32=${s.run}`;
      s.http = async (base, path, accept, method = 'GET', body) => {
        const r = await request(`${base}${path}`, {
          dispatcher: s.agent,
          method: method as 'GET',
          headers: {
            ...s.auth,
            'content-type': 'application/merge-patch+json',
            ...(accept ? { accept } : {}),
          },
          ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        });
        const text = await r.body.text();
        return { status: r.statusCode, body: text, fromCache: r.headers['audit-id'] === undefined };
      };
      s.direct = (path, accept) => s.http(s.f.server, path, accept);
      s.via = (path, accept) => s.http(s.proxy.url, path, accept);
      s.create = async (path, obj) => {
        const r = await request(`${s.f.server}${path}`, {
          dispatcher: s.agent,
          method: 'POST',
          headers: { ...s.auth, 'content-type': 'application/json' },
          body: JSON.stringify(obj),
        });
        const text = await r.body.text();
        assert.equal(r.statusCode, 201, `${path}: ${text}`);
        return JSON.parse(text) as { metadata: { name: string } };
      };
      s.status = async (path, st) => {
        const r = await s.http(s.f.server, `${path}/status`, undefined, 'PATCH', { status: st });
        assert.equal(r.status, 200, `${path}/status: ${r.body}`);
      };
      s.meta = (name, extra = {}) => ({ name, labels: { t32: s.run, app: name.split('-')[0]! }, ...extra });
      s.ago = (sec) => new Date(Date.now() - sec * 1000).toISOString().replace(/\.\d+Z$/, 'Z');
      s.path = (p) => (p.startsWith('ns:') ? p.slice(3).replace(/\/([a-z]+)$/, `/namespaces/${s.ns}/$1`) : p);
      await o.setup(s);
      s.proxy = await startProxy(s.f, {
        resources: [...kinds.map(([, k]) => k), ...(o.alsoCached ?? [])].join(','),
      });
    });
    after(async () => {
      await s.proxy?.stop();
      if (s.f) await o.cleanup?.(s);
      await s.agent?.close();
      if (s.ns) await s.f?.kubectl(['delete', 'namespace', s.ns, '--wait=false']);
    });

    test('Table JSON of LIST (includeObject Metadata, None, Object; v1beta1) and GET: equal to the apiserver, from the cache', async () => {
      for (const [p] of kinds) {
        const base = `${s.path(p)}?labelSelector=${encodeURIComponent(s.sel)}`;
        for (const [q, accept] of [
          ['', TABLE],
          ['&includeObject=None', TABLE],
          ['&includeObject=Object', TABLE],
          ['&includeObject=Metadata', KUBECTL],
          ['', 'application/json;as=Table;v=v1beta1;g=meta.k8s.io'],
        ] as const) {
          const want = await s.direct(`${base}${q}`, accept);
          const got = await s.via(`${base}${q}`, accept);
          assert.equal(want.status, 200, `${p}${q}: ${want.body}`);
          assert.equal(got.status, 200, `${p}${q}: ${got.body}`);
          assert.ok(got.fromCache, `${p}${q}: from the cache`);
          assert.deepEqual(masked(got.body), masked(want.body), `${p}${q}`);
          const rows = (JSON.parse(want.body) as { rows: unknown[] | null }).rows;
          assert.ok(rows && rows.length > 0, `${p}: some objects`);
        }
        // An empty list: `[]` or `null` as the apiserver's printer writes it.
        const none = `${s.path(p)}?labelSelector=t32%3Dnothing`;
        assert.deepEqual(
          masked((await s.via(none, TABLE)).body),
          masked((await s.direct(none, TABLE)).body),
          `${p} empty`,
        );
        // GET of each object, every includeObject.
        const names = (
          JSON.parse((await s.direct(base, TABLE)).body) as {
            rows: { object: { metadata: { name: string } } }[];
          }
        ).rows.map((r) => r.object.metadata.name);
        for (const name of names) {
          for (const q of ['', '?includeObject=Object', '?includeObject=None']) {
            const one = `${s.path(p)}/${name}${q}`;
            const want = await s.direct(one, TABLE);
            const got = await s.via(one, TABLE);
            assert.equal(got.status, 200, `${one}: ${got.body}`);
            assert.ok(got.fromCache, `${one}: from the cache`);
            assert.deepEqual(masked(got.body), masked(want.body), one);
            assert.equal(got.body.endsWith('}\n'), want.body.endsWith('}\n'), `${one}: newline`);
          }
        }
      }
    });

    const namespaced = kinds.filter(([k]) => k.startsWith('ns:'));
    if (namespaced.length > 0)
      test('paged Table LISTs (limit, continue, remainingItemCount) page like the apiserver', async () => {
        for (const [p] of namespaced) {
          const pages = async (get: (u: string) => Promise<Answer>) => {
            const out: unknown[] = [];
            let cont = '';
            for (let i = 0; i < 20; i++) {
              const a = await get(
                `${s.path(p)}?limit=2${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`,
              );
              assert.equal(a.status, 200, a.body);
              out.push(masked(a.body));
              cont = (JSON.parse(a.body) as { metadata: { continue?: string } }).metadata.continue ?? '';
              if (!cont) return out;
            }
            assert.fail('too many pages');
          };
          assert.deepEqual(await pages((u) => s.via(u, TABLE)), await pages((u) => s.direct(u, TABLE)), p);
        }
      });

    // Forwarded for the request's form (not for the cache's state: a quiet resource's stream may
    // be unproven live at a consistent read, `not-live`, as for any read).
    const upstream = async (resource: string) => {
      const r = await request(`${s.proxy.ops}/metrics`);
      const m = parsePrometheus(await r.body.text());
      let n = 0;
      for (const reason of ['table-printer', 'media-type', 'unknown-parameter'])
        n += sum(m, 'kube_cache_proxy_requests_total', { resource, served_from: 'upstream', reason });
      return n;
    };
    const cached = async (resource: string, labels: Record<string, string> = {}) => {
      const r = await request(`${s.proxy.ops}/metrics`);
      return sum(parsePrometheus(await r.body.text()), 'kube_cache_proxy_requests_total', {
        resource,
        served_from: 'cache',
        ...labels,
      });
    };

    test('kubectl get, -o wide, --show-labels, -L, --sort-by print the same through the proxy', {
      timeout: 1_200_000,
    }, async () => {
      for (const [p, kind] of kinds) {
        const resource = kind.split('.')[0]!;
        const before = await upstream(resource);
        const fromCache = await cached(resource);
        const scope = p.startsWith('ns:') ? ['-n', s.ns] : [];
        for (const extra of [
          [],
          ['-o', 'wide'],
          ['--show-labels'],
          ['-L', 'app,t32'],
          ['--sort-by=.metadata.name', '-o', 'wide'],
        ]) {
          const args = ['get', kind, ...scope, '-l', s.sel, ...extra];
          // Side by side at once (kubectl runs on 2 shared cores).
          const [want, got] = await Promise.all([
            s.f.kubectl(args),
            s.f.kubectl(args, { kubeconfig: s.proxy.kubeconfig }),
          ]);
          assert.equal(want.code, 0, want.stderr);
          assert.equal(got.code, 0, got.stderr);
          assert.deepEqual(printed(got.stdout), printed(want.stdout), `kubectl ${args.join(' ')}`);
        }
        assert.equal(
          await upstream(resource),
          before,
          `kubectl get ${kind}: no Table forwarded for its form`,
        );
        // The apiserver keeps no watch cache for events (DefaultWatchCacheSizes: 0), so it sends the
        // events stream no bookmarks, and a quiet events cache cannot prove its stream live at a
        // consistent read: `not-live`, as for a plain LIST (the Table JSON test reads them fresh).
        if (resource !== 'events')
          assert.ok((await cached(resource)) > fromCache, `kubectl get ${kind}: Tables from the cache`);
      }
    });

    o.more?.(s);

    test('kubectl get -w (and -w -o wide) prints the same lines through the proxy while an object changes, from the cache', {
      timeout: 1_200_000,
    }, async (t) => {
      for (const [p, kind] of kinds) {
        const resource = kind.split('.')[0]!;
        const before = await upstream(resource);
        const watchesFromCache = await cached(resource, { verb: 'WATCH' });
        const scope = p.startsWith('ns:') ? ['-n', s.ns] : [];
        const base = `${s.path(p)}?labelSelector=${encodeURIComponent(s.sel)}`;
        const list = JSON.parse((await s.direct(base, TABLE)).body) as {
          columnDefinitions: { priority: number }[];
          rows: { object: { metadata: { name: string; deletionTimestamp?: string } } }[];
        };
        const target = list.rows.find((r) => r.object.metadata.deletionTimestamp === undefined)?.object
          .metadata.name;
        assert.ok(target, `${kind}: an object to change`);
        const forms = list.columnDefinitions.some((c) => c.priority > 0) ? [[], ['-o', 'wide']] : [[]];
        const pairs = forms.map((extra) => {
          const args = ['get', kind, ...scope, '-l', s.sel, '-w', ...extra];
          return {
            args,
            direct: kubectlWatch(s.f, s.f.kubeconfigs.adminToken, args),
            via: kubectlWatch(s.f, s.proxy.kubeconfig, args),
          };
        });
        const all = pairs.flatMap((w) => [w.direct, w.via]);
        try {
          // The object's lines (its name printed), or every line where no column prints the name
          // (core events: LAST SEEN, TYPE, REASON, OBJECT, MESSAGE).
          const named = (w: KubectlWatch) => printed(w.out()).filter((l) => ` ${l} `.includes(` ${target} `));
          await eventually(`kubectl get ${kind} -w lists`, 60_000, async () =>
            all.every((w) => printed(w.out()).length > list.rows.length) ? true : undefined,
          );
          const ofTarget = (w: KubectlWatch) => (named(w).length > 0 ? named(w) : printed(w.out())).length;
          const at = all.map(ofTarget);
          const changed = (n: number, what: string) =>
            eventually(`kubectl get ${kind} -w: ${what}`, 60_000, async () =>
              all.every((w, i) => ofTarget(w) >= at[i]! + n) ? true : undefined,
            );
          const obj = `${s.path(p)}/${target}`;
          const patched = await s.http(s.f.server, obj, undefined, 'PATCH', {
            metadata: { labels: { 't32-watch': 'patched' } },
          });
          assert.equal(patched.status, 200, `${obj}: ${patched.body}`);
          await changed(1, 'the label patch');
          const deleted = await s.http(s.f.server, obj, undefined, 'DELETE');
          assert.ok(deleted.status === 200 || deleted.status === 202, `${obj}: ${deleted.body}`);
          await changed(2, 'the delete');
          for (const w of pairs) {
            const lines = await assertSameLines(w);
            t.diagnostic(
              `kubectl ${w.args.join(' ')}: ${lines.length} lines alike (${target} patched, deleted)`,
            );
          }
        } finally {
          await Promise.all(all.map((w) => w.stop()));
        }
        assert.equal(
          await upstream(resource),
          before,
          `kubectl get ${kind} -w: no Table forwarded for its form`,
        );
        assert.ok(
          (await cached(resource, { verb: 'WATCH' })) >= watchesFromCache + pairs.length,
          `kubectl get ${kind} -w: its watches from the cache`,
        );
      }
    });
  });
}

/** The same `kubectl get -w` run directly and through the proxy. */
export interface KubectlWatchPair {
  args: readonly string[];
  direct: KubectlWatch;
  via: KubectlWatch;
}

/**
 * Asserts that both sides of `w` printed the same lines ({@link printed}: ages masked) once both
 * printed what they will: a snapshot where they agree (the last events may reach one side first),
 * else, after 30 s, the last ones, to show the difference. Returns the lines.
 */
export async function assertSameLines(w: KubectlWatchPair): Promise<string[]> {
  const what = `kubectl ${w.args.join(' ')}`;
  const [got, want] = await eventually(`${what}: the same lines`, 30_000, async () => {
    const both = [printed(w.via.out()), printed(w.direct.out())] as const;
    return JSON.stringify(both[0]) === JSON.stringify(both[1]) ? both : undefined;
  }).catch(() => [printed(w.via.out()), printed(w.direct.out())] as const);
  assert.deepEqual(got, want, `${what}${w.via.err() ? `; stderr: ${w.via.err()}` : ''}`);
  return want;
}

/** A `kubectl get -w` process: what it printed so far. */
export interface KubectlWatch {
  out(): string;
  err(): string;
  /** Ends the process (SIGTERM) and waits for its exit. */
  stop(): Promise<void>;
}

/** Starts `kubectl --kubeconfig <kubeconfig> <args>` (a `get -w`), reading its standard output. */
export function kubectlWatch(f: Fixture, kubeconfig: string, args: readonly string[]): KubectlWatch {
  const c = spawn(f.bin.kubectl, ['--kubeconfig', kubeconfig, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  c.stdout.on('data', (b: Buffer) => {
    out += b.toString();
  });
  c.stderr.on('data', (b: Buffer) => {
    err += b.toString();
  });
  const exited = new Promise<void>((resolve) => {
    if (c.exitCode !== null || c.signalCode !== null) resolve();
    else c.once('exit', () => resolve());
  });
  return {
    out: () => out,
    err: () => err,
    stop: async () => {
      if (c.exitCode === null && c.signalCode === null) c.kill();
      await exited;
    },
  };
}

/** An open Table watch of `collection` (labelled `t32=<run>`): its events, ages masked. */
export interface TableWatch {
  lines: { type: string; object: unknown }[];
  stop(): Promise<void>;
  fromCache: boolean;
}

/** Opens a Table watch at `base` (the apiserver or the proxy) of `collection`. */
export async function tableWatch(s: TableSession, base: string, collection: string): Promise<TableWatch> {
  const ctl = new AbortController();
  const r = await request(`${base}${collection}?watch=1&labelSelector=${encodeURIComponent(s.sel)}`, {
    dispatcher: s.agent,
    headers: { ...s.auth, accept: TABLE },
    signal: ctl.signal,
  });
  const lines: TableWatch['lines'] = [];
  let buf = '';
  const done = (async () => {
    try {
      for await (const chunk of r.body) {
        buf += chunk.toString();
        for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
          const ev = JSON.parse(buf.slice(0, i)) as { type: string; object: unknown };
          lines.push({ type: ev.type, object: masked(JSON.stringify(ev.object)) });
          buf = buf.slice(i + 1);
        }
      }
    } catch {}
  })();
  return {
    lines,
    stop: async () => {
      ctl.abort();
      await done;
    },
    fromCache: r.headers['audit-id'] === undefined,
  };
}
