/**
 * The on-disk format of one cached resource's snapshot (docs/design.md §3, "Snapshots and warm
 * restart"): what a proxy needs to serve the resource again after a restart and to resume its
 * upstream watch where it stopped — the objects' bytes as cached, the list resourceVersion the
 * store is exact at, the history window (its start and its events), and what the snapshot is
 * valid for (the resource as discovered, its scope, the apiserver's identity).
 *
 * Layout (integers big-endian):
 * ```
 * "KCPSNAP\n"                     8 bytes, the magic
 * u32 format version               FORMAT_VERSION; any other is refused
 * u32 n, n bytes                   the header, JSON ({@link SnapshotHeader})
 * header.objects × (u32 n, n bytes)        each object's JSON as the upstream sent it
 * header.events × event:
 *   u8 type (1 ADDED, 2 MODIFIED, 3 DELETED), f64 at (ms since the epoch),
 *   u32 n, n bytes                 the event's object (for DELETED its last state)
 *   u32 n, n bytes | u32 0xFFFFFFFF   the state it replaced, or none (none is also written when
 *                                  an earlier event of the window holds it: the reader takes it there)
 * 32 bytes                         SHA-256 of every byte before it
 * ```
 * Encoding yields chunks of about {@link CHUNK_BYTES} so the writer can hand each to the file
 * system and let the event loop serve between two; decoding checks the length, magic, version
 * and checksum before it reads anything else, and every length against the bytes left.
 */
import { createHash } from 'node:crypto';

/** Bumped on any change of the layout or of the header's meaning. */
export const FORMAT_VERSION = 1;
const MAGIC = Buffer.from('KCPSNAP\n', 'latin1');
const CHECKSUM_BYTES = 32;
const NONE = 0xffffffff;
/** Size of the chunks {@link encodeSnapshot} yields (bytes). */
export const CHUNK_BYTES = 1 << 20;

/** ADDED / MODIFIED / DELETED. */
export type SnapshotEventType = 'ADDED' | 'MODIFIED' | 'DELETED';
const TYPE_CODES: Record<SnapshotEventType, number> = { ADDED: 1, MODIFIED: 2, DELETED: 3 };
const TYPES: readonly (SnapshotEventType | undefined)[] = [undefined, 'ADDED', 'MODIFIED', 'DELETED'];

/** Who the snapshot's data came from: a snapshot of another apiserver is never served. */
export interface ApiserverIdentity {
  /** The upstream's base URL as configured (kubeconfig `server`). */
  server: string;
  /** `metadata.uid` of the `kube-system` namespace; null when it could not be read (RBAC). */
  kubeSystemUID: string | null;
}

/** The resource as discovered, as far as serving it needs (`apimachinery/gvr.ts` ResourceInfo). */
export interface SnapshotResource {
  group: string;
  version: string;
  resource: string;
  kind: string;
  listKind: string;
  apiVersion: string;
  namespaced: boolean;
  verbs: string[];
  builtIn: boolean;
  /** The one namespace the cache lists (`--namespace`); absent: all. */
  namespace?: string;
}

/** The header of a snapshot file. */
export interface SnapshotHeader {
  /** The cache entry's name (`pods`, `deployments.apps`). */
  name: string;
  /** The scope as `apimachinery/resource-scope.ts` `scopeString` writes it; "" for the whole resource. */
  scope: string;
  resource: SnapshotResource;
  identity: ApiserverIdentity;
  /** The list RV the store is exact at (the cache's current RV, never a max of object RVs). */
  resourceVersion: string;
  /** The history window's exclusive start: a watch may resume from any RV ≥ it. */
  windowStart: string;
  /** When the snapshot was taken (ms since the epoch). */
  takenAtMs: number;
  objects: number;
  events: number;
}

/** One event of the history window. */
export interface SnapshotEvent {
  type: SnapshotEventType;
  /** When the cache recorded it (ms since the epoch). */
  at: number;
  /** The object of the event as received (for DELETED, its last state). */
  cur: Buffer;
  /** The state it replaced when no earlier event of the window holds it; undefined otherwise or for a first ADDED. */
  prev: Buffer | undefined;
}

/** A decoded snapshot. */
export interface SnapshotData {
  header: SnapshotHeader;
  objects: Buffer[];
  events: SnapshotEvent[];
}

/** Why a file is not a usable snapshot. */
export type SnapshotFault = 'truncated' | 'corrupt' | 'version';

/** A snapshot file that cannot be read: `fault` says why, the message says where. */
export class SnapshotFormatError extends Error {
  readonly fault: SnapshotFault;
  constructor(fault: SnapshotFault, message: string) {
    super(message);
    this.name = 'SnapshotFormatError';
    this.fault = fault;
  }
}

/** What {@link encodeSnapshot} encodes: the objects and events as lazily read bytes (`raw` getters). */
export interface SnapshotSource {
  header: SnapshotHeader;
  objects: Iterable<Buffer>;
  events: Iterable<SnapshotEvent>;
}

/**
 * The snapshot's bytes in chunks of about {@link CHUNK_BYTES}, the checksum last. Lazy: each
 * object's bytes are read when its chunk is built, so the caller's cost between two chunks is
 * bounded by one chunk.
 */
export function* encodeSnapshot(s: SnapshotSource): Generator<Buffer> {
  const hash = createHash('sha256');
  let parts: Buffer[] = [];
  let size = 0;
  const push = (b: Buffer) => {
    parts.push(b);
    size += b.length;
  };
  const flush = (): Buffer => {
    const chunk = Buffer.concat(parts, size);
    hash.update(chunk);
    parts = [];
    size = 0;
    return chunk;
  };
  const header = Buffer.from(JSON.stringify(s.header), 'utf8');
  push(MAGIC);
  push(u32(FORMAT_VERSION));
  push(u32(header.length));
  push(header);
  for (const o of s.objects) {
    push(u32(o.length));
    push(o);
    if (size >= CHUNK_BYTES) yield flush();
  }
  for (const e of s.events) {
    const head = Buffer.allocUnsafe(9);
    head.writeUInt8(TYPE_CODES[e.type], 0);
    head.writeDoubleBE(e.at, 1);
    push(head);
    push(u32(e.cur.length));
    push(e.cur);
    push(u32(e.prev ? e.prev.length : NONE));
    if (e.prev) push(e.prev);
    if (size >= CHUNK_BYTES) yield flush();
  }
  if (size > 0) yield flush();
  yield hash.digest();
}

/** Bytes of the magic and the format version, the part {@link checkSnapshotPrefix} reads. */
export const SNAPSHOT_PREFIX_BYTES = MAGIC.length + 4;

/**
 * Checks the first {@link SNAPSHOT_PREFIX_BYTES} of a file (the magic, the format version) before
 * the rest is read, so a file of something else costs no more than those bytes.
 * @throws SnapshotFormatError `corrupt` (not the magic) or `version`; `truncated` when shorter.
 */
export function checkSnapshotPrefix(prefix: Buffer): void {
  if (prefix.length < SNAPSHOT_PREFIX_BYTES)
    throw new SnapshotFormatError('truncated', `${prefix.length} bytes, less than a header`);
  if (!prefix.subarray(0, MAGIC.length).equals(MAGIC))
    throw new SnapshotFormatError('corrupt', 'not a kube-cache-proxy snapshot (magic)');
  const version = prefix.readUInt32BE(MAGIC.length);
  if (version !== FORMAT_VERSION)
    throw new SnapshotFormatError('version', `format version ${version}, this proxy reads ${FORMAT_VERSION}`);
}

/**
 * Decodes a whole snapshot file.
 * @throws SnapshotFormatError `truncated` (shorter than an empty snapshot, or a length runs past
 *   the end), `version` (another format version), `corrupt` (wrong magic, checksum mismatch —
 *   which a truncated file also shows —, counts or header that do not add up).
 */
export function decodeSnapshot(file: Buffer): SnapshotData {
  const minimum = MAGIC.length + 8 + CHECKSUM_BYTES;
  if (file.length < minimum)
    throw new SnapshotFormatError('truncated', `${file.length} bytes, less than a header`);
  if (!file.subarray(0, MAGIC.length).equals(MAGIC))
    throw new SnapshotFormatError('corrupt', 'not a kube-cache-proxy snapshot (magic)');
  const version = file.readUInt32BE(MAGIC.length);
  if (version !== FORMAT_VERSION)
    throw new SnapshotFormatError('version', `format version ${version}, this proxy reads ${FORMAT_VERSION}`);
  const body = file.subarray(0, file.length - CHECKSUM_BYTES);
  const sum = createHash('sha256').update(body).digest();
  if (!sum.equals(file.subarray(file.length - CHECKSUM_BYTES)))
    throw new SnapshotFormatError('corrupt', 'checksum mismatch (truncated or altered)');
  const r = new Reader(body, MAGIC.length + 4);
  let header: SnapshotHeader;
  try {
    header = JSON.parse(r.bytes(r.u32()).toString('utf8')) as SnapshotHeader;
  } catch (err) {
    if (err instanceof SnapshotFormatError) throw err;
    throw new SnapshotFormatError('corrupt', 'header is not JSON');
  }
  if (!validHeader(header)) throw new SnapshotFormatError('corrupt', 'header lacks required fields');
  const objects: Buffer[] = [];
  for (let i = 0; i < header.objects; i++) objects.push(r.bytes(r.u32()));
  const events: SnapshotEvent[] = [];
  for (let i = 0; i < header.events; i++) {
    const type = TYPES[r.u8()];
    if (!type) throw new SnapshotFormatError('corrupt', `event ${i}: unknown type`);
    const at = r.f64();
    const cur = r.bytes(r.u32());
    const n = r.u32();
    events.push({ type, at, cur, prev: n === NONE ? undefined : r.bytes(n) });
  }
  if (r.left !== 0) throw new SnapshotFormatError('corrupt', `${r.left} bytes after the last event`);
  return { header, objects, events };
}

function validHeader(h: SnapshotHeader): boolean {
  return (
    typeof h === 'object' &&
    h !== null &&
    typeof h.name === 'string' &&
    typeof h.scope === 'string' &&
    typeof h.resourceVersion === 'string' &&
    /^[0-9]+$/.test(h.resourceVersion) &&
    typeof h.windowStart === 'string' &&
    /^[0-9]+$/.test(h.windowStart) &&
    typeof h.identity?.server === 'string' &&
    typeof h.resource?.resource === 'string' &&
    Number.isSafeInteger(h.objects) &&
    h.objects >= 0 &&
    Number.isSafeInteger(h.events) &&
    h.events >= 0
  );
}

function u32(n: number): Buffer {
  const b = Buffer.allocUnsafe(4);
  b.writeUInt32BE(n, 0);
  return b;
}

/** Bounds-checked reads over the body. */
class Reader {
  readonly #b: Buffer;
  #at: number;
  constructor(b: Buffer, at: number) {
    this.#b = b;
    this.#at = at;
  }
  get left(): number {
    return this.#b.length - this.#at;
  }
  #need(n: number): void {
    if (n > this.left)
      throw new SnapshotFormatError('truncated', `needs ${n} bytes at offset ${this.#at}, ${this.left} left`);
  }
  u8(): number {
    this.#need(1);
    return this.#b.readUInt8(this.#at++);
  }
  u32(): number {
    this.#need(4);
    const v = this.#b.readUInt32BE(this.#at);
    this.#at += 4;
    return v;
  }
  f64(): number {
    this.#need(8);
    const v = this.#b.readDoubleBE(this.#at);
    this.#at += 8;
    return v;
  }
  bytes(n: number): Buffer {
    this.#need(n);
    const v = this.#b.subarray(this.#at, this.#at + n);
    this.#at += n;
    return v;
  }
}
