import assert from 'node:assert/strict';
import type { ResourceInfo } from '../../src/apimachinery/gvr.ts';
import type { KubeObject, UpstreamObject } from '../../src/apimachinery/object.ts';
import type { CacheSink } from '../../src/reflector/cache-sink.ts';
import type {
  ListerWatcher,
  ListOptions,
  WatchOptions,
  WatchStream,
} from '../../src/reflector/list-watch.ts';
import { Reflector, type ReflectorOptions } from '../../src/reflector/reflector.ts';
import type { DecodedList, WatchEvent, WatchEventType } from '../../src/reflector/watch-decoder.ts';
import { FakeClock, flushMicrotasks } from './fake-clock.ts';
import { resourceInfo } from './resource-info.ts';

export const configMapInfo: ResourceInfo = resourceInfo('v1', 'configmaps', 'ConfigMap');

/** A ConfigMap `ns/name` at `rv`. */
export function cm(name: string, rv: string | number, extra: Partial<KubeObject> = {}): UpstreamObject {
  const object: KubeObject = {
    kind: 'ConfigMap',
    apiVersion: 'v1',
    metadata: { name, namespace: 'ns', resourceVersion: String(rv) },
    ...extra,
  };
  return { raw: Buffer.from(JSON.stringify(object)), object };
}

export function bookmark(rv: string | number, initialEventsEnd = false): WatchEvent {
  const object: KubeObject = {
    kind: 'ConfigMap',
    apiVersion: 'v1',
    metadata: {
      name: '',
      resourceVersion: String(rv),
      ...(initialEventsEnd ? { annotations: { 'k8s.io/initial-events-end': 'true' } } : {}),
    },
  };
  return { type: 'BOOKMARK', object: { raw: Buffer.from(JSON.stringify(object)), object } };
}

export function ev(type: WatchEventType, o: UpstreamObject): WatchEvent {
  return { type, object: o };
}

export function errorEvent(code: number, reason: string, message = reason): WatchEvent {
  const object = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', code, reason, message };
  return {
    type: 'ERROR',
    object: { raw: Buffer.from(JSON.stringify(object)), object: object as unknown as KubeObject },
  };
}

/** A watch stream the test feeds. */
export class FakeStream implements WatchStream {
  closed = false;
  #queue: Array<{ ev?: WatchEvent; err?: unknown; end?: true }> = [];
  #waiter: (() => void) | undefined;

  push(...events: WatchEvent[]): this {
    for (const e of events) this.#queue.push({ ev: e });
    this.#wake();
    return this;
  }
  end(): this {
    this.#queue.push({ end: true });
    this.#wake();
    return this;
  }
  fail(err: unknown): this {
    this.#queue.push({ err });
    this.#wake();
    return this;
  }
  #wake() {
    const w = this.#waiter;
    this.#waiter = undefined;
    w?.();
  }
  async next(): Promise<WatchEvent | undefined> {
    for (;;) {
      if (this.closed) throw new Error('stream closed');
      const item = this.#queue.shift();
      if (item) {
        if (item.err) throw item.err;
        if (item.end) return undefined;
        return item.ev;
      }
      await new Promise<void>((r) => {
        this.#waiter = r;
      });
    }
  }
  close(): void {
    this.closed = true;
    this.#wake();
  }
}

type Responder<T> = T | Error | ((opts: never) => T | Error);

/**
 * A scripted ListerWatcher: answers are queued with `listReturns` / `watchReturns` and consumed
 * in order; a call with nothing queued waits until something is queued. Every call is recorded.
 */
export class FakeListerWatcher implements ListerWatcher {
  lists: ListOptions[] = [];
  watches: WatchOptions[] = [];
  #listQ: Responder<DecodedList>[] = [];
  #watchQ: Responder<FakeStream>[] = [];
  #waiters: Array<() => void> = [];

  listReturns(...r: Responder<DecodedList>[]): this {
    this.#listQ.push(...r);
    this.#wake();
    return this;
  }
  watchReturns(...r: Responder<FakeStream>[]): this {
    this.#watchQ.push(...r);
    this.#wake();
    return this;
  }
  #wake() {
    const ws = this.#waiters;
    this.#waiters = [];
    for (const w of ws) w();
  }
  async #take<T>(q: Responder<T>[], opts: unknown, signal?: AbortSignal): Promise<T> {
    while (q.length === 0) {
      if (signal?.aborted) throw signal.reason;
      await new Promise<void>((r) => {
        this.#waiters.push(r);
        signal?.addEventListener('abort', () => r(), { once: true });
      });
    }
    const first = q.shift()!;
    const r: unknown = typeof first === 'function' ? (first as (o: unknown) => T | Error)(opts) : first;
    if (r instanceof Error) throw r;
    return r as T;
  }
  list(opts: ListOptions, signal?: AbortSignal): Promise<DecodedList> {
    this.lists.push({ ...opts });
    return this.#take(this.#listQ, opts, signal);
  }
  watch(opts: WatchOptions, signal?: AbortSignal): Promise<WatchStream> {
    this.watches.push({ ...opts });
    return this.#take(this.#watchQ, opts, signal);
  }
}

export function page(rv: string, items: UpstreamObject[], cont = ''): DecodedList {
  return { resourceVersion: rv, continue: cont, items };
}

function short(o: UpstreamObject): string {
  return `${o.object.metadata.name}@${o.object.metadata.resourceVersion}`;
}

/** Records every sink call as a short string, e.g. `replace[a@10,b@20]@40`, `update a@41`. */
/** A {@link CacheSink} that drops everything (for tests about what happens around the cache). */
export function noopSink(): CacheSink {
  return {
    replace() {},
    add() {},
    update() {},
    delete() {},
    bookmark() {},
    setLive() {},
  } as unknown as CacheSink;
}

export class RecordingSink implements CacheSink {
  calls: string[] = [];
  replace(objects: UpstreamObject[], resourceVersion: string): void {
    this.calls.push(`replace[${objects.map(short).join(',')}]@${resourceVersion}`);
  }
  add(obj: UpstreamObject): void {
    this.calls.push(`add ${short(obj)}`);
  }
  update(obj: UpstreamObject): void {
    this.calls.push(`update ${short(obj)}`);
  }
  delete(obj: UpstreamObject): void {
    this.calls.push(`delete ${short(obj)}`);
  }
  bookmark(resourceVersion: string): void {
    this.calls.push(`bookmark ${resourceVersion}`);
  }
  setLive(live: boolean): void {
    this.calls.push(`live ${live}`);
  }
}

/**
 * A running Reflector on a FakeClock, a FakeListerWatcher and a RecordingSink (random 0.5, so
 * watch timeouts are 450 s and backoffs 1.2 s, 2.4 s, …). `finish()` stops it and checks that no
 * timer is left behind.
 */
export function setup(opts: Partial<ReflectorOptions> = {}) {
  const clock = new FakeClock();
  const lw = new FakeListerWatcher();
  const sink = new RecordingSink();
  const r = new Reflector({ info: configMapInfo, lw, sink, clock, random: () => 0.5, ...opts });
  const done = r.run();
  return {
    clock,
    lw,
    sink,
    r,
    flush: () => flushMicrotasks(50),
    async finish() {
      r.stop();
      await done;
      assert.equal(clock.pending(), 0, 'no timer left behind');
    },
  };
}

/** {@link setup} without watch-list, synced by a LIST at RV 100 (`a@90`); `s` is its live stream. */
export async function synced(opts: Partial<ReflectorOptions> = {}) {
  const t = setup({ useWatchList: false, ...opts });
  t.lw.listReturns(page('100', [cm('a', 90)]));
  const s = new FakeStream();
  t.lw.watchReturns(s);
  await t.flush();
  return { ...t, s };
}

/** The watch-list request at `rv` as the reflector sends it (timeout 450 s with random 0.5). */
export const watchList = (rv: string) => ({
  resourceVersion: rv,
  allowWatchBookmarks: true,
  sendInitialEvents: true,
  resourceVersionMatch: 'NotOlderThan',
  timeoutSeconds: 450,
});

/** A plain watch request from `rv`. */
export const plainWatch = (rv: string) => ({
  resourceVersion: rv,
  allowWatchBookmarks: true,
  timeoutSeconds: 450,
});
