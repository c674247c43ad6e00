/**
 * JSON as the apiserver writes it: Go `encoding/json` (HTML-safe escaping, struct field order),
 * as used by apimachinery `runtime/serializer/json` for `metav1.Status` and every object it encodes.
 */
import type { Status } from './status.ts';

/**
 * `JSON.stringify` with Go encoding/json's HTML-safe escapes (`<`, `>`, `&`, U+2028, U+2029 as
 * `\\u003c`…), so messages match the apiserver byte for byte. Key order is the argument's.
 * `indent` (spaces): Go's `json.MarshalIndent(v, "", "  ")` for 2 (same layout as JSON.stringify's).
 *
 * @throws TypeError for a value with no JSON text (`undefined`, a function, a symbol: what
 *   `JSON.stringify` answers `undefined` for), naming it — a caller's missing field, e.g. a
 *   Table's resourceVersion read from the wrong cached row (commit a3617b5), which used to throw
 *   "Cannot read properties of undefined (reading 'replace')".
 */
export function goJSON(v: unknown, indent?: number): string {
  const text: string | undefined = JSON.stringify(v, null, indent);
  if (text === undefined) throw new TypeError(`goJSON: ${typeof v} has no JSON encoding`);
  return text.replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * `metav1.Status` JSON in Go field order (kind, apiVersion, metadata, status, message, reason,
 * details, code), as the apiserver encodes an ERROR event's object.
 */
export function encodeStatus(s: Status): Buffer {
  const parts = [
    `"kind":"Status","apiVersion":"v1","metadata":{},"status":${goJSON(s.status)}`,
    `"message":${goJSON(s.message)}`,
    `"reason":${goJSON(s.reason)}`,
  ];
  if (s.details) parts.push(`"details":${goJSON(s.details)}`);
  parts.push(`"code":${s.code}`);
  return Buffer.from(`{${parts.join(',')}}`);
}
