/**
 * A small JSON client of the fixture apiserver as its admin (client certificate), for the
 * control-plane workload: it polls object state cheaply (one HTTPS connection pool instead of a
 * kubectl process per poll) and sends what kubectl has no verb for (an Eviction).
 */
import { readFile } from 'node:fs/promises';
import { Agent, request } from 'undici';
import type { Fixture } from '../../fixture/index.ts';

/** One answer: the HTTP status and the parsed JSON body (undefined when not JSON). */
export interface ApiAnswer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: Kubernetes objects are read field by field.
  body: any;
}

/** A JSON client of one apiserver; {@link ApiClient.close} ends its connections. */
export interface ApiClient {
  /** `method path` with an optional JSON body (`contentType` default `application/json`). */
  call(method: string, path: string, body?: unknown, contentType?: string): Promise<ApiAnswer>;
  /** GET `path`; throws unless 200. */
  // biome-ignore lint/suspicious/noExplicitAny: see ApiAnswer.
  get(path: string): Promise<any>;
  close(): Promise<void>;
}

/** A client of `f`'s apiserver authenticated by the admin client certificate. */
export async function adminClient(f: Fixture): Promise<ApiClient> {
  const agent = new Agent({
    connect: { ca: f.caPem, cert: await readFile(f.adminCert.cert), key: await readFile(f.adminCert.key) },
  });
  const call = async (method: string, path: string, body?: unknown, contentType = 'application/json') => {
    const r = await request(`${f.server}${path}`, {
      method: method as 'GET',
      dispatcher: agent,
      headers: { accept: 'application/json', ...(body === undefined ? {} : { 'content-type': contentType }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.body.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    return { status: r.statusCode, body: parsed };
  };
  return {
    call,
    async get(path) {
      const a = await call('GET', path);
      if (a.status !== 200)
        throw new Error(`GET ${path}: ${a.status} ${JSON.stringify(a.body)?.slice(0, 300)}`);
      return a.body;
    },
    close: () => agent.close(),
  };
}
