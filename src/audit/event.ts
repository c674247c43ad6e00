/**
 * One audit event, `audit.k8s.io/v1` `Event`, and the two ways the log backend writes it.
 * Copied from k8s.io/apiserver v0.37.2: the fields and their JSON order from
 * `pkg/apis/audit/v1/types.go` (Go's encoding/json: struct order, `omitempty`, sorted map keys,
 * HTML-safe escapes); `metav1.MicroTime` (RFC 3339, 6 fraction digits, UTC);
 * `pkg/audit/request.go` (`maybeTruncateUserAgent`, 1024 bytes then `...TRUNCATED`);
 * `k8s.io/apimachinery/pkg/util/net` `SourceIPs` (X-Forwarded-For, X-Real-Ip, remote address);
 * `pkg/audit/format.go` `EventString` (the `legacy` format).
 */
import { isIP } from 'node:net';
import { goJSON } from '../apimachinery/go-json.ts';
import type { StatusDetails } from '../apimachinery/status.ts';
import type { Level, Stage } from './policy.ts';

/** `authenticationv1.UserInfo` as an event holds it. */
export interface EventUser {
  username?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

/** `audit.ObjectReference`. */
export interface ObjectReference {
  resource?: string;
  namespace?: string;
  name?: string;
  uid?: string;
  apiGroup?: string;
  apiVersion?: string;
  resourceVersion?: string;
  subresource?: string;
}

/** The bounded fields of `metav1.Status` an event keeps (`AuditContext.LogResponseObject`). */
export interface ResponseStatus {
  status?: string;
  message?: string;
  reason?: string;
  details?: StatusDetails;
  code: number;
}

/** An event being built; `requestObject`/`responseObject` are raw JSON text. */
export interface AuditEvent {
  level: Level;
  auditID: string;
  stage: Stage;
  requestURI: string;
  verb: string;
  user: EventUser;
  sourceIPs: string[];
  userAgent: string;
  objectRef?: ObjectReference;
  responseStatus?: ResponseStatus;
  requestObject?: string;
  responseObject?: string;
  /** µs since the epoch. */
  requestReceivedTimestamp: number;
  /** µs since the epoch. */
  stageTimestamp: number;
  annotations: Record<string, string>;
}

/** Now in µs since the epoch (`performance.timeOrigin` + `performance.now()`). */
export function nowMicros(): number {
  return Math.round((performance.timeOrigin + performance.now()) * 1000);
}

/** The last second {@link microTime} formatted, and its text up to the seconds. */
let lastSecond = Number.NaN;
let lastPrefix = '';

/** `metav1.MicroTime` JSON: `2006-01-02T15:04:05.000000Z` (UTC). */
export function microTime(us: number): string {
  const sec = Math.floor(us / 1_000_000);
  if (sec !== lastSecond) {
    // Date#toISOString on every call: 2 × 9.5 µs of a 55 µs event (loaded machine): once a second.
    lastSecond = sec;
    lastPrefix = new Date(sec * 1000).toISOString().slice(0, 19);
  }
  const micro = String(us - sec * 1_000_000).padStart(6, '0');
  return `${lastPrefix}.${micro}Z`;
}

/** Longest user agent kept (`maxUserAgentLength`); longer ones end with `...TRUNCATED`. */
export const MAX_USER_AGENT_LENGTH = 1024;

/** `maybeTruncateUserAgent` (Go slices bytes; so does this, on the UTF-8 encoding). */
export function truncateUserAgent(ua: string | undefined): string {
  if (ua === undefined) return '';
  const b = Buffer.from(ua);
  if (b.length <= MAX_USER_AGENT_LENGTH) return ua;
  // A cut inside a UTF-8 sequence: Go's JSON encoder then writes U+FFFD, as toString() does.
  return `${b.subarray(0, MAX_USER_AGENT_LENGTH).toString()}...TRUNCATED`;
}

/**
 * `utilnet.SourceIPs`: every valid address of X-Forwarded-For, X-Real-Ip unless already there,
 * and the connection's remote address unless it is already last.
 */
export function sourceIPs(
  forwardedFor: string | undefined,
  realIp: string | undefined,
  remoteAddress: string | undefined,
): string[] {
  const out: string[] = [];
  if (forwardedFor)
    for (const part of forwardedFor.split(',')) {
      const ip = normalizeIP(part.trim());
      if (ip) out.push(ip);
    }
  if (realIp) {
    const ip = normalizeIP(realIp);
    if (ip && !out.includes(ip)) out.push(ip);
  }
  const remote = remoteAddress ? normalizeIP(remoteAddress) : undefined;
  if (remote && (out.length === 0 || out[out.length - 1] !== remote)) out.push(remote);
  return out;
}

/** An address as Go's `net.IP.String()` prints it (an IPv4-mapped IPv6 address as IPv4). */
function normalizeIP(s: string): string | undefined {
  const v4mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(s);
  if (v4mapped) return v4mapped[1];
  const kind = isIP(s);
  if (kind === 4) return s;
  if (kind === 6) return s.toLowerCase();
  return undefined;
}

/**
 * The event as one JSON line, in Go's field order, `omitempty` applied; the raw request and
 * response objects are spliced in as they are (already JSON).
 */
export function eventJSON(ev: AuditEvent): string {
  // Two encodings around the raw objects (each goJSON call is a stringify and an escape pass).
  const head: Record<string, unknown> = {
    kind: 'Event',
    apiVersion: 'audit.k8s.io/v1',
    level: ev.level,
    auditID: ev.auditID,
    stage: ev.stage,
    requestURI: ev.requestURI,
    verb: ev.verb,
    user: userJSON(ev.user),
  };
  if (ev.sourceIPs.length > 0) head.sourceIPs = ev.sourceIPs;
  if (ev.userAgent !== '') head.userAgent = ev.userAgent;
  if (ev.objectRef) head.objectRef = objectRefJSON(ev.objectRef);
  if (ev.responseStatus) head.responseStatus = statusJSON(ev.responseStatus);
  const tail: Record<string, unknown> = {
    requestReceivedTimestamp: microTime(ev.requestReceivedTimestamp),
    stageTimestamp: microTime(ev.stageTimestamp),
  };
  const keys = Object.keys(ev.annotations);
  if (keys.length > 0) tail.annotations = Object.fromEntries(keys.sort().map((k) => [k, ev.annotations[k]]));
  let out = goJSON(head).slice(0, -1);
  if (ev.requestObject !== undefined) out += `,"requestObject":${ev.requestObject}`;
  if (ev.responseObject !== undefined) out += `,"responseObject":${ev.responseObject}`;
  return `${out},${goJSON(tail).slice(1)}\n`;
}

function userJSON(u: EventUser): EventUser {
  const extraKeys = Object.keys(u.extra ?? {}).sort();
  return {
    ...(u.username ? { username: u.username } : {}),
    ...(u.uid ? { uid: u.uid } : {}),
    ...(u.groups && u.groups.length > 0 ? { groups: u.groups } : {}),
    ...(extraKeys.length > 0 ? { extra: Object.fromEntries(extraKeys.map((k) => [k, u.extra![k]!])) } : {}),
  };
}

function objectRefJSON(o: ObjectReference): ObjectReference {
  const out: ObjectReference = {};
  for (const k of [
    'resource',
    'namespace',
    'name',
    'uid',
    'apiGroup',
    'apiVersion',
    'resourceVersion',
    'subresource',
  ] as const)
    if (o[k]) out[k] = o[k];
  return out;
}

function statusJSON(s: ResponseStatus): Record<string, unknown> {
  return {
    metadata: {},
    ...(s.status ? { status: s.status } : {}),
    ...(s.message ? { message: s.message } : {}),
    ...(s.reason ? { reason: s.reason } : {}),
    ...(s.details ? { details: s.details } : {}),
    ...(s.code ? { code: s.code } : {}),
  };
}

/** `EventString`: the `legacy` format's line (Go's `%q` approximated by JSON string quoting). */
export function eventString(ev: AuditEvent): string {
  let username = '<none>';
  let groups = '<none>';
  if (ev.user.username) {
    username = ev.user.username;
    if (ev.user.groups && ev.user.groups.length > 0) groups = ev.user.groups.map((g) => q(g)).join(',');
  }
  const namespace = ev.objectRef?.namespace || '<none>';
  const response = ev.responseStatus ? String(ev.responseStatus.code) : '<deferred>';
  const ip = ev.sourceIPs[0] ?? '<unknown>';
  return `${rfc3339Nano(ev.requestReceivedTimestamp)} AUDIT: id=${q(ev.auditID)} stage=${q(ev.stage)} ip=${q(ip)} method=${q(ev.verb)} user=${q(username)} groups=${q(groups)} as="<self>" asgroups="<lookup>" user-agent=${q(ev.userAgent)} namespace=${q(namespace)} uri=${q(ev.requestURI)} response="${response}"`;
}

function q(s: string): string {
  return JSON.stringify(s);
}

/** Go's `time.RFC3339Nano` in UTC: trailing zeros of the fraction dropped. */
function rfc3339Nano(us: number): string {
  const t = microTime(us);
  const frac = t.slice(20, 26).replace(/0+$/, '');
  return `${t.slice(0, 19)}${frac === '' ? '' : `.${frac}`}Z`;
}
