/**
 * The part of undici the proxy runs: its dispatchers (`Agent` and the `Pool`/`Client` it makes)
 * and the Dispatcher API (`request`, `stream`, `pipeline`, `upgrade`, `connect`), without the
 * rest of undici's index (issue 12, idle RSS).
 *
 * `undici/index.js` requires every module of the package at load time: fetch and its WebIDL
 * layer, WebSocket, EventSource, CacheStorage, the SQLite cache store, the mock agents, the
 * proxy agents. The proxy uses none of them, and they cost ~12 MiB of RSS (~2.8 MiB of heap)
 * in every process (bench/tools/startup-rss.ts; measured: node:http + node:https + full undici 69.9
 * MiB, + these modules only 57.8 MiB, two runs each). This module requires the same files
 * index.js does for `Agent` and the Dispatcher API, and does the one thing index.js does with
 * them (`Object.assign(Dispatcher.prototype, api)`, undici 8 index.js), so the classes are
 * undici's own (the same objects as `require('undici').Agent` when both are loaded). Types come
 * from `undici` (type-only imports). undici has no `exports` map; the paths are checked by
 * test/unit/upstream/undici-core.test.ts against the installed version.
 */
import { createRequire } from 'node:module';
import type * as Undici from 'undici';
import { DependencyMissingError } from '../util/errors.ts';

const requireModule = createRequire(import.meta.url);

/**
 * `require(path)` of undici's files; a missing undici (the bundled CLI run without its package's
 * `node_modules`) throws {@link DependencyMissingError}, the module not found as `cause`.
 */
function require(path: string): unknown {
  try {
    return requireModule(path);
  } catch (err) {
    if ((err as { code?: string }).code !== 'MODULE_NOT_FOUND') throw err;
    throw new DependencyMissingError(
      `cannot load ${path}: kube-cache-proxy needs its production dependencies in a node_modules beside dist/ or above it (npm ci --omit=dev)`,
      { cause: err },
    );
  }
}

const DispatcherClass = require('undici/lib/dispatcher/dispatcher') as typeof Undici.Dispatcher;
Object.assign(DispatcherClass.prototype, require('undici/lib/api'));

/** undici's `Dispatcher` base class (with the Dispatcher API), for dispatchers of our own. */
export const Dispatcher = DispatcherClass;

/** undici's `Agent` (one pool per origin). */
export const Agent = require('undici/lib/dispatcher/agent') as typeof Undici.Agent;

/**
 * undici's `ProxyAgent` (client-node's config.js builds one for a kubeconfig `proxy-url`;
 * +0.2 MiB of RSS, so loaded with the rest).
 */
export const ProxyAgent = require('undici/lib/dispatcher/proxy-agent') as typeof Undici.ProxyAgent;

/** Options of {@link request}: undici's request options without `origin`/`path`, and the dispatcher. */
export type RequestOptions = Omit<Undici.Dispatcher.RequestOptions, 'origin' | 'path' | 'method'> & {
  method?: Undici.Dispatcher.HttpMethod;
  dispatcher: Undici.Dispatcher;
};

/**
 * `dispatcher.request` for an absolute URL (`https://host:port/path?query`): what undici's
 * top-level `request(url, { dispatcher })` does, always on the given dispatcher (there is no
 * global one here). Method defaults to GET. Resolves to undici's `ResponseData`; rejects with
 * undici's errors (and `TypeError` for an invalid URL).
 */
export function request(url: string, opts: RequestOptions): Promise<Undici.Dispatcher.ResponseData> {
  const u = new URL(url);
  const { dispatcher, ...rest } = opts;
  return dispatcher.request({
    ...rest,
    method: opts.method ?? 'GET',
    origin: u.origin,
    path: `${u.pathname}${u.search}`,
  });
}
