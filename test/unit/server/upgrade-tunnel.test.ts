import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { IncomingMessage } from 'node:http';
import { type AddressInfo, connect, createServer, type Server, type Socket } from 'node:net';
import { after, before, beforeEach, describe, it } from 'node:test';
import { Agent } from 'undici';
import { StatusError } from '../../../src/apimachinery/status.ts';
import { buildServer, type KubeServer } from '../../../src/server/app.ts';
import { tunnelPlan } from '../../../src/server/upgrade-tunnel.ts';
import { silentLogger } from '../../../src/util/logger.ts';
import { eventually } from '../../support/eventually.ts';
import { FakeCache, fakeCodec } from '../../support/fake-cache.ts';

/** One request the scripted upstream received: its head, and the socket to script the rest. */
interface UpstreamExchange {
  head: string;
  socket: Socket;
}

/** Reads from `s` until `\r\n\r\n`; resolves with the head and any bytes after it. */
function readHead(s: Socket): Promise<{ head: string; rest: Buffer }> {
  return new Promise((resolve, reject) => {
    let buf = Buffer.alloc(0);
    const onData = (c: Buffer) => {
      buf = Buffer.concat([buf, c]);
      const i = buf.indexOf('\r\n\r\n');
      if (i < 0) return;
      s.off('data', onData);
      s.pause();
      const rest = buf.subarray(i + 4);
      resolve({ head: buf.subarray(0, i).toString(), rest });
    };
    s.on('data', onData);
    s.once('error', reject);
  });
}

/** Collects what `s` sends until it ends. */
async function readAll(s: Socket): Promise<string> {
  let out = '';
  s.on('data', (c: Buffer) => {
    out += c.toString('latin1');
  });
  s.resume();
  if (!s.readableEnded) await once(s, 'end');
  return out;
}

describe('upgrade tunnel against a scripted upstream', () => {
  let upstream: Server;
  let proxy: KubeServer;
  let proxyPort: number;
  let script: (x: UpstreamExchange, rest: Buffer) => void = () => {};
  const seen: UpstreamExchange[] = [];
  const sockets: Socket[] = [];
  const agent = new Agent();
  const longAgent = new Agent({ bodyTimeout: 0 });

  before(async () => {
    upstream = createServer({ allowHalfOpen: true }, async (socket) => {
      sockets.push(socket);
      const { head, rest } = await readHead(socket);
      const x = { head, socket };
      seen.push(x);
      script(x, rest);
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const port = (upstream.address() as AddressInfo).port;
    proxy = buildServer({
      upstream: {
        server: new URL(`http://127.0.0.1:${port}/prefix`),
        dispatcher: agent,
        longRunningDispatcher: longAgent,
        authorization: async () => 'Bearer proxy-token',
      },
      caches: [new FakeCache()],
      codec: fakeCodec,
      consistentReads: 'cache',
      logger: silentLogger,
      maxWatchers: 2,
      shutdownGraceMs: 200,
    });
    await proxy.app.listen({ host: '127.0.0.1', port: 0 });
    proxyPort = (proxy.app.server.address() as AddressInfo).port;
  });
  beforeEach(() => {
    seen.length = 0;
  });
  after(async () => {
    await proxy.shutdown();
    for (const s of sockets) s.destroy();
    await new Promise((r) => upstream.close(r));
    await agent.close();
    await longAgent.close();
  });

  /** Opens a raw client connection and sends an upgrade request head (+ early bytes). */
  const open = async (path: string, headers: string[], early = ''): Promise<Socket> => {
    const s = connect({ host: '127.0.0.1', port: proxyPort, allowHalfOpen: true });
    await once(s, 'connect');
    s.write(`POST ${path} HTTP/1.1\r\nHost: proxy\r\n${headers.map((h) => `${h}\r\n`).join('')}\r\n${early}`);
    return s;
  };
  const spdy = ['Connection: Upgrade', 'Upgrade: SPDY/3.1', 'X-Stream-Protocol-Version: v4.channel.k8s.io'];

  it('101: passes the handshake and the request headers, then joins both sockets byte for byte', async () => {
    script = ({ socket }, rest) => {
      socket.write(
        'HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\nDate: Tue, 01 Dec 2026 20:00:00 GMT\r\n\r\n',
      );
      if (rest.length) socket.write(rest);
      socket.pipe(socket); // echo
    };
    const c = await open('/api/v1/namespaces/a/pods/p/exec?command=cat&stdin=true', spdy, 'EARLY');
    const { head } = await readHead(c);
    assert.equal(
      head,
      'HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\nDate: Tue, 01 Dec 2026 20:00:00 GMT',
    );
    const up = seen[0]!;
    assert.match(
      up.head,
      /^POST \/prefix\/api\/v1\/namespaces\/a\/pods\/p\/exec\?command=cat&stdin=true HTTP\/1\.1\r\n/,
    );
    assert.match(up.head, /\r\nupgrade: SPDY\/3\.1\r\n/i);
    assert.match(up.head, /\r\nconnection: upgrade\r\n/i);
    assert.match(up.head, /\r\nx-stream-protocol-version: v4\.channel\.k8s\.io\r\n/i);
    // No credentials from the client: the proxy's own.
    assert.match(up.head, /\r\nauthorization: Bearer proxy-token\r\n/i);
    const all = Buffer.alloc(256 * 1024, 7);
    const got = readAll(c);
    c.write(all);
    c.end();
    const text = await got;
    // The echo of everything the client sent, the bytes sent right after its head first (binary intact).
    assert.equal(text.length, 'EARLY'.length + all.length);
    assert.equal(text.slice(0, 5), 'EARLY');
    assert.ok(Buffer.from(text.slice(5), 'latin1').equals(all));
  });

  it("forwards the client's own Authorization, and WebSocket subprotocol headers", async () => {
    script = ({ socket }) => {
      socket.end(
        'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-Websocket-Accept: abc\r\nSec-Websocket-Protocol: v5.channel.k8s.io\r\n\r\n',
      );
    };
    const c = await open('/api/v1/namespaces/a/pods/p/portforward?ports=80', [
      'Connection: Upgrade',
      'Upgrade: websocket',
      'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
      'Sec-WebSocket-Version: 13',
      'Sec-WebSocket-Protocol: SPDY/3.1+portforward.k8s.io',
      'Authorization: Bearer client-token',
    ]);
    const { head } = await readHead(c);
    assert.match(
      head,
      /^HTTP\/1\.1 101 Switching Protocols\r\nUpgrade: websocket\r\n.*Sec-Websocket-Protocol: v5\.channel\.k8s\.io$/s,
    );
    const up = seen[0]!.head;
    assert.match(up, /\r\nauthorization: Bearer client-token\r\n/i);
    assert.doesNotMatch(up, /proxy-token/);
    assert.match(up, /\r\nupgrade: websocket\r\n/i);
    assert.match(up, /\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n/i);
    assert.match(up, /\r\nsec-websocket-protocol: SPDY\/3\.1\+portforward\.k8s\.io\r\n/i);
    // The upstream ended its side: the client sees the end.
    assert.equal(await readAll(c), '');
  });

  it('a refused handshake (404 NotFound) is passed back as sent: status, headers, body', async () => {
    const body =
      '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \\"nope\\" not found","reason":"NotFound","details":{"name":"nope","kind":"pods"},"code":404}\n';
    script = ({ socket }) => {
      socket.end(
        `HTTP/1.1 404 Not Found\r\nAudit-Id: 1234\r\nCache-Control: no-cache, private\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
      );
    };
    const c = await open('/api/v1/namespaces/a/pods/nope/exec?command=ls', spdy);
    const text = await readAll(c);
    assert.equal(
      text,
      `HTTP/1.1 404 Not Found\r\nAudit-Id: 1234\r\nCache-Control: no-cache, private\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
    );
  });

  it('a chunked refusal is passed back delimited by the close', async () => {
    script = ({ socket }) => {
      socket.end(
        'HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n',
      );
    };
    const c = await open('/api/v1/namespaces/a/pods/p/attach?container=x', spdy);
    assert.equal(
      await readAll(c),
      'HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nhello world',
    );
  });

  it('half-close: the client ends its side and still reads everything the upstream sends after', async () => {
    let upstreamSawEnd = false;
    script = ({ socket }) => {
      socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: SPDY/3.1\r\nConnection: Upgrade\r\n\r\n');
      let got = '';
      socket.on('data', (d: Buffer) => {
        got += d.toString();
      });
      socket.on('end', () => {
        upstreamSawEnd = true;
        // Its reply comes after the client's FIN, then its own FIN.
        setTimeout(() => socket.end(`reply to ${got}`), 50);
      });
      socket.resume();
    };
    const c = await open('/api/v1/namespaces/a/pods/p/exec?command=cat', spdy);
    await readHead(c);
    const got = readAll(c);
    c.end('input');
    assert.equal(await got, 'reply to input');
    assert.equal(upstreamSawEnd, true);
  });

  it('half-close the other way: the upstream ends first, the client can still send', async () => {
    let received = '';
    const done = new Promise<void>((resolve) => {
      script = ({ socket }) => {
        socket.end('HTTP/1.1 101 Switching Protocols\r\nUpgrade: SPDY/3.1\r\nConnection: Upgrade\r\n\r\nbye');
        socket.on('data', (d: Buffer) => {
          received += d.toString();
        });
        socket.on('end', () => resolve());
        socket.resume();
      };
    });
    const c = await open('/api/v1/namespaces/a/pods/p/exec?command=cat', spdy);
    const { rest } = await readHead(c);
    const tail = await readAll(c);
    assert.equal(rest.toString() + tail, 'bye');
    c.end('after the upstream ended');
    await done;
    assert.equal(received, 'after the upstream ended');
  });

  it('a reset on one side destroys the other', async () => {
    let upSocket: Socket | undefined;
    script = ({ socket }) => {
      upSocket = socket;
      socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: SPDY/3.1\r\nConnection: Upgrade\r\n\r\n');
      socket.resume();
    };
    const c = await open('/api/v1/namespaces/a/pods/p/exec?command=cat', spdy);
    await readHead(c);
    c.resetAndDestroy();
    await eventually('upstream socket closed', 5000, async () =>
      upSocket?.readableEnded || upSocket?.destroyed ? true : undefined,
    );
  });

  it('the apiserver unreachable: 503 Status', async () => {
    const down = createServer();
    await new Promise<void>((r) => down.listen(0, '127.0.0.1', r));
    const port = (down.address() as AddressInfo).port;
    await new Promise((r) => down.close(r));
    const p = buildServer({
      upstream: {
        server: new URL(`http://127.0.0.1:${port}`),
        dispatcher: agent,
        longRunningDispatcher: longAgent,
        authorization: () => undefined,
      },
      caches: [],
      codec: fakeCodec,
      consistentReads: 'cache',
      logger: silentLogger,
    });
    await p.app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const c = connect({ host: '127.0.0.1', port: (p.app.server.address() as AddressInfo).port });
      c.write(`GET /api/v1/namespaces/a/pods/p/exec HTTP/1.1\r\nHost: x\r\n${spdy.join('\r\n')}\r\n\r\n`);
      const text = await readAll(c);
      assert.match(text, /^HTTP\/1\.1 503 Service Unavailable\r\n/);
      const status = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));
      assert.equal(status.code, 503);
      assert.equal(status.reason, 'ServiceUnavailable');
      assert.match(status.message, /^the apiserver could not be reached: /);
    } finally {
      await p.shutdown();
    }
  });
});

describe('upgrade tunnel: slots and shutdown', () => {
  it('holds a --max-watchers slot while open (429 past it), ends cleanly at shutdown', async () => {
    const ups: Socket[] = [];
    let upstreamEnded = 0;
    const upstream = createServer({ allowHalfOpen: true }, async (socket) => {
      await readHead(socket);
      ups.push(socket);
      socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: SPDY/3.1\r\nConnection: Upgrade\r\n\r\n');
      // The apiserver closes the stream once a direction ended (upgradeaware.go).
      socket.on('end', () => {
        upstreamEnded++;
        socket.end('last words');
      });
      socket.resume();
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const agent = new Agent();
    const proxy = buildServer({
      upstream: {
        server: new URL(`http://127.0.0.1:${(upstream.address() as AddressInfo).port}`),
        dispatcher: agent,
        longRunningDispatcher: agent,
        authorization: () => undefined,
      },
      caches: [],
      codec: fakeCodec,
      consistentReads: 'cache',
      logger: silentLogger,
      maxWatchers: 1,
      shutdownGraceMs: 2000,
    });
    await proxy.app.listen({ host: '127.0.0.1', port: 0 });
    const port = (proxy.app.server.address() as AddressInfo).port;
    const req =
      'GET /api/v1/namespaces/a/pods/p/exec HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n';
    try {
      const a = connect({ host: '127.0.0.1', port, allowHalfOpen: true });
      a.write(req);
      await readHead(a);
      const b = connect({ host: '127.0.0.1', port });
      b.write(req);
      const refused = await readAll(b);
      assert.match(refused, /^HTTP\/1\.1 429 Too Many Requests\r\n/);
      assert.match(refused, /\r\nRetry-After: 1\r\n/);
      assert.equal(JSON.parse(refused.slice(refused.indexOf('\r\n\r\n') + 4)).reason, 'TooManyRequests');

      const tail = readAll(a);
      await proxy.shutdown();
      assert.equal(await tail, 'last words');
      assert.equal(upstreamEnded, 1);
    } finally {
      await proxy.shutdown();
      for (const s of ups) s.destroy();
      await new Promise((r) => upstream.close(r));
      await agent.close();
    }
  });

  it('a closed tunnel gives its slot back', async () => {
    const upstream = createServer(async (socket) => {
      await readHead(socket);
      socket.end('HTTP/1.1 101 Switching Protocols\r\nUpgrade: SPDY/3.1\r\nConnection: Upgrade\r\n\r\n');
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const agent = new Agent();
    const proxy = buildServer({
      upstream: {
        server: new URL(`http://127.0.0.1:${(upstream.address() as AddressInfo).port}`),
        dispatcher: agent,
        longRunningDispatcher: agent,
        authorization: () => undefined,
      },
      caches: [],
      codec: fakeCodec,
      consistentReads: 'cache',
      logger: silentLogger,
      maxWatchers: 1,
    });
    await proxy.app.listen({ host: '127.0.0.1', port: 0 });
    const port = (proxy.app.server.address() as AddressInfo).port;
    try {
      const tunnel = async () => {
        const c = connect({ host: '127.0.0.1', port });
        c.write(
          'GET /api/v1/namespaces/a/pods/p/exec HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n',
        );
        return (await readAll(c)).slice(0, 12);
      };
      for (let i = 0; i < 3; i++) {
        // The slot is given back once the proxy saw both sockets close (just after the client did).
        const first = await eventually(`tunnel ${i}`, 5000, async () => {
          const line = await tunnel();
          return line === 'HTTP/1.1 101' ? line : undefined;
        });
        assert.equal(first, 'HTTP/1.1 101');
      }
    } finally {
      await proxy.shutdown();
      await new Promise((r) => upstream.close(r));
      await agent.close();
    }
  });
});

describe('tunnelPlan: the credential and pool of a tunnel (upstreamCredentials, upgrade pools)', () => {
  const pool = (name: string) => ({ name }) as unknown as Agent;
  const upstream = {
    server: new URL('https://apiserver.test'),
    dispatcher: pool('short'),
    longRunningDispatcher: pool('long'),
    upgradeDispatcher: pool('upgrade'),
    authorization: () => 'Bearer proxy-token',
    clientCredentialPools: {
      dispatcher: pool('client-short'),
      longRunningDispatcher: pool('client-long'),
      upgradeDispatcher: pool('client-upgrade'),
    },
  };
  const req = { headers: {} } as IncomingMessage;

  it("the client's own Authorization: over the HTTP/1.1 pool without the proxy's certificate", async () => {
    const plan = await tunnelPlan(req, { authorization: 'Bearer client' }, { upstream });
    assert.ok(!(plan instanceof StatusError));
    assert.equal((plan.dispatcher as unknown as { name: string }).name, 'client-upgrade');
    assert.equal(plan.headers.authorization, 'Bearer client');
  });

  it("no credential (the sidecar model): the proxy's own, over its HTTP/1.1 pool", async () => {
    const plan = await tunnelPlan(req, {}, { upstream });
    assert.ok(!(plan instanceof StatusError));
    assert.equal((plan.dispatcher as unknown as { name: string }).name, 'upgrade');
    assert.equal(plan.headers.authorization, 'Bearer proxy-token');
  });

  it("Impersonate-* without the client's own token is refused (never the proxy's rights)", async () => {
    const plan = await tunnelPlan(req, { 'impersonate-user': 'someone' }, { upstream });
    assert.ok(plan instanceof StatusError);
    assert.equal(plan.code, 403);
  });
});
