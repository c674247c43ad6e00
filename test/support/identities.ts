/**
 * The identities of issue 10's differential matrix, taken from the fixture (test/fixture), and one
 * way to send a request as each of them to the apiserver directly or to a TLS proxy: an undici
 * Agent per identity that trusts the fixture CA (which signed both the apiserver's and the proxy's
 * serving certificates) and presents the identity's client certificate, if it has one.
 */
import { readFileSync } from 'node:fs';
import { Agent, request } from 'undici';
import type { Fixture } from '../fixture/index.ts';

/** The matrix's identity names. */
export type IdentityName =
  | 'admin-cert'
  | 'admin-token'
  | 'limited'
  | 'none'
  | 'reader'
  | 'node-n1'
  | 'node-n2'
  | 'anonymous';

/** One client identity: an x509 client certificate, a bearer token, or no credential. */
export interface Identity {
  name: IdentityName;
  /** The username the apiserver sees (for messages in assertions). */
  user: string;
  /** x509 client certificate and key (PEM contents). */
  cert?: { cert: Buffer; key: Buffer };
  token?: string;
}

/** Every identity of the matrix, in a stable order. */
export function matrixIdentities(f: Fixture): Identity[] {
  const pem = (p: { cert: string; key: string }) => ({
    cert: readFileSync(p.cert),
    key: readFileSync(p.key),
  });
  const sa = (n: string) => `system:serviceaccount:kcp-system:${n}`;
  return [
    { name: 'admin-cert', user: 'kcp-admin', cert: pem(f.adminCert) },
    { name: 'admin-token', user: sa('admin'), token: f.tokens.admin },
    { name: 'limited', user: sa('limited'), token: f.tokens.limited },
    { name: 'none', user: sa('none'), token: f.tokens.none },
    { name: 'reader', user: sa('reader'), token: f.tokens.reader },
    { name: 'node-n1', user: 'system:node:n1', cert: pem(f.nodeCerts.n1) },
    { name: 'anonymous', user: 'system:anonymous' },
  ];
}

/** One HTTP answer, body as text. `fromCache`: no `Audit-Id` header (the apiserver sets one on every answer). */
export interface Answer {
  status: number;
  body: string;
  contentType: string;
  fromCache: boolean;
}

/** A request: method, path (with query), optional JSON body and extra headers. */
export interface Req {
  method?: 'GET' | 'POST' | 'DELETE' | 'PATCH' | 'PUT';
  path: string;
  body?: unknown;
  headers?: Record<string, string>;
}

/** Sends requests as identities; one TLS Agent per identity (client certificate when it has one). */
export class IdentityClient {
  private readonly agents = new Map<IdentityName, Agent>();
  private readonly caPem: string;

  /** `caPem`: the CA the servers' certificates are verified against. */
  constructor(caPem: string) {
    this.caPem = caPem;
  }

  private agent(id: Identity): Agent {
    let a = this.agents.get(id.name);
    if (!a) {
      a = new Agent({
        connect: { ca: this.caPem, ...(id.cert ? { cert: id.cert.cert, key: id.cert.key } : {}) },
        bodyTimeout: 60_000,
        // HTTP/1.1 to both: undici 8 negotiates h2 with the apiserver, whose GOAWAY on a busy
        // connection fails the requests in flight (a transport event, not an answer to compare).
        allowH2: false,
      });
      this.agents.set(id.name, a);
    }
    return a;
  }

  /** Sends `r` to `base` (`https://…` of the apiserver or of a TLS proxy) as `id`. */
  async send(base: string, id: Identity, r: Req): Promise<Answer> {
    const headers: Record<string, string> = { accept: 'application/json', ...(r.headers ?? {}) };
    if (id.token) headers.authorization = `Bearer ${id.token}`;
    if (r.body !== undefined) headers['content-type'] ??= 'application/json';
    const res = await request(`${base}${r.path}`, {
      dispatcher: this.agent(id),
      method: r.method ?? 'GET',
      headers,
      ...(r.body !== undefined ? { body: JSON.stringify(r.body) } : {}),
    });
    return {
      status: res.statusCode,
      body: await res.body.text(),
      contentType: String(res.headers['content-type'] ?? ''),
      fromCache: res.headers['audit-id'] === undefined,
    };
  }

  /** Closes every Agent. */
  async close(): Promise<void> {
    await Promise.all([...this.agents.values()].map((a) => a.close()));
  }
}
