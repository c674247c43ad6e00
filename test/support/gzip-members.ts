/** Counting the members of a gzip body (RFC 1952), for tests of one-member vs multi-member answers. */
import { inflateRawSync } from 'node:zlib';

/**
 * How many gzip members `b` holds, walking them: each header (10 bytes plus the optional fields
 * its FLG byte announces), its deflate stream (as long as zlib consumed), an 8-byte trailer.
 * @throws Error when a member does not start with the gzip magic bytes.
 */
export function gzipMembers(b: Buffer): number {
  let at = 0;
  let n = 0;
  while (at < b.length) {
    if (b[at] !== 0x1f || b[at + 1] !== 0x8b || b[at + 2] !== 8) throw new Error(`no gzip member at ${at}`);
    const flg = b[at + 3]!;
    let p = at + 10;
    if (flg & 4) p += 2 + b.readUInt16LE(p); // FEXTRA
    if (flg & 8) p = b.indexOf(0, p) + 1; // FNAME
    if (flg & 16) p = b.indexOf(0, p) + 1; // FCOMMENT
    if (flg & 2) p += 2; // FHCRC
    const { engine } = inflateRawSync(b.subarray(p), { info: true }) as unknown as {
      engine: { bytesWritten: number };
    };
    at = p + engine.bytesWritten + 8;
    n++;
  }
  return n;
}
