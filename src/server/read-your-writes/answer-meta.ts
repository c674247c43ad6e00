/**
 * The metadata of an upstream answer the proxy passed through, whatever its encoding, for
 * read-your-writes and for the RVs clients were shown (`write-tracker.ts`):
 * - `Content-Encoding: gzip` (the apiserver gzips answers over 128 KiB for clients that accept
 *   it, and Kubernetes 1.37 gzips watch-lists one member per flush): gunzipped, multi-member;
 * - JSON (`application/json`, also `as=Table`/`PartialObjectMetadata`): parsed when complete, a
 *   prefix scanned for the first `"resourceVersion":"N"` (the top-level one: the apiserver writes
 *   `metadata` before `items`/`spec`; an unstructured list writes `items` first, whose first RV is
 *   lower than the list's, never higher);
 * - protobuf (`application/vnd.kubernetes.protobuf`): `apimachinery/protobuf-meta.ts`;
 * - YAML (`application/yaml`): the top-level `metadata:` block's `resourceVersion` line (keys
 *   are sorted: a list's `metadata` comes after its `items`, so a prefix may not reach it);
 * - anything else (CBOR: kube-apiserver 1.37 answers it 406 unless its feature gate is on;
 *   other encodings): undefined, "not learnt".
 */
import { constants, gunzipSync } from 'node:zlib';
import { decodeProtobufMeta, type MetaFields } from '../../apimachinery/protobuf-meta.ts';

/** What an answer says about itself; the JSON field names. */
export interface AnswerMeta {
  kind?: unknown;
  status?: unknown;
  metadata?: MetaFields;
  details?: MetaFields;
  items?: { metadata?: MetaFields }[];
}

/** The answer headers that decide how its body is read. */
export interface AnswerHeaders {
  contentType?: string | undefined;
  contentEncoding?: string | undefined;
}

/** Largest gunzipped size read (bytes): beyond it the answer is "not learnt". */
const MAX_GUNZIPPED_BYTES = 64 * 1024 * 1024;

/** Compressed bytes of a prefix inflated to look for its metadata. */
const GZIP_PREFIX_BYTES = 8 * 1024;

const RV_IN_JSON = /"resourceVersion":"([0-9]{1,20})"/;

/**
 * Gunzips `body` (all members; a truncated prefix as far as it goes). undefined when it is not
 * gzip or would exceed {@link MAX_GUNZIPPED_BYTES}.
 */
export function gunzipAll(body: Buffer): Buffer | undefined {
  try {
    // Node's gunzip reads concatenated members; Z_SYNC_FLUSH returns what a truncated
    // prefix yields instead of throwing "unexpected end of file".
    return gunzipSync(body, { finishFlush: constants.Z_SYNC_FLUSH, maxOutputLength: MAX_GUNZIPPED_BYTES });
  } catch {
    return undefined;
  }
}

/**
 * Reads an answer's metadata. `complete` is false for a prefix of a larger body (then only the
 * top-level resourceVersion is looked for). undefined = nothing could be learnt.
 */
export function answerMeta(body: Buffer, h: AnswerHeaders, complete: boolean): AnswerMeta | undefined {
  const enc = (h.contentEncoding ?? '').trim().toLowerCase();
  let data: Buffer | undefined = body;
  // Of a prefix only the start matters (metadata comes first): inflating all 64 KiB of a
  // compressed LIST would cost megabytes for nothing.
  if (enc === 'gzip' || enc === 'x-gzip')
    data = gunzipAll(complete ? body : body.subarray(0, GZIP_PREFIX_BYTES));
  else if (enc !== '' && enc !== 'identity') return undefined;
  if (!data) return undefined;
  const type = (h.contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === 'application/vnd.kubernetes.protobuf') return decodeProtobufMeta(data, complete);
  if (type === 'application/yaml') return yamlMeta(data.toString('utf8'));
  if (type !== 'application/json' && type !== '') return undefined;
  if (complete) {
    try {
      const v = JSON.parse(data.toString('utf8')) as unknown;
      return v !== null && typeof v === 'object' ? (v as AnswerMeta) : undefined;
    } catch {
      // A body cut at MAX bytes or not JSON at all: try the scan below.
    }
  }
  const m = RV_IN_JSON.exec(data.toString('latin1'));
  return m ? { metadata: { resourceVersion: m[1]! } } : undefined;
}

/** The top-level `metadata.resourceVersion` of a YAML answer (sigs.k8s.io/yaml: 2-space indents). */
function yamlMeta(text: string): AnswerMeta | undefined {
  const start = text.search(/^metadata:\n/m);
  if (start < 0) return undefined;
  for (const line of text.slice(start).split('\n').slice(1)) {
    if (!line.startsWith('  ')) break;
    const m = /^ {2}resourceVersion: "?([0-9]{1,20})"?$/.exec(line);
    if (m) return { metadata: { resourceVersion: m[1]! } };
  }
  return undefined;
}
