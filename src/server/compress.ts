/**
 * gzip for answers served from the cache (`--response-compression=gzip`), as the apiserver
 * compresses its own: apiserver `endpoints/handlers/responsewriters/writers.go`
 * (`deferredResponseWriter`: only when the body exceeds `defaultGzipThresholdBytes` = 128 KiB,
 * then `Content-Encoding: gzip` + `Vary: Accept-Encoding` and one gzip member at level 1,
 * `gzipContentEncodingLevel`) and `compression.go` (`ContentEncodingSupported`: an
 * `Accept-Encoding` token equal to `gzip` after trimming, no q-values, case-sensitive).
 * The gzip work runs on libuv's thread pool (zlib stream), not on the event loop.
 */
import type { ServerResponse } from 'node:http';
import { constants, createGzip } from 'node:zlib';
import { chunksBody, type FilledBody, pumpBody } from './filled-body.ts';

/** Bodies up to this many bytes go out uncompressed (apiserver `defaultGzipThresholdBytes`). */
export const GZIP_THRESHOLD_BYTES = 128 * 1024;

/** Whether an `Accept-Encoding` header asks for gzip the way the apiserver reads it. */
export function acceptsGzip(header: string | string[] | undefined): boolean {
  if (header === undefined) return false;
  const value = Array.isArray(header) ? header.join(',') : header;
  for (const token of value.split(',')) if (token.trim() === 'gzip') return true;
  return false;
}

/**
 * Writes `body` (chunks, or a {@link FilledBody}) as one gzip member with `headers` (200, without
 * content-length: chunked, as the apiserver). Input is handed to zlib in batches as it drains,
 * two reused buffers of `BATCH_BYTES` (`filled-body.ts`): nothing is allocated per batch. The
 * response is destroyed if zlib fails; zlib stops when it closes. Resolves when the response
 * closed (written, or the client left): the caller holds its `--max-inflight` slot until then,
 * as the apiserver holds its seat while it writes. Without that, slow clients each kept a zlib
 * stream and its buffers (about 0.8 MB measured) outside any limit: 200 clients not reading a
 * 3.4 MB LIST raised the proxy's RSS from 170 to 333 MB.
 */
export function writeGzip(
  res: ServerResponse,
  headers: Record<string, string | number | string[]>,
  body: readonly Buffer[] | FilledBody,
): Promise<void> {
  res.writeHead(200, { ...headers, 'content-encoding': 'gzip', vary: 'Accept-Encoding' });
  const gz = createGzip({ level: 1, chunkSize: 64 * 1024, flush: constants.Z_NO_FLUSH });
  gz.on('error', (err) => res.destroy(err));
  const closed = new Promise<void>((resolve) => {
    res.on('close', () => {
      gz.destroy();
      resolve();
    });
  });
  gz.pipe(res);
  pumpBody(
    Array.isArray(body) ? chunksBody(body as readonly Buffer[]) : (body as FilledBody),
    (chunk, done) => gz.write(chunk, done),
    () => gz.end(),
    () => gz.destroyed,
  );
  return closed;
}
