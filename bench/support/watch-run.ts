/**
 * One watch measurement for the watch rows of bench/run.ts (bench/scenarios/watch.ts and
 * bench/scenarios/slow-consumer.ts): the watch worker (bench/workers/watch-worker.ts) pinned to a
 * core opens its watches, and once they are all open the writer (bench/support/writer.ts) patches
 * pods straight to the apiserver while the server under test's CPU is metered.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import type { Upstream } from '../../src/upstream/connection.ts';
import type { WatchResult } from '../workers/watch-worker.ts';
import { cpuMeter } from './proc.ts';
import { runWriter, type WriterResult } from './writer.ts';

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));

/** One watch row: the worker's result, the writer's, and the server's cores. */
export interface WatchRow extends WatchResult {
  target: string;
  writer: WriterResult;
  serverCores: number;
}

/** Runs the watch worker pinned to `cpu` while the writer writes; resolves with its result. */
export async function watchRun(
  up: Upstream,
  pods: string[],
  spec: { url: string; headers: Record<string, string>; watchers: number; stalled: number },
  rate: number | 'max',
  writeMs: number,
  cpu: string,
  pids: number[],
): Promise<{ result: WatchResult; writer: WriterResult; serverCores: number }> {
  const measureMs = writeMs + 1500;
  const child = spawn(
    'taskset',
    [
      '-c',
      cpu,
      process.execPath,
      here('../workers/watch-worker.ts'),
      JSON.stringify({ ...spec, measureMs, rateWindowMs: writeMs }),
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => {
    err = (err + d.toString()).slice(-2000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('ready\n')) resolve();
    });
    child.once('exit', (c) => reject(new Error(`watch worker exited ${c} before ready: ${err}`)));
  });
  const meter = cpuMeter(pids);
  const writer = await runWriter(up, pods, rate, writeMs);
  const serverCores = meter();
  await exited;
  const line = out.trim().split('\n').pop() ?? '';
  if (!line.startsWith('{')) throw new Error(`watch worker: no result: ${err}`);
  return { result: JSON.parse(line) as WatchResult, writer, serverCores };
}

/** The pods collection's current resourceVersion (a watch starts from it). */
export async function currentRv(up: Upstream): Promise<string> {
  const auth = await up.authorization();
  const res = await request(`${up.baseUrl}/api/v1/pods?limit=1`, {
    dispatcher: up.dispatcher,
    headers: auth ? { authorization: auth } : {},
  });
  return ((await res.body.json()) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
}
