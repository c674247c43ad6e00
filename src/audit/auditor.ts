/**
 * The audit of one request the proxy answers itself, stage by stage, as the apiserver's filters
 * do it (k8s.io/apiserver v0.37.2): `endpoints/filters/audit_init.go` (the `Audit-ID` a client sent
 * or a new UUID, echoed in the response), `endpoints/filters/audit.go` `WithAudit` (the policy
 * evaluated on the authenticated request; `RequestReceived` before the handler, and on its
 * failure in `blocking-strict` a 500; `ResponseStarted` when a long-running request writes its
 * head; `ResponseComplete` at the end, with a made-up 200 "Connection closed early" when nothing
 * was written; `Panic` when the handler throws), `endpoints/filters/authn_audit.go`
 * (`WithFailedAuthenticationAudit`: a 401 is one `ResponseStarted` event with "Authentication
 * failed, attempted: …"), `pkg/audit/request.go` (`LogRequestMetadata`, `LogResponseObject`:
 * the bounded Status fields at Metadata and above, the response object only at
 * `RequestResponse`, managed fields dropped with `omitManagedFields`) and `pkg/audit/context.go`
 * (`ProcessEventStage`: omitted stages are not written; `RequestReceived` is stamped with the
 * receive time).
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, OutgoingHttpHeader, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { goJSON } from '../apimachinery/go-json.ts';
import type { Status } from '../apimachinery/status.ts';
import type { UserInfo } from '../auth/user-info.ts';
import type { AuditAttributes, PolicyRuleEvaluator, RequestAuditConfig } from './checker.ts';
import { type AuditEvent, nowMicros, type ResponseStatus, sourceIPs, truncateUserAgent } from './event.ts';
import type { LogBackend } from './log-backend.ts';
import { levelLess, type Stage } from './policy.ts';

/** The annotation that marks an event of a request the apiserver answered (`--audit-passed-upstream`); its value is the reason. */
export const PASSED_UPSTREAM_ANNOTATION = 'kube-cache-proxy.io/passed-upstream';

/** The most bytes of an error answer read for its Status below `RequestResponse` (a Status is far smaller). */
const MAX_STATUS_BYTES = 64 * 1024;

/** `Audit-ID`, the request and response header (`auditinternal.HeaderAuditID`). */
export const AUDIT_ID_HEADER = 'audit-id';

/** Metric hook (`kube_cache_proxy_audit_level_total{level}`, `ObservePolicyLevel`). */
export type ObserveLevel = (level: RequestAuditConfig['level']) => void;

/** Options of {@link Auditor}. */
export interface AuditorOptions {
  evaluator: PolicyRuleEvaluator;
  backend: LogBackend;
  /** `--audit-passed-upstream`: also audit requests the apiserver answers (Metadata level at most). */
  passedUpstream: boolean;
  observeLevel?: ObserveLevel;
  /** µs since the epoch; default the wall clock. */
  now?: () => number;
}

/** What {@link Auditor.begin} needs of a request. */
export interface AuditRequest {
  req: IncomingMessage;
  /** The origin-form target (`/path?query`), the event's `requestURI`. */
  url: string;
  attrs: AuditAttributes;
  /** When the request arrived (µs since the epoch). */
  receivedAt: number;
  longRunning: boolean;
  auditID: string;
}

/** The policy and the backend; starts the audit of each request. */
export class Auditor {
  readonly o: AuditorOptions;
  constructor(o: AuditorOptions) {
    this.o = o;
  }

  /** The request's audit ID: the `Audit-ID` it sent (as is, as the apiserver), else a new UUID. */
  auditID(req: IncomingMessage): string {
    const h = req.headers[AUDIT_ID_HEADER];
    const v = Array.isArray(h) ? h[0] : h;
    return v !== undefined && v !== '' ? v : randomUUID();
  }

  /** Evaluates the policy; undefined at level None (nothing is written for the request). */
  begin(r: AuditRequest): RequestAudit | undefined {
    const config = this.o.evaluator.evaluate(r.attrs);
    this.o.observeLevel?.(config.level);
    if (config.level === 'None') return undefined;
    return new RequestAudit(this, config, r);
  }

  /** µs since the epoch. */
  now(): number {
    return (this.o.now ?? nowMicros)();
  }
}

/** One request's event as it moves through the stages. */
export class RequestAudit {
  readonly #a: Auditor;
  config: RequestAuditConfig;
  readonly event: AuditEvent;
  readonly #longRunning: boolean;
  #chunks: Buffer[] | undefined;
  #gzip = false;
  #codeSeen = false;
  #done = false;
  #started = false;
  #statusLogged = false;
  /** Bytes of a Status body kept past the Metadata level (an error body the event reads; larger ones are not read). */
  #statusBytes = 0;

  constructor(a: Auditor, config: RequestAuditConfig, r: AuditRequest) {
    this.#a = a;
    this.config = config;
    this.#longRunning = r.longRunning;
    const { req, attrs } = r;
    const h = req.headers;
    this.event = {
      level: config.level,
      auditID: r.auditID,
      stage: 'RequestReceived',
      requestURI: r.url,
      verb: attrs.verb,
      user: attrs.user ? eventUser(attrs.user) : {},
      sourceIPs: sourceIPs(one(h['x-forwarded-for']), one(h['x-real-ip']), req.socket?.remoteAddress),
      userAgent: truncateUserAgent(one(h['user-agent'])),
      ...(attrs.resourceRequest
        ? {
            objectRef: {
              resource: attrs.resource ?? '',
              namespace: attrs.namespace ?? '',
              name: attrs.name ?? '',
              apiGroup: attrs.apiGroup ?? '',
              apiVersion: attrs.apiVersion ?? '',
              subresource: attrs.subresource ?? '',
            },
          }
        : {}),
      requestReceivedTimestamp: r.receivedAt,
      stageTimestamp: r.receivedAt,
      annotations: {},
    };
  }

  /** `AddAuditAnnotation`. */
  annotate(key: string, value: string): void {
    this.event.annotations[key] = value;
  }

  /**
   * Marks the event as of a request the apiserver answers ({@link PASSED_UPSTREAM_ANNOTATION},
   * value the reason). Before `RequestReceived`, a level above Metadata is lowered to Metadata:
   * the proxy does not keep the bodies of requests the apiserver audits itself.
   */
  passedUpstream(reason: string): void {
    this.annotate(PASSED_UPSTREAM_ANNOTATION, reason);
    if (!this.#started && levelLess('Metadata', this.config.level)) {
      this.config = { ...this.config, level: 'Metadata' };
      this.event.level = 'Metadata';
    }
  }

  /** Writes the `RequestReceived` stage; false when it failed in `blocking-strict` (answer 500). */
  requestReceived(): boolean {
    this.#started = true;
    return this.#stage('RequestReceived');
  }

  /**
   * Watches `res`: its status code (and `ResponseStarted` for a long-running request) when the
   * head is written, and the body when the event needs it: a Status error's fields at any level,
   * the response object at `RequestResponse` (not for a long-running request).
   */
  attach(res: ServerResponse): void {
    const self = this;
    const writeHead = res.writeHead;
    res.writeHead = function (this: ServerResponse, code: number, ...rest: unknown[]) {
      self.#head(code, headerOf(rest, 'content-encoding'));
      return (writeHead as (...a: unknown[]) => ServerResponse).call(this, code, ...rest);
    } as ServerResponse['writeHead'];
    const write = res.write;
    // An `end(chunk)` that writes through `this.write` (light-my-request's) is captured once.
    let inEnd = false;
    res.write = function (this: ServerResponse, chunk: unknown, ...rest: unknown[]) {
      if (!inEnd) {
        self.#head(res.statusCode, res.getHeader('content-encoding'));
        self.#capture(chunk);
      }
      return (write as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
    } as ServerResponse['write'];
    const end = res.end;
    res.end = function (this: ServerResponse, chunk?: unknown, ...rest: unknown[]) {
      if (typeof chunk !== 'function' && chunk !== undefined && chunk !== null) {
        self.#head(res.statusCode, res.getHeader('content-encoding'));
        self.#capture(chunk);
      }
      inEnd = true;
      try {
        return (end as (...a: unknown[]) => ServerResponse).call(this, chunk, ...rest);
      } finally {
        inEnd = false;
      }
    } as ServerResponse['end'];
  }

  /** Writes `ResponseComplete` (once): the response closed. */
  complete(): void {
    if (this.#done) return;
    this.#done = true;
    const ev = this.event;
    if (!ev.responseStatus) {
      ev.responseStatus = { status: 'Success', message: 'Connection closed early', code: 200 };
      if (this.#longRunning) this.#stage('ResponseStarted');
    }
    this.#logResponse();
    this.#stage('ResponseComplete');
  }

  /** Writes `Panic` (once) for an error thrown while the request was handled; no `ResponseComplete` follows. */
  panic(err: unknown): void {
    if (this.#done) return;
    this.#done = true;
    this.event.responseStatus = {
      status: 'Failure',
      message: `APIServer panic'd: ${err instanceof Error ? err.message : String(err)}`,
      reason: 'InternalError',
      code: 500,
    };
    this.#stage('Panic');
  }

  /**
   * `LogResponseObject` of a Status the proxy answers itself (401, 403, 500), before it is
   * written: its bounded fields, and the Status as the response object at `RequestResponse`.
   */
  logStatus(status: Status): void {
    this.#statusLogged = true;
    this.event.responseStatus = {
      status: status.status,
      message: status.message,
      ...(status.reason ? { reason: status.reason } : {}),
      ...(status.details ? { details: status.details } : {}),
      code: status.code,
    };
    if (this.#wantObject()) this.event.responseObject = goJSON(status);
  }

  /**
   * `WithFailedAuthenticationAudit`: a 401 is one event, `ResponseStarted`, written when its
   * head is (no `RequestReceived`, no `ResponseComplete`). Call before `status` is written.
   */
  failedAuthentication(res: ServerResponse, status: Status): void {
    this.#done = true;
    this.logStatus(status);
    const writeHead = res.writeHead;
    const self = this;
    res.writeHead = function (this: ServerResponse, code: number, ...rest: unknown[]) {
      if (!self.#codeSeen) {
        self.#codeSeen = true;
        self.event.responseStatus!.code = code;
        self.#stage('ResponseStarted');
      }
      return (writeHead as (...a: unknown[]) => ServerResponse).call(this, code, ...rest);
    } as ServerResponse['writeHead'];
  }

  #head(code: number, encoding: unknown): void {
    if (this.#codeSeen) return;
    this.#codeSeen = true;
    const ev = this.event;
    ev.responseStatus = { ...(ev.responseStatus ?? {}), code };
    this.#gzip = String(encoding ?? '').toLowerCase() === 'gzip';
    if (!this.#statusLogged && (this.#wantObject() || code < 200 || code >= 300)) this.#chunks = [];
    if (this.#longRunning) this.#stage('ResponseStarted');
  }

  #capture(chunk: unknown): void {
    if (!this.#chunks) return;
    const b =
      typeof chunk === 'string'
        ? Buffer.from(chunk)
        : chunk instanceof Uint8Array
          ? Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
          : undefined;
    if (!b) return;
    if (!this.#wantObject()) {
      // Only a Status is read from it: an answer larger than any Status is not kept.
      this.#statusBytes += b.length;
      if (this.#statusBytes > MAX_STATUS_BYTES) {
        this.#chunks = undefined;
        return;
      }
    }
    this.#chunks.push(b);
  }

  #wantObject(): boolean {
    return !levelLess(this.config.level, 'RequestResponse') && !this.#longRunning;
  }

  /** `LogResponseObject`: the Status fields, and the object at RequestResponse. */
  #logResponse(): void {
    const chunks = this.#chunks;
    this.#chunks = undefined;
    if (!chunks || chunks.length === 0) return;
    let body: Buffer = Buffer.concat(chunks);
    if (this.#gzip) {
      try {
        body = gunzipSync(body);
      } catch {
        return;
      }
    }
    const text = body.toString().trimEnd();
    let obj: unknown;
    try {
      obj = JSON.parse(text);
    } catch {
      return;
    }
    const ev = this.event;
    if (isStatus(obj))
      ev.responseStatus = {
        ...(obj.status ? { status: obj.status } : {}),
        ...(obj.message ? { message: obj.message } : {}),
        ...(obj.reason ? { reason: obj.reason } : {}),
        ...(obj.details ? { details: obj.details } : {}),
        code: ev.responseStatus?.code ?? obj.code ?? 0,
      } as ResponseStatus;
    if (levelLess(this.config.level, 'RequestResponse') || this.#longRunning) return;
    ev.responseObject = this.config.omitManagedFields ? goJSON(withoutManagedFields(obj)) : text;
  }

  #stage(stage: Stage): boolean {
    if (this.config.omitStages.includes(stage)) return true;
    const ev = this.event;
    ev.stage = stage;
    ev.stageTimestamp = stage === 'RequestReceived' ? ev.requestReceivedTimestamp : this.#a.now();
    return this.#a.o.backend.processEvent(ev);
  }
}

/** The event's `user` from a `user.Info` (`LogRequestMetadata`: extra always a map). */
function eventUser(u: UserInfo): AuditEvent['user'] {
  return { username: u.username, uid: u.uid, groups: [...u.groups], extra: { ...u.extra } };
}

/** `copyWithoutManagedFields`: the object's, and each list item's, `metadata.managedFields` dropped. */
export function withoutManagedFields(obj: unknown): unknown {
  if (!obj || typeof obj !== 'object') return obj;
  const o = obj as { metadata?: Record<string, unknown>; items?: unknown[] };
  if (o.metadata && typeof o.metadata === 'object') delete o.metadata.managedFields;
  if (Array.isArray(o.items))
    for (const it of o.items) {
      const m = (it as { metadata?: Record<string, unknown> } | null)?.metadata;
      if (m && typeof m === 'object') delete m.managedFields;
    }
  return obj;
}

function isStatus(o: unknown): o is {
  status?: string;
  message?: string;
  reason?: string;
  details?: ResponseStatus['details'];
  code?: number;
} {
  return !!o && typeof o === 'object' && (o as { kind?: unknown }).kind === 'Status';
}

function one(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/** A header of `writeHead`'s arguments (`[headers]` or `[reason, headers]`, object or flat array). */
function headerOf(rest: unknown[], name: string): unknown {
  const h = (typeof rest[0] === 'string' ? rest[1] : rest[0]) as
    | OutgoingHttpHeaders
    | OutgoingHttpHeader[]
    | undefined;
  if (!h) return undefined;
  if (Array.isArray(h)) {
    for (let i = 0; i + 1 < h.length; i += 2) if (String(h[i]).toLowerCase() === name) return h[i + 1];
    return undefined;
  }
  for (const [k, v] of Object.entries(h)) if (k.toLowerCase() === name) return v;
  return undefined;
}
