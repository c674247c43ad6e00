import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Agent, type Dispatcher } from 'undici';
import {
  type AnswerTee,
  dispatchTeed,
  teeAnswers,
} from '../../../../src/server/read-your-writes/answer-tee.ts';

/** Dispatches GET `path` with `tee` and records, in order, what the tee and the handler below saw. */
function run(d: Dispatcher, origin: string, path: string, tee: AnswerTee, seen: string[]): Promise<void> {
  return new Promise((resolve) => {
    const handler: Dispatcher.DispatchHandler = {
      onResponseStart: (_c, status) => {
        seen.push(`start ${status}`);
      },
      onResponseData: (_c, chunk) => {
        seen.push(`data ${chunk.length}`);
      },
      onResponseEnd: () => {
        seen.push('end');
        resolve();
      },
      onResponseError: (_c, err) => {
        seen.push(`error ${err.message}`);
        resolve();
      },
    };
    dispatchTeed(d, { origin, path, method: 'GET' }, tee, handler);
  });
}

describe('the answer tee (read-your-writes): an undici dispatch interceptor', () => {
  let server: Server;
  let origin: string;
  const big = Buffer.alloc(100_000, 'x');
  /** `/held` is answered only when the test calls this (set once the request arrived). */
  let releaseHeld: (() => void) | undefined;
  let heldArrived: Promise<void> = Promise.resolve();
  let heldArrivedResolve: () => void = () => {};
  before(async () => {
    server = createServer((req, res) => {
      if (req.url === '/held') {
        releaseHeld = () =>
          res
            .writeHead(200, { 'content-type': 'application/json' })
            .end('{"metadata":{"resourceVersion":"9"}}');
        heldArrivedResolve();
        return;
      }
      if (req.url === '/missing') {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"kind":"Status"}');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      if (req.url === '/big') res.end(big);
      else res.end('{"metadata":{"resourceVersion":"7"}}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  for (const [name, make] of [
    ['composed onto the pool', (a: Agent) => teeAnswers(a)],
    ['a pool without the interceptor (the handler is wrapped instead)', (a: Agent) => a],
  ] as const) {
    it(`${name}: a 2xx answer reaches the tee whole before the handler sees a byte; a non-2xx is not teed`, async () => {
      const agent = new Agent();
      const d = make(agent);
      try {
        const seen: string[] = [];
        const tee: AnswerTee = {
          maxBytes: 64 * 1024,
          onAnswer: (body, complete, headers) =>
            seen.push(`tee ${body.length} ${complete} ${headers.contentType}`),
        };
        await run(d, origin, '/obj', tee, seen);
        assert.deepEqual(seen, ['start 200', 'tee 36 true application/json', 'data 36', 'end']);
        seen.length = 0;
        await run(d, origin, '/big', tee, seen);
        assert.equal(seen[0], 'start 200');
        assert.match(
          seen[1]!,
          /^tee \d+ false application\/json$/,
          'the first 64 KiB or more, before any data',
        );
        assert.ok(Number(seen[1]!.split(' ')[1]) > 64 * 1024);
        assert.equal(
          seen.filter((s) => s.startsWith('data')).reduce((n, s) => n + Number(s.split(' ')[1]), 0),
          big.length,
          'every byte reaches the handler once',
        );
        seen.length = 0;
        await run(d, origin, '/missing', tee, seen);
        assert.deepEqual(seen, ['start 404', 'data 17', 'end']);
      } finally {
        await agent.close();
      }
    });
  }

  it('issue 28: whether the answer is wanted is asked when its status line arrives, not when the request was sent (a cache may start serving meanwhile)', async () => {
    const agent = new Agent();
    try {
      for (const wantedAtAnswer of [true, false]) {
        heldArrived = new Promise((r) => {
          heldArrivedResolve = r;
        });
        let tracked = false;
        const asked: boolean[] = [];
        const seen: string[] = [];
        const tee: AnswerTee = {
          maxBytes: 1024,
          wanted: () => {
            asked.push(tracked);
            return tracked;
          },
          onAnswer: (body) => seen.push(`tee ${body.toString()}`),
        };
        const done = run(teeAnswers(agent), origin, '/held', tee, seen);
        await heldArrived;
        assert.deepEqual(asked, [], 'not asked while the upstream works on the request');
        // The cache is registered (or not) while the request is in flight.
        tracked = wantedAtAnswer;
        releaseHeld!();
        await done;
        assert.deepEqual(asked, [wantedAtAnswer], 'asked once, at the status line');
        assert.deepEqual(
          seen,
          wantedAtAnswer
            ? ['start 200', 'tee {"metadata":{"resourceVersion":"9"}}', 'data 36', 'end']
            : ['start 200', 'data 36', 'end'],
        );
      }
    } finally {
      await agent.close();
    }
  });

  it('a tee that throws fails the request once; the handler sees no byte', async () => {
    const agent = new Agent();
    try {
      const seen: string[] = [];
      await run(
        teeAnswers(agent),
        origin,
        '/obj',
        {
          maxBytes: 1024,
          onAnswer: () => {
            throw new Error('boom');
          },
        },
        seen,
      );
      // Give undici a chance to deliver a second error, which must be swallowed.
      await new Promise((r) => setImmediate(r));
      assert.deepEqual(seen, ['start 200', 'error boom']);
    } finally {
      await agent.close();
    }
  });
});
