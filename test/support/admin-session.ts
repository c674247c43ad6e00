/**
 * The cluster admin's session on the shared fixture, as most e2e suites open it in `before`:
 * the fixture, one undici `Agent` trusting its CA (the suite closes it in `after`) and the
 * admin's bearer header. {@link adminRequest} sends a JSON request with it straight to the
 * apiserver, for the side-by-side half of a comparison.
 */
import assert from 'node:assert/strict';
import { Agent, request } from 'undici';
import { type Fixture, sharedFixture } from '../fixture/index.ts';

/** The admin's fixture, connection pool and `authorization` header. */
export interface AdminSession {
  f: Fixture;
  agent: Agent;
  auth: Record<string, string>;
}

/** Starts (or joins) the shared fixture and opens an `Agent` for its admin; close `agent` after the suite. */
export async function openAdminSession(): Promise<AdminSession> {
  const f = await sharedFixture();
  return {
    f,
    agent: new Agent({ connect: { ca: f.caPem } }),
    auth: { authorization: `Bearer ${f.tokens.admin}` },
  };
}

/**
 * `method path` sent to the apiserver directly as the admin, `body` as JSON; resolves to the
 * parsed answer. Throws (an assertion naming the request, status and body) on any status ≥ 300.
 */
export async function adminRequest<T>(
  s: AdminSession,
  method: string,
  path: string,
  body?: unknown,
): Promise<T> {
  const r = await request(`${s.f.server}${path}`, {
    dispatcher: s.agent,
    method: method as 'GET',
    headers: { ...s.auth, 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await r.body.text();
  assert.ok(r.statusCode < 300, `${method} ${path}: ${r.statusCode} ${text}`);
  return JSON.parse(text) as T;
}
