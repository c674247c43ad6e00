/**
 * The snapshot of one cached resource (docs/design.md §3, "Snapshots and warm restart"): loaded
 * once at start (checked: format, checksum, name, scope, namespace, apiserver URL; a file that
 * fails is ignored with one warning, or deleted with a log line when it belongs elsewhere), and
 * written after the first sync, every `--snapshot-interval` and at shutdown.
 *
 * Cost of a write, and why serving never waits for it: the cache is captured synchronously as
 * references (one array of its entries and one of its window's events: O(objects), no bytes
 * copied); the bytes are then read, encoded and written one ~1 MiB chunk at a time with the
 * event loop free between two (`snapshot-file.ts`), so a request waits at most for one chunk's
 * encoding. At most one write per resource runs at a time; a write whose cache has not moved
 * since the last one is skipped. A failed write counts in `kube_cache_proxy_snapshot_writes_total`
 * and logs one warning; a full disk (ENOSPC, EDQUOT) stops this resource's snapshots for the
 * life of the process (result `disk_full`).
 */
import type { ResourceInfo } from '../apimachinery/gvr.ts';
import type { KubeObject, UpstreamObject } from '../apimachinery/object.ts';
import type { CacheCapture, RestoredCache } from '../cache/restored-cache.ts';
import { type Clock, realClock, type TimerHandle } from '../util/clock.ts';
import { type Logger, silentLogger } from '../util/logger.ts';
import { type IdentitySource, identityMismatch } from './apiserver-identity.ts';
import {
  deleteSnapshotFile,
  readSnapshotFile,
  SnapshotDirError,
  snapshotFileName,
  writeSnapshotFile,
} from './snapshot-file.ts';
import {
  type ApiserverIdentity,
  checkSnapshotPrefix,
  decodeSnapshot,
  encodeSnapshot,
  SNAPSHOT_PREFIX_BYTES,
  type SnapshotEvent,
  SnapshotFormatError,
  type SnapshotHeader,
  type SnapshotResource,
} from './snapshot-format.ts';

/** Outcome of loading a snapshot (the `result` label of `kube_cache_proxy_snapshot_loads_total`). */
export type SnapshotLoadResult = 'restored' | 'absent' | 'corrupt' | 'truncated' | 'version' | 'foreign';
/** Outcome of writing one (the `result` label of `kube_cache_proxy_snapshot_writes_total`). */
export type SnapshotWriteResult = 'ok' | 'error' | 'disk_full';

/** Counters of the snapshots (the ops layer's metrics). */
export interface SnapshotMetricsHooks {
  loaded(gr: { group: string; resource: string }, result: SnapshotLoadResult): void;
  written(
    gr: { group: string; resource: string },
    result: SnapshotWriteResult,
    bytes: number,
    seconds: number,
  ): void;
}

/** How long loading a snapshot waits for the upstream's identity before trusting the URL alone (ms). */
export const IDENTITY_WAIT_MS = 3_000;

/** What every resource's snapshot shares (`--snapshot-dir`, `--snapshot-interval`, the identity). */
export interface SnapshotSettings {
  dir: string;
  /** ms between two writes. */
  intervalMs: number;
  identity: Pick<IdentitySource, 'server' | 'known' | 'get'>;
  metrics?: SnapshotMetricsHooks;
  clock?: Clock;
  logger?: Logger;
}

/** A loaded snapshot, ready to restore. */
export interface LoadedSnapshot {
  header: SnapshotHeader;
  /** The resource as discovered when it was taken (scope and namespace as now). */
  info: ResourceInfo;
  state: RestoredCache;
}

/** The cache as the writer sees it. */
export interface SnapshotTarget {
  capture(): CacheCapture | undefined;
  /** Served from a snapshot not yet proven (its state is the file's: nothing to write). */
  stats(): { restoredFromMs: number | null };
}

/** See the module comment. */
export class ResourceSnapshot {
  readonly #s: SettingsWithDefaults;
  readonly #name: string;
  readonly #scope: string;
  readonly #file: string;
  #gr = { group: '', resource: '' };
  #target: { cache: SnapshotTarget; info: ResourceInfo } | undefined;
  #timer: TimerHandle | undefined;
  #writing: Promise<void> | undefined;
  #lastRV: bigint | undefined;
  #stopped = false;

  /** `name`: the cache entry's; `scope`: its `scopeString` ("" for the whole resource). */
  constructor(s: SnapshotSettings, name: string, scope: string) {
    this.#s = { ...s, clock: s.clock ?? realClock, logger: s.logger ?? silentLogger };
    this.#name = name;
    this.#scope = scope;
    this.#file = snapshotFileName(name, scope);
  }

  /** The file's name in the snapshot directory. */
  get file(): string {
    return this.#file;
  }

  /**
   * The snapshot, when there is one this proxy may serve: same entry name, scope and namespace
   * (`namespace`: the one `--namespace` would give a namespaced resource), same apiserver URL.
   * Another's is deleted with a log line; an unreadable one (truncated, corrupt, another format
   * version) ignored with one warning and deleted (the next write replaces it). Never throws.
   */
  async load(namespace: string | undefined): Promise<LoadedSnapshot | undefined> {
    const log = this.#s.logger.child({
      resource: this.#name,
      ...(this.#scope ? { scope: this.#scope } : {}),
    });
    let bytes: Buffer | undefined;
    try {
      bytes = await readSnapshotFile(this.#s.dir, this.#file, {
        bytes: SNAPSHOT_PREFIX_BYTES,
        check: checkSnapshotPrefix,
      });
    } catch (err) {
      if (err instanceof SnapshotFormatError) return this.#unreadable(log, err);
      log.warn(
        { file: this.#file, err: (err as Error).message },
        "snapshot refused and deleted: not the proxy's own file",
      );
      await deleteSnapshotFile(this.#s.dir, this.#file);
      this.#loaded('foreign');
      return undefined;
    }
    if (!bytes) {
      this.#loaded('absent');
      return undefined;
    }
    try {
      const data = decodeSnapshot(bytes);
      const h = data.header;
      this.#gr = { group: h.resource.group, resource: h.resource.resource };
      const ns = h.resource.namespaced ? namespace : undefined;
      const foreign =
        h.name !== this.#name
          ? `entry ${h.name}`
          : h.scope !== this.#scope
            ? `scope "${h.scope}"`
            : h.resource.namespace !== ns
              ? `namespace ${h.resource.namespace ?? '(all)'}`
              : identityMismatch(h.identity, await this.#identityNow());
      if (foreign !== undefined) {
        log.warn(
          { file: this.#file, snapshot: foreign },
          'snapshot of another apiserver or scope refused and deleted',
        );
        await deleteSnapshotFile(this.#s.dir, this.#file);
        this.#loaded('foreign');
        return undefined;
      }
      const state: RestoredCache = {
        resourceVersion: BigInt(h.resourceVersion),
        windowStart: BigInt(h.windowStart),
        objects: data.objects.map(parsed),
        events: data.events.map((e) => ({
          type: e.type,
          at: e.at,
          cur: parsed(e.cur),
          prev: e.prev && parsed(e.prev),
        })),
      };
      this.#lastRV = state.resourceVersion;
      this.#loaded('restored');
      log.info(
        {
          file: this.#file,
          resourceVersion: h.resourceVersion,
          objects: h.objects,
          events: h.events,
          ageMs: this.#s.clock.now() - h.takenAtMs,
        },
        'snapshot loaded: served as not live until the upstream accepts a watch from its resourceVersion',
      );
      return { header: h, info: resourceInfo(h.resource), state };
    } catch (err) {
      return this.#unreadable(log, err);
    }
  }

  /**
   * The upstream's identity for the load-time check, so a snapshot of another cluster at the same
   * URL is refused before anything of it is served (requests are held while snapshots load): the
   * one request shared by every resource, waited for at most {@link IDENTITY_WAIT_MS}; the URL
   * alone when the upstream cannot answer by then (a start during an outage serves the snapshot,
   * and the resume check asks again before the watch resumes).
   */
  async #identityNow(): Promise<ApiserverIdentity> {
    const server = this.#s.identity.server;
    const known = this.#s.identity.known();
    if (known) return { server, kubeSystemUID: known.kubeSystemUID };
    const urlOnly: ApiserverIdentity = { server, kubeSystemUID: null };
    let timer: TimerHandle | undefined;
    const late = new Promise<ApiserverIdentity>((resolve) => {
      timer = this.#s.clock.setTimeout(() => resolve(urlOnly), IDENTITY_WAIT_MS);
    });
    try {
      const now = await Promise.race([this.#s.identity.get().catch(() => urlOnly), late]);
      return { server, kubeSystemUID: now.kubeSystemUID };
    } finally {
      if (timer !== undefined) this.#s.clock.clearTimeout(timer);
    }
  }

  /** An unreadable file: one warning, deleted, the resource listed from the upstream. */
  async #unreadable(log: Logger, err: unknown): Promise<undefined> {
    const fault = err instanceof SnapshotFormatError ? err.fault : 'corrupt';
    log.warn(
      { file: this.#file, fault, err: (err as Error).message },
      'snapshot unreadable: ignored and deleted, the resource is listed from the upstream',
    );
    await deleteSnapshotFile(this.#s.dir, this.#file);
    this.#loaded(fault);
    return undefined;
  }

  /** Deletes the file (a snapshot the upstream refused: another apiserver, an RV ahead of it). */
  async discard(reason: string): Promise<void> {
    this.#s.logger.warn(
      { resource: this.#name, file: this.#file, reason },
      'snapshot refused and deleted: the resource is listed from the upstream',
    );
    this.#lastRV = undefined;
    await deleteSnapshotFile(this.#s.dir, this.#file);
  }

  /** Starts writing `cache` every interval. */
  start(cache: SnapshotTarget, info: ResourceInfo): void {
    this.#target = { cache, info };
    this.#gr = { group: info.gvr.group, resource: info.gvr.resource };
    if (this.#timer === undefined && !this.#stopped) this.#schedule();
  }

  #schedule(): void {
    this.#timer = this.#s.clock.setTimeout(() => {
      void this.write().then(() => {
        if (this.#timer !== undefined && !this.#stopped) this.#schedule();
      });
    }, this.#s.intervalMs);
  }

  /** Writes now (after the first sync), unless a write runs, the cache did not move or snapshots stopped. */
  write(): Promise<void> {
    this.#writing ??= this.#write().finally(() => {
      this.#writing = undefined;
    });
    return this.#writing;
  }

  /** The last write (shutdown): waits for one under way, then writes what changed since; stops the timer. */
  async final(): Promise<void> {
    this.#clearTimer();
    await this.#writing;
    await this.write();
    this.#stopped = true;
  }

  /** Stops the timer without writing. */
  stop(): void {
    this.#clearTimer();
    this.#stopped = true;
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) this.#s.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  async #write(): Promise<void> {
    const t = this.#target;
    if (this.#stopped || !t || t.cache.stats().restoredFromMs !== null) return;
    const identity = this.#s.identity.known();
    if (!identity) return;
    const c = t.cache.capture();
    if (!c || c.resourceVersion === this.#lastRV) return;
    const started = this.#s.clock.now();
    const header: SnapshotHeader = {
      name: this.#name,
      scope: this.#scope,
      resource: snapshotResource(t.info),
      identity,
      resourceVersion: String(c.resourceVersion),
      windowStart: String(c.windowStart),
      takenAtMs: started,
      objects: c.entries.length,
      events: c.events.length,
    };
    try {
      const bytes = await writeSnapshotFile(
        this.#s.dir,
        this.#file,
        encodeSnapshot({ header, objects: rawsOf(c), events: eventsOf(c) }),
      );
      this.#lastRV = c.resourceVersion;
      this.#s.metrics?.written(this.#gr, 'ok', bytes, (this.#s.clock.now() - started) / 1000);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      const full = code === 'ENOSPC' || code === 'EDQUOT';
      this.#s.metrics?.written(
        this.#gr,
        full ? 'disk_full' : 'error',
        0,
        (this.#s.clock.now() - started) / 1000,
      );
      if (full) this.stop();
      this.#s.logger.warn(
        {
          resource: this.#name,
          file: this.#file,
          err: err instanceof SnapshotDirError ? err.message : (err as Error).message,
        },
        full
          ? 'snapshot write failed: disk full; snapshots of this resource stopped (serving goes on)'
          : 'snapshot write failed; the previous snapshot is kept',
      );
    }
  }

  #loaded(result: SnapshotLoadResult): void {
    this.#s.metrics?.loaded({ group: this.#gr.group, resource: this.#gr.resource || this.#name }, result);
  }
}

type SettingsWithDefaults = SnapshotSettings & { clock: Clock; logger: Logger };

function parsed(raw: Buffer): UpstreamObject {
  return { raw, object: JSON.parse(raw.toString('utf8')) as KubeObject };
}

/** Each object's bytes, read when the encoder gets to it. */
function* rawsOf(c: CacheCapture): Generator<Buffer> {
  for (const e of c.entries) yield e.raw;
}

/** The window's events; an event's replaced state only when no earlier event of the window holds it. */
function* eventsOf(c: CacheCapture): Generator<SnapshotEvent> {
  const seen = new Set<string>();
  for (const e of c.events) {
    const key = e.cur.key;
    const prev = e.prev && !seen.has(key) ? e.prev.raw : undefined;
    seen.add(key);
    yield { type: e.type, at: e.at, cur: e.cur.raw, prev };
  }
}

function snapshotResource(info: ResourceInfo): SnapshotResource {
  return {
    ...info.gvr,
    kind: info.kind,
    listKind: info.listKind,
    apiVersion: info.apiVersion,
    namespaced: info.namespaced,
    verbs: [...info.verbs],
    builtIn: info.builtIn,
    ...(info.namespace !== undefined ? { namespace: info.namespace } : {}),
  };
}

function resourceInfo(r: SnapshotResource): ResourceInfo {
  return {
    gvr: { group: r.group, version: r.version, resource: r.resource },
    kind: r.kind,
    listKind: r.listKind,
    apiVersion: r.apiVersion,
    namespaced: r.namespaced,
    verbs: [...r.verbs],
    builtIn: r.builtIn,
    ...(r.namespace !== undefined ? { namespace: r.namespace } : {}),
  };
}
