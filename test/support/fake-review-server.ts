/**
 * A scripted apiserver for the review endpoints (TokenReview, SubjectAccessReview,
 * SelfSubjectReview): plain HTTP on 127.0.0.1, every POST body recorded, answered by the test's
 * `answer` (status code + JSON). For unit tests of `src/auth/`.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import type { ReviewUpstream } from '../../src/auth/review-client.ts';

/** One recorded review request. */
export interface ReviewCall {
  path: string;
  authorization: string | undefined;
  body: { spec?: Record<string, unknown> } & Record<string, unknown>;
}

/** A request held by a frozen fake ({@link FakeReviewServer.hold}). */
export interface HeldReview {
  call: ReviewCall;
  /** Answers it now with `answer` (the server woke up). */
  release(): void;
  /** Closes its connection without an answer (what the client sees when its timeout fires). */
  drop(): void;
}

/** The fake, usable as a {@link ReviewUpstream}. */
export interface FakeReviewServer extends ReviewUpstream {
  calls: ReviewCall[];
  /** Answers each call: `[code, body]`. */
  answer: (call: ReviewCall) => [number, unknown];
  /** While true, requests get no answer (a SIGSTOPped apiserver): they wait in `held`. */
  hold: boolean;
  held: HeldReview[];
  /** Resolves with the next request held (one already held and not yet taken first). */
  nextHeld(): Promise<HeldReview>;
  close(): Promise<void>;
}

/** Starts the fake; the proxy's credential it sees is `Bearer proxy-token`. */
export async function startFakeReviewServer(answer: FakeReviewServer['answer']): Promise<FakeReviewServer> {
  const calls: ReviewCall[] = [];
  const held: HeldReview[] = [];
  let taken = 0;
  const waiting: Array<(h: HeldReview) => void> = [];
  const self: Partial<FakeReviewServer> = {
    calls,
    answer,
    hold: false,
    held,
    nextHeld: () =>
      taken < held.length
        ? Promise.resolve(held[taken++]!)
        : new Promise<HeldReview>((resolve) => waiting.push(resolve)),
  };
  const server = createServer(async (req: IncomingMessage, res) => {
    let text = '';
    for await (const c of req) text += (c as Buffer).toString();
    const call: ReviewCall = {
      path: req.url ?? '',
      authorization: req.headers.authorization,
      body: text ? (JSON.parse(text) as ReviewCall['body']) : {},
    };
    calls.push(call);
    const respond = () => {
      const [code, body] = self.answer!(call);
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (!self.hold) return respond();
    const h: HeldReview = { call, release: respond, drop: () => req.socket.destroy() };
    held.push(h);
    const w = waiting.shift();
    if (w) {
      taken++;
      w(h);
    }
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const dispatcher = new Agent();
  Object.assign(self, {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    dispatcher,
    authorization: () => 'Bearer proxy-token',
    close: async () => {
      for (const h of held) h.drop();
      server.close();
      await dispatcher.close();
    },
  });
  return self as FakeReviewServer;
}

/** A TokenReview answer for `username`. */
export function tokenReviewAnswer(username: string, uid = '', groups: string[] = []): [number, unknown] {
  return [201, { kind: 'TokenReview', status: { authenticated: true, user: { username, uid, groups } } }];
}

/** A SubjectAccessReview answer. */
export function sarAnswer(allowed: boolean, reason = ''): [number, unknown] {
  return [201, { kind: 'SubjectAccessReview', status: { allowed, ...(reason ? { reason } : {}) } }];
}
