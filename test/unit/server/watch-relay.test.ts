import assert from 'node:assert/strict';
import { createServer, get, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import {
  encodeObjectMessage,
  objectAnswer,
  watchFrame,
} from '../../../src/apimachinery/protobuf/envelope.ts';
import type { WatchFraming } from '../../../src/apimachinery/watch-framing.ts';
import { WatchRelay } from '../../../src/server/watch-relay.ts';
import { FakeClock } from '../../support/fake-clock.ts';
import { logLines } from '../../support/log-lines.ts';

/** An upstream body the test feeds chunk by chunk. */
class Feed implements AsyncIterable<Uint8Array> {
  readonly #queue: (Uint8Array | null)[] = [];
  #wake: (() => void) | undefined;
  aborted = false;
  push(chunk: string | Uint8Array | null): void {
    this.#queue.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
    this.#wake?.();
  }
  abort(): void {
    this.aborted = true;
    this.#wake?.();
  }
  async *[Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    for (;;) {
      if (this.aborted) throw new Error('aborted');
      const next = this.#queue.shift();
      if (next === null) return;
      if (next) {
        yield next;
        continue;
      }
      await new Promise<void>((r) => {
        this.#wake = r;
      });
    }
  }
}

interface Case {
  feed: Feed;
  relay: WatchRelay;
  /** Everything the client received, once the response ended. */
  body: Promise<string>;
  /** Resolves once the client has `n` bytes. */
  received(n: number): Promise<void>;
}

describe('WatchRelay: the on-demand handover ends a watch at an event boundary', () => {
  let server: Server;
  let base: string;
  const { logger: log, lines: logs } = logLines<{ msg: string; waitMs?: number }>();
  let next: (relay: WatchRelay) => void;
  let framing: WatchFraming | undefined;
  let feed: Feed;
  let waitMs = 5_000;
  /** 0 for the tests of the event boundary; the short-watch tests set it. */
  let minWatchMs = 0;
  /** The relays' time: the waits are stepped, never slept. */
  let clock = new FakeClock();

  before(async () => {
    server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.flushHeaders();
      const f = feed;
      const relay = new WatchRelay(res, {
        abortUpstream: () => f.abort(),
        log,
        url: '/w',
        waitMs,
        minWatchMs,
        clock,
      });
      next(relay);
      relay.start(framing);
      void relay
        .pump(f)
        .catch(() => {})
        .then(() => {
          if (!relay.ended && !res.destroyed) res.end();
        });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => server.close());

  /** Opens a watch relayed with `f` (framing, optional handover before the head). */
  async function open(f: WatchFraming | undefined, early = false): Promise<Case> {
    framing = f;
    clock = new FakeClock();
    feed = new Feed();
    const relay = await new Promise<WatchRelay>((resolve) => {
      next = (r) => {
        if (early) r.handover();
        resolve(r);
      };
      get(`${base}/w`, (res: IncomingMessage) => onRes(res)).on('error', () => {});
    });
    let chunks = '';
    const waiters: { n: number; r: () => void }[] = [];
    let endBody!: (s: string) => void;
    const body = new Promise<string>((r) => {
      endBody = r;
    });
    function onRes(res: IncomingMessage) {
      res.on('data', (c: Buffer) => {
        chunks += c.toString('latin1');
        for (const w of waiters.splice(0))
          if (chunks.length >= w.n) w.r();
          else waiters.push(w);
      });
      res.on('end', () => endBody(chunks));
    }
    return {
      feed,
      relay,
      body,
      received: (n) =>
        new Promise<void>((r) => {
          if (chunks.length >= n) r();
          else waiters.push({ n, r });
        }),
    };
  }

  const e1 = '{"type":"ADDED","object":{"metadata":{"name":"one"}}}\n';
  const e2 = '{"type":"ADDED","object":{"metadata":{"name":"two"}}}\n';

  it('on a boundary: ends at once, after the events written; the upstream read stops', async () => {
    const c = await open('json-lines');
    c.feed.push(e1 + e2);
    await c.received((e1 + e2).length);
    c.relay.handover();
    assert.equal(await c.body, e1 + e2);
    assert.equal(c.feed.aborted, true);
    assert.equal(c.relay.ended, true);
  });

  it('mid-event: waits for it to complete, writes up to its newline, drops what follows', async () => {
    const c = await open('json-lines');
    c.feed.push(e1 + e2.slice(0, 12));
    await c.received(e1.length + 12);
    c.relay.handover();
    assert.equal(c.relay.ended, false, 'an event is in flight');
    c.feed.push(e2.slice(12, 30));
    c.feed.push(`${e2.slice(30)}${e1}{"type":"MOD`);
    const body = await c.body;
    assert.equal(body, e1 + e2);
    assert.deepEqual(
      body
        .split('\n')
        .filter(Boolean)
        .map((l) => (JSON.parse(l) as { object: { metadata: { name: string } } }).object.metadata.name),
      ['one', 'two'],
    );
  });

  it('mid-event and it never completes: ends anyway after the bounded wait, with a warning', async () => {
    waitMs = 150;
    try {
      const c = await open('json-lines');
      c.feed.push(e1 + e2.slice(0, 12));
      await c.received(e1.length + 12);
      c.relay.handover();
      await clock.step(149);
      assert.equal(c.relay.ended, false, 'still waiting for the event in flight');
      await clock.step(1);
      assert.equal(c.relay.ended, true);
      assert.equal(await c.body, e1 + e2.slice(0, 12));
      assert.ok(logs.some((l) => l.msg.includes('did not complete in time') && l.waitMs === 150));
    } finally {
      waitMs = 5_000;
    }
  });

  it('protobuf: a frame split across chunks, its length header too, ends right after it', async () => {
    const frame = (n: number, fill: number) => {
      const b = Buffer.alloc(4 + n, fill);
      b.writeUInt32BE(n);
      return b;
    };
    const f1 = frame(10, 1);
    const f2 = frame(300, 2);
    const c = await open('length-prefixed');
    c.feed.push(Buffer.concat([f1, f2.subarray(0, 2)]));
    await c.received(f1.length + 2);
    c.relay.handover();
    c.feed.push(f2.subarray(2, 100));
    c.feed.push(Buffer.concat([f2.subarray(100), f1]));
    const body = Buffer.from(await c.body, 'latin1');
    assert.deepEqual(body, Buffer.concat([f1, f2]));
  });

  it('lastResourceVersion: the RV of the last complete JSON event, read from its head across chunks', async () => {
    const c = await open('json-lines');
    assert.equal(c.relay.lastResourceVersion(), undefined, 'no event yet');
    const pod = (rv: string) =>
      `{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"n","uid":"u","resourceVersion":"${rv}"},"spec":{}}}\n`;
    const a = pod('41');
    c.feed.push(a.slice(0, 70));
    await c.received(70);
    assert.equal(c.relay.lastResourceVersion(), undefined, 'the event is not complete');
    c.feed.push(a.slice(70) + pod('45').slice(0, 90));
    await c.received(a.length + 90);
    assert.equal(c.relay.lastResourceVersion(), 41n, 'the last COMPLETE event');
    c.feed.push(
      `${pod('45').slice(90)}{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"52"}}}\n`,
    );
    await c.received(a.length + pod('45').length + 10);
    c.feed.push(null);
    await c.body;
    assert.equal(c.relay.lastResourceVersion(), 52n, 'a BOOKMARK counts');
  });

  it('lastResourceVersion: the RV of the last complete protobuf frame (WatchEvent → RawExtension → object)', async () => {
    const pod = (rv: string) =>
      watchFrame(
        'MODIFIED',
        objectAnswer(
          'v1',
          'Pod',
          encodeObjectMessage(
            'v1',
            'Pod',
            JSON.stringify({ metadata: { name: 'p', namespace: 'n', uid: 'u', resourceVersion: rv } }),
          ),
        ),
      );
    const f1 = pod('1234');
    const f2 = pod('1240');
    const c = await open('length-prefixed');
    c.feed.push(Buffer.concat([f1, f2.subarray(0, 3)]));
    await c.received(f1.length + 3);
    assert.equal(c.relay.lastResourceVersion(), 1234n);
    c.feed.push(f2.subarray(3));
    c.feed.push(null);
    await c.body;
    assert.equal(c.relay.lastResourceVersion(), 1240n);
  });

  it('asked before the head: ends as soon as the framing is known (an empty, whole body)', async () => {
    const c = await open('json-lines', true);
    assert.equal(await c.body, '');
    assert.equal(c.relay.ended, true);
  });

  it('unknown framing: a handover leaves the stream alone; it ends by itself', async () => {
    const c = await open(undefined);
    c.feed.push('a');
    await c.received(1);
    c.relay.handover();
    c.feed.push('bc');
    c.feed.push(null);
    assert.equal(await c.body, 'abc');
    assert.equal(c.relay.ended, false);
    assert.equal(c.feed.aborted, false);
  });

  it('no handover: every chunk is relayed until the upstream body ends', async () => {
    const c = await open('json-lines');
    c.feed.push(e1.slice(0, 5));
    c.feed.push(e1.slice(5) + e2);
    c.feed.push(null);
    assert.equal(await c.body, e1 + e2);
    assert.equal(c.relay.ended, false);
  });

  describe('no "very short watch" for client-go (reflector.go: < 1 s and no event)', () => {
    const bookmark =
      '{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"9","annotations":{"k8s.io/initial-events-end":"true"}}}}\n';
    const pbFrame = (t: string) => {
      const payload = Buffer.concat([
        Buffer.from([0x0a, t.length]),
        Buffer.from(t),
        Buffer.from([0x12, 3, 1, 2, 3]),
      ]);
      const head = Buffer.alloc(4);
      head.writeUInt32BE(payload.length);
      return Buffer.concat([head, payload]);
    };
    const MIN = 400;
    before(() => {
      minWatchMs = MIN;
    });
    after(() => {
      minWatchMs = 0;
    });

    it('a handover right after the watch opened, no event: ends only MIN ms after the open, empty', async () => {
      const c = await open('json-lines', true);
      assert.equal(c.relay.ended, false, 'too soon');
      await clock.step(MIN - 1);
      assert.equal(c.relay.ended, false, 'still too soon');
      await clock.step(1);
      assert.equal(c.relay.ended, true);
      assert.equal(await c.body, '');
      assert.equal(c.feed.aborted, true);
    });

    it('an event was relayed since the open: ends at once', async () => {
      const c = await open('json-lines');
      c.feed.push(e1);
      await c.received(e1.length);
      c.relay.handover();
      assert.equal(c.relay.ended, true, 'at once: no time passed');
      assert.equal(await c.body, e1);
    });

    it('watch-list: initial events, then the initial-events-end BOOKMARK: ends MIN ms after the bookmark', async () => {
      const c = await open('json-lines');
      c.feed.push(e1 + e2);
      await c.received((e1 + e2).length);
      await clock.step(MIN + 50); // the open is long past
      c.feed.push(bookmark);
      await c.received((e1 + e2 + bookmark).length);
      c.relay.handover();
      assert.equal(c.relay.ended, false, 'right after the bookmark: too soon');
      await clock.step(MIN - 1);
      assert.equal(c.relay.ended, false, 'still too soon');
      await clock.step(1);
      assert.equal(c.relay.ended, true, 'MIN ms after the bookmark');
      assert.equal(await c.body, e1 + e2 + bookmark);
    });

    it('an event relayed during the wait ends the watch right after it, at its boundary', async () => {
      const c = await open('json-lines');
      c.feed.push(bookmark);
      await c.received(bookmark.length);
      c.relay.handover();
      c.feed.push(e1.slice(0, 10));
      c.feed.push(`${e1.slice(10)}${e2.slice(0, 7)}`);
      // The clock never moves: the event, not the wait, ended the watch.
      assert.equal(await c.body, bookmark + e1);
      assert.equal(clock.pending(), 0, 'the wait was cancelled');
    });

    it('a BOOKMARK completing while the handover waits for the event in flight: waits MIN ms more', async () => {
      const c = await open('json-lines');
      c.feed.push(e1 + bookmark.slice(0, 20));
      await c.received(e1.length + 20);
      c.relay.handover(); // an event came since the open: may end, at the next boundary
      c.feed.push(bookmark.slice(20));
      await c.received((e1 + bookmark).length);
      assert.equal(c.relay.ended, false, 'that boundary follows a bookmark: waits');
      assert.deepEqual(clock.pendingDelays(), [MIN], 'the MIN wait, the cut timer replaced');
      await clock.step(MIN);
      assert.equal(c.relay.ended, true);
      assert.equal(await c.body, e1 + bookmark);
    });

    it('protobuf: a BOOKMARK frame (0x0a 0x08 "BOOKMARK") restarts the wait, an ADDED frame ends it', async () => {
      const c = await open('length-prefixed');
      const bm = pbFrame('BOOKMARK');
      const ad = pbFrame('ADDED');
      c.feed.push(bm);
      await c.received(bm.length);
      c.relay.handover();
      await clock.step(MIN - 1);
      assert.equal(c.relay.ended, false, 'after a bookmark: too soon');
      c.feed.push(Buffer.concat([ad, bm]));
      assert.deepEqual(Buffer.from(await c.body, 'latin1'), Buffer.concat([bm, ad]));
    });
  });
});
