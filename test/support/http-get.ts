/** A plain GET for tests that read a listener's text answers (the ops listener, the proxy). */
import { request } from 'undici';

/** GET `url`; returns status, body text and headers. */
export async function get(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  const r = await request(url, { headers });
  return { status: r.statusCode, body: await r.body.text(), headers: r.headers };
}
