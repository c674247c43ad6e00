/**
 * Node agents in one (pinned) process, for the node-local rows (bench/scenarios/node-local.ts):
 * node bench/workers/agent-worker.ts '<AgentSpec JSON>'. Each agent is shaped like a client-go informer
 * per resource: LIST `path?resourceVersion=0`, then WATCH from the list's resourceVersion with
 * bookmarks (re-listing when a watch ends or fails). Prints `ready` once every agent has listed
 * and every watch answered 200, then counts events until stdin closes or gets `stop`, and prints
 * one JSON line ({@link AgentResult}).
 */
import { gunzipSync } from 'node:zlib';
import { Agent, request } from 'undici';

/** Attempts of one LIST + WATCH before the agent gives up on the collection. */
const ATTEMPTS = 10;

/** Input of the worker. */
export interface AgentSpec {
  /** `https://127.0.0.1:PORT` of the apiserver (or relay) or of the node proxy. */
  base: string;
  /** One entry per agent: its bearer token and the collection paths it list-watches. */
  agents: Array<{ token: string; paths: string[] }>;
  /** Delay between starting two agents, ms (staggered starts). */
  staggerMs: number;
}

/** Output of the worker. */
export interface AgentResult {
  lists: number;
  watches: number;
  /** Watch events (ADDED/MODIFIED/DELETED/BOOKMARK lines) received after `ready`. */
  events: number;
  /** The same by collection path (all agents of the worker). */
  eventsByPath: Record<string, number>;
  /** Response bytes received (LIST bodies and watch streams), whole run. */
  bytes: number;
  /** spawn → every watch open, ms. */
  readyMs: number;
  /** Watches that ended or failed and were re-listed. */
  relists: number;
  /** LIST or WATCH attempts that failed and were retried (client-go's reflector retries too). */
  retries: number;
  /** Collections given up on after {@link ATTEMPTS} failed attempts in a row. */
  errors: string[];
}

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2] ?? '{}') as AgentSpec;
  const t0 = performance.now();
  const dispatcher = new Agent({
    connect: { rejectUnauthorized: false },
    bodyTimeout: 0,
    headersTimeout: 120_000,
    connections: null,
  });
  const r: AgentResult = {
    lists: 0,
    watches: 0,
    events: 0,
    eventsByPath: {},
    bytes: 0,
    readyMs: 0,
    relists: 0,
    retries: 0,
    errors: [],
  };
  let ready = false;
  let stopping = false;
  const sep = (p: string) => (p.includes('?') ? '&' : '?');

  /** {@link listWatchOnce} until it succeeds, at most {@link ATTEMPTS} times, 1 s apart. */
  const listWatch = async (token: string, path: string): Promise<void> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await listWatchOnce(token, path);
      } catch (err) {
        if (attempt >= ATTEMPTS || stopping) throw err;
        r.retries++;
        await new Promise((res) => setTimeout(res, 1000));
      }
    }
  };

  /** LIST then WATCH `path`; resolves once the watch is open; re-lists when it ends. */
  const listWatchOnce = async (token: string, path: string): Promise<void> => {
    const headers = {
      authorization: `Bearer ${token}`,
      accept: 'application/json',
      'accept-encoding': 'gzip',
    };
    const list = await request(`${spec.base}${path}${sep(path)}resourceVersion=0`, { dispatcher, headers });
    const body = Buffer.from(await list.body.arrayBuffer());
    r.bytes += body.length;
    r.lists++;
    if (list.statusCode !== 200)
      throw new Error(`LIST ${path}: ${list.statusCode} ${body.toString().slice(0, 200)}`);
    const text = (
      String(list.headers['content-encoding'] ?? '') === 'gzip' ? gunzipSync(body) : body
    ).toString();
    const rv = (JSON.parse(text) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
    const w = await request(
      `${spec.base}${path}${sep(path)}watch=1&allowWatchBookmarks=true&resourceVersion=${rv}`,
      { dispatcher, headers: { ...headers, 'accept-encoding': 'identity' } },
    );
    if (w.statusCode !== 200)
      throw new Error(`WATCH ${path}: ${w.statusCode} ${(await w.body.text()).slice(0, 200)}`);
    r.watches++;
    w.body.on('data', (chunk: Buffer) => {
      r.bytes += chunk.length;
      if (!ready) return;
      for (let i = chunk.indexOf(10); i >= 0; i = chunk.indexOf(10, i + 1)) {
        r.events++;
        r.eventsByPath[path] = (r.eventsByPath[path] ?? 0) + 1;
      }
    });
    const again = () => {
      if (stopping) return;
      r.relists++;
      listWatch(token, path).catch((e: Error) => r.errors.push(e.message));
    };
    w.body.once('end', again);
    w.body.once('error', again);
  };

  const opened: Array<Promise<void>> = [];
  for (const a of spec.agents) {
    for (const p of a.paths) opened.push(listWatch(a.token, p));
    if (spec.staggerMs > 0) await new Promise((res) => setTimeout(res, spec.staggerMs));
  }
  const settled = await Promise.allSettled(opened);
  for (const s of settled) if (s.status === 'rejected') r.errors.push(String(s.reason?.message ?? s.reason));
  r.readyMs = Math.round(performance.now() - t0);
  ready = true;
  process.stdout.write('ready\n');
  await new Promise<void>((resolve) => {
    process.stdin.on('data', (d: Buffer) => {
      if (d.toString().includes('stop')) resolve();
    });
    process.stdin.on('end', () => resolve());
  });
  stopping = true;
  process.stdout.write(`${JSON.stringify(r)}\n`);
  process.exit(0);
}

if (import.meta.main) await main();
