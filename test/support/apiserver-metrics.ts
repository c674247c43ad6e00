/**
 * The fixture apiserver's own `/metrics`, read as its admin, for the tests and benches that count
 * what the apiserver served (`apiserver_request_total` by verb and resource).
 */
import assert from 'node:assert/strict';
import { type Dispatcher, request } from 'undici';
import { metricSum } from './prometheus-text.ts';

/** Where and as whom to read the apiserver's `/metrics`. */
export interface ApiserverEndpoint {
  /** `https://127.0.0.1:PORT` */
  server: string;
  /** A dispatcher trusting the fixture CA. */
  dispatcher: Dispatcher;
  /** A bearer token allowed to GET `/metrics` (the fixture's admin). */
  token: string;
}

/** The apiserver's `/metrics` text. Throws (assertion) on an answer other than 200. */
export async function apiserverMetrics(a: ApiserverEndpoint): Promise<string> {
  const r = await request(`${a.server}/metrics`, {
    dispatcher: a.dispatcher,
    headers: { authorization: `Bearer ${a.token}` },
  });
  const text = await r.body.text();
  assert.equal(r.statusCode, 200, text);
  return text;
}

/**
 * Requests the apiserver has completed (`apiserver_request_total`) whose labels include `labels`,
 * e.g. `{ verb: 'LIST', resource: 'configmaps' }` (a WATCH counts when it ends).
 */
export async function apiserverRequests(
  a: ApiserverEndpoint,
  labels: Record<string, string>,
): Promise<number> {
  return metricSum(await apiserverMetrics(a), 'apiserver_request_total', labels);
}
