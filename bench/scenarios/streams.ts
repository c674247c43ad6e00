/**
 * The exec family side by side (issue 14): `kubectl exec` round trip and `kubectl port-forward`
 * throughput, direct vs through the proxy, on the pods fixture (test/fixture/pods-fixture.ts:
 * a KWOK node serving the kubelet API, port-forward reaching an in-process echo server).
 *
 * Pinning, the same for both targets: apiserver + etcd + kwok + kube-controller-manager +
 * kube-scheduler + this process (the echo server, the bytes sent and read) on CPU 0 with
 * kubectl (the client), the proxy alone on CPU 1 (as bench/run.ts). Direct and proxy
 * repetitions alternate (one warm-up each, not counted). Each figure is `reps` repetitions; the
 * row gives every repetition, their median and spread (min–max).
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { writeKubeconfig } from '../../test/fixture/index.ts';
import { startPodsFixture } from '../../test/fixture/pods-fixture.ts';
import { pin, round } from '../support/proc.ts';
import { startProxy } from '../support/proxy-process.ts';

/** One figure, direct or through the proxy. */
export interface StreamRow {
  /** `exec round trip` (ms per `kubectl exec -- true`) or `port-forward` (MiB/s echoed). */
  scenario: string;
  target: 'direct' | 'proxy';
  unit: 'ms' | 'MiB/s';
  reps: number[];
  median: number;
  min: number;
  max: number;
}

/** Sizes of a run. */
export interface StreamParams {
  reps: number;
  /** `kubectl exec` calls per repetition (the figure is their mean). */
  execsPerRep: number;
  /** Bytes sent through the forwarded port per repetition (and echoed back). */
  transferBytes: number;
}

/** The full run: 5 repetitions, 10 execs each, 256 MiB through the forwarded port. */
export const STREAMS_FULL: StreamParams = { reps: 5, execsPerRep: 10, transferBytes: 256 * 2 ** 20 };
/** `--quick`: small sizes. */
export const STREAMS_QUICK: StreamParams = { reps: 2, execsPerRep: 2, transferBytes: 8 * 2 ** 20 };

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

function row(scenario: string, target: 'direct' | 'proxy', unit: 'ms' | 'MiB/s', reps: number[]): StreamRow {
  return {
    scenario,
    target,
    unit,
    reps: reps.map((x) => round(x, 1)),
    median: round(median(reps), 1),
    min: round(Math.min(...reps), 1),
    max: round(Math.max(...reps), 1),
  };
}

function kubectl(bin: string, cpu: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile('taskset', ['-c', cpu, bin, ...args], { timeout: 120_000 }, (err, _o, stderr) =>
      err ? reject(new Error(`kubectl ${args.join(' ')}: ${stderr || err.message}`)) : resolve(),
    );
  });
}

/** Sends `bytes` through `port` and reads the echo concurrently; resolves with MiB/s. */
async function echoThroughput(port: number, bytes: number): Promise<number> {
  const s = connect({ host: '127.0.0.1', port });
  await once(s, 'connect');
  const chunk = Buffer.alloc(1 << 20, 0x5a);
  const t0 = performance.now();
  let got = 0;
  const done = new Promise<void>((resolve, reject) => {
    s.on('data', (d: Buffer) => {
      got += d.length;
      if (got >= bytes) resolve();
    });
    s.on('error', reject);
  });
  for (let sent = 0; sent < bytes; sent += chunk.length) {
    if (!s.write(chunk.subarray(0, Math.min(chunk.length, bytes - sent)))) await once(s, 'drain');
  }
  await done;
  const s2 = (performance.now() - t0) / 1000;
  s.destroy();
  return bytes / 2 ** 20 / s2;
}

async function portForward(
  bin: string,
  cpu: string,
  kubeconfig: string,
  ns: string,
): Promise<{ port: number; child: ChildProcess }> {
  const child = spawn('taskset', [
    '-c',
    cpu,
    bin,
    '--kubeconfig',
    kubeconfig,
    'port-forward',
    '-n',
    ns,
    'pod/p',
    ':80',
  ]);
  let out = '';
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const deadline = Date.now() + 30_000;
  for (;;) {
    const m = /Forwarding from 127\.0\.0\.1:(\d+)/.exec(out);
    if (m) return { port: Number(m[1]), child };
    if (Date.now() > deadline) throw new Error(`port-forward did not start: ${out}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Runs the scenario on its own pods fixture (started and stopped here). `cpus`: the apiserver's
 * core (also kubectl's, for both targets) and the proxy's. Throws if a kubectl command fails.
 */
export async function streamsScenario(
  p: StreamParams,
  cpus: { apiserver: string; proxy: string },
  log: (m: string) => void,
): Promise<StreamRow[]> {
  const f = await startPodsFixture({ verbose: false });
  const proxy = await startProxy({
    kubeconfig: f.kubeconfigs.adminToken,
    resources: ['pods'],
    cpu: cpus.proxy,
    // exec and attach are refused by default without --delegated-auth (kubectl proxy's filter).
    extraArgs: ['--reject-paths='],
  });
  try {
    // The apiserver's side: etcd, kube-apiserver and the simulated kubelet (kwok), with the
    // controllers that keep the pod running.
    const side = ['kwok', 'kube-controller-manager', 'kube-scheduler'].map((n) =>
      Number(readFileSync(join(f.dir, `${n}.pid`), 'utf8')),
    );
    for (const pid of [f.pids().apiserver, f.pids().etcd, ...side]) pin(pid, cpus.apiserver);
    // kubectl on the same core for direct and proxy: the proxy's row differs only by the hop.
    const client = cpus.apiserver;
    const ns = await f.newNamespace('bench-streams');
    const run = await f.kubectl(['run', 'p', '-n', ns, '--image=busybox']);
    if (run.code !== 0) throw new Error(`bench: kubectl run: ${run.stderr}`);
    await f.kubectl(['wait', '-n', ns, '--for=condition=Ready', 'pod/p', '--timeout=60s']);
    const viaProxy = await writeKubeconfig(join(f.dir, 'bench-proxy.kubeconfig'), {
      server: proxy.url,
      user: { token: f.tokens.admin },
    });
    const targets = [
      { target: 'direct' as const, kubeconfig: f.kubeconfigs.adminToken },
      { target: 'proxy' as const, kubeconfig: viaProxy },
    ];
    // Interleaved: repetition r runs direct then proxy when r is even, proxy then direct when
    // odd, so a change of the shared machine's load falls on both targets alike.
    const order = (r: number) => (r % 2 === 0 ? targets : [...targets].reverse());
    const exec = (kubeconfig: string) =>
      kubectl(f.bin.kubectl, client, ['--kubeconfig', kubeconfig, 'exec', '-n', ns, 'p', '--', 'true']);
    const execReps = { direct: [] as number[], proxy: [] as number[] };
    for (const t of targets) await exec(t.kubeconfig); // warm-up, not counted
    for (let r = 0; r < p.reps; r++) {
      for (const t of order(r)) {
        const t0 = performance.now();
        for (let i = 0; i < p.execsPerRep; i++) await exec(t.kubeconfig);
        execReps[t.target].push((performance.now() - t0) / p.execsPerRep);
      }
    }
    const rows: StreamRow[] = [];
    for (const t of targets) {
      rows.push(row('exec round trip', t.target, 'ms', execReps[t.target]));
      log(`streams: exec ${t.target} median ${rows.at(-1)!.median} ms`);
    }
    // One `kubectl port-forward` per target, both open for the whole scenario.
    const forwards = { direct: undefined as number | undefined, proxy: undefined as number | undefined };
    const children: ChildProcess[] = [];
    try {
      for (const t of targets) {
        const pf = await portForward(f.bin.kubectl, client, t.kubeconfig, ns);
        children.push(pf.child);
        forwards[t.target] = pf.port;
        await echoThroughput(pf.port, 2 ** 20); // warm-up, not counted
      }
      const pfReps = { direct: [] as number[], proxy: [] as number[] };
      for (let r = 0; r < p.reps; r++) {
        for (const t of order(r))
          pfReps[t.target].push(await echoThroughput(forwards[t.target]!, p.transferBytes));
      }
      for (const t of targets) {
        rows.push(row(`port-forward ${p.transferBytes / 2 ** 20} MiB`, t.target, 'MiB/s', pfReps[t.target]));
        log(`streams: port-forward ${t.target} median ${rows.at(-1)!.median} MiB/s`);
      }
    } finally {
      for (const c of children) c.kill();
    }
    return rows;
  } finally {
    await proxy.stop();
    await f.stop();
  }
}

/** `node bench/scenarios/streams.ts [--quick]`: only these rows (JSON on stdout), this process on CPU 0. */
if (import.meta.main) {
  pin(process.pid, '0');
  const quick = process.argv.includes('--quick');
  const rows = await streamsScenario(
    quick ? STREAMS_QUICK : STREAMS_FULL,
    { apiserver: '0', proxy: '1' },
    (m) => process.stderr.write(`${m}\n`),
  );
  process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
}
