/**
 * Node agents in one (pinned) process, for the node-local rows (bench/scenarios/node-local.ts):
 * node bench/workers/agent-worker.ts '<AgentSpec JSON>'. Each agent is shaped like a client-go informer
 * per resource: LIST `path?resourceVersion=0`, then WATCH from the list's resourceVersion with
 * bookmarks (re-listing when a watch ends or fails; with `resume`, as client-go's reflector does:
 * re-watching from the last resourceVersion it received, and re-listing only on a 410). Prints
 * `ready` once every agent has listed and every watch answered 200, then counts events until stdin
 * closes or gets `stop`, and prints one JSON line ({@link AgentResult}).
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
  /**
   * Resume as client-go's reflector: a watch that ends or cannot be opened is re-opened from the
   * last resourceVersion received (an event's or a bookmark's), every {@link RETRY_MS}, for as
   * long as the worker runs; a 410 (an `ERROR` event or the answer's status) is a relist. Without
   * it every watch end is a relist (the node-local rows).
   */
  resume?: boolean;
}

/** Delay between two attempts to re-open a watch or re-list in `resume` mode, ms. */
const RETRY_MS = 500;

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
  /** Watches that ended or failed and were re-listed (with `resume`: watches answered 410). */
  relists: number;
  /** With `resume`: watches re-opened from their last resourceVersion without a LIST. */
  rewatches: number;
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
    rewatches: 0,
    retries: 0,
    errors: [],
  };
  let ready = false;
  let stopping = false;
  const sep = (p: string) => (p.includes('?') ? '&' : '?');

  /**
   * {@link listWatchOnce} until it succeeds, at most {@link ATTEMPTS} times, 1 s apart (with
   * `resume`, once ready: every {@link RETRY_MS} until the worker stops, as a reflector retries).
   */
  const listWatch = async (token: string, path: string): Promise<void> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await listWatchOnce(token, path);
      } catch (err) {
        if ((attempt >= ATTEMPTS && !(spec.resume && ready)) || stopping) throw err;
        r.retries++;
        await new Promise((res) => setTimeout(res, spec.resume ? RETRY_MS : 1000));
      }
    }
  };

  /** LIST then WATCH `path`; resolves once the watch is open; re-lists (or, with `resume`, re-watches) when it ends. */
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
    const watchHeaders = { ...headers, 'accept-encoding': 'identity' };
    if (spec.resume) return resumeWatch(token, path, watchHeaders, rv, true);
    const w = await request(
      `${spec.base}${path}${sep(path)}watch=1&allowWatchBookmarks=true&resourceVersion=${rv}`,
      { dispatcher, headers: watchHeaders },
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

  /** A 410: list again (in the background), as client-go's reflector. */
  const relist = (token: string, path: string) => {
    if (stopping) return;
    r.relists++;
    listWatch(token, path).catch((e: Error) => r.errors.push(e.message));
  };

  /**
   * `resume` mode: WATCH `path` from `rv`; resolves once the watch answered 200 (the first one
   * throws on another answer, for {@link listWatch} to retry); when the stream ends, re-opens it from
   * the last resourceVersion received, every {@link RETRY_MS} until it opens, in the background.
   */
  const resumeWatch = async (
    token: string,
    path: string,
    headers: Record<string, string>,
    from: string,
    first: boolean,
  ): Promise<void> => {
    let rv = from;
    for (;;) {
      if (stopping) return;
      let w: Awaited<ReturnType<typeof request>>;
      try {
        w = await request(
          `${spec.base}${path}${sep(path)}watch=1&allowWatchBookmarks=true&resourceVersion=${rv}`,
          { dispatcher, headers },
        );
      } catch (err) {
        if (first) throw err;
        r.retries++;
        await new Promise((res) => setTimeout(res, RETRY_MS));
        continue;
      }
      if (w.statusCode === 410 && !first) {
        await w.body.dump();
        return relist(token, path);
      }
      if (w.statusCode !== 200) {
        const body = (await w.body.text()).slice(0, 200);
        if (first) throw new Error(`WATCH ${path}: ${w.statusCode} ${body}`);
        r.retries++;
        await new Promise((res) => setTimeout(res, RETRY_MS));
        continue;
      }
      r.watches++;
      let buf = '';
      let gone = false;
      const ended = new Promise<void>((resolve) => {
        w.body.on('data', (chunk: Buffer) => {
          r.bytes += chunk.length;
          buf += chunk.toString();
          for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
            const line = buf.slice(0, nl);
            buf = buf.slice(nl + 1);
            const e = JSON.parse(line) as {
              type: string;
              object: { code?: number; metadata?: { resourceVersion?: string } };
            };
            if (e.type === 'ERROR') {
              if (e.object.code === 410) gone = true;
              continue;
            }
            rv = e.object.metadata?.resourceVersion ?? rv;
            if (!ready) continue;
            r.events++;
            r.eventsByPath[path] = (r.eventsByPath[path] ?? 0) + 1;
          }
        });
        w.body.once('end', () => resolve());
        w.body.once('error', () => resolve());
      });
      const reopen = ended.then(() => {
        if (stopping) return;
        if (gone) return relist(token, path);
        r.rewatches++;
        return resumeWatch(token, path, headers, rv, false);
      });
      if (first) {
        reopen.catch((e: Error) => r.errors.push(e.message));
        return;
      }
      return reopen;
    }
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
