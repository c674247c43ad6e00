/**
 * Where the audit (`audit/auditor.ts`, docs/audit.md) meets the steps of `handle-request.ts`:
 * the proxy audits the requests it answers itself — cached reads, and its own 401 and 403 —
 * as the apiserver would have; a request passed upstream is audited by the apiserver, and here
 * only with `--audit-passed-upstream` (at Metadata level at most, annotated
 * `kube-cache-proxy.io/passed-upstream` with the reason, under the same audit ID as the apiserver's).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ResourceRequest } from '../apimachinery/request-info.ts';
import { isWatchParam } from '../apimachinery/request-info.ts';
import { internalError } from '../apimachinery/status.ts';
import { auditAttributes } from '../audit/attributes.ts';
import { AUDIT_ID_HEADER, type Auditor, type RequestAudit } from '../audit/auditor.ts';
import type { AccessControl, Admission, ClientIdentity } from '../auth/access-control.ts';
import type { UserInfo } from '../auth/user-info.ts';
import { writeStatus } from './send-status.ts';

/** `authorization.go`'s annotation keys and decisions. */
export const DECISION_ANNOTATION = 'authorization.k8s.io/decision';
export const REASON_ANNOTATION = 'authorization.k8s.io/reason';

/** The part of a request's exchange the audit reads and sets. */
export interface AuditedExchange {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly url: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly method: string;
  readonly longRunning: boolean;
  readonly decision: { kind: 'cache' | 'upstream'; info?: ResourceRequest | undefined };
  identity: ClientIdentity | undefined;
  /** When the request arrived (µs since the epoch); 0 without audit. */
  readonly received: number;
  audit?: RequestAudit | undefined;
}

/**
 * Who the apiserver would have seen: the proved user (TokenReview, certificate); in the simple
 * mode, a request without credential or with the proxy's own is the proxy's identity.
 */
async function userOf(access: AccessControl | undefined, x: AuditedExchange): Promise<UserInfo | undefined> {
  const id = x.identity;
  if (id?.kind === 'x509') return id.user;
  if (id?.kind === 'bearer' && id.user) return id.user;
  if (!access || access.o.delegatedAuth) return undefined;
  // Simple mode: a cached read was served only to the proxy's identity; upstream, a request
  // without credential carries the proxy's.
  if (id?.kind === 'bearer' && x.decision.kind !== 'cache') return undefined;
  return (await access.o.proxyIdentity?.identity()) ?? undefined;
}

async function begin(
  audit: Auditor,
  access: AccessControl | undefined,
  x: AuditedExchange,
  user?: UserInfo | undefined | 'unauthenticated',
): Promise<RequestAudit | undefined> {
  const u = user === 'unauthenticated' ? undefined : (user ?? (await userOf(access, x)));
  const attrs = auditAttributes(
    x.method,
    x.path,
    x.query,
    x.decision.info,
    isWatchParam(x.query.get('watch')),
    u,
  );
  return audit.begin({
    req: x.req,
    url: x.url,
    attrs,
    receivedAt: x.received,
    longRunning: x.longRunning,
    auditID: audit.auditID(x.req),
  });
}

/**
 * A refusal of `admit`: a 401 is the apiserver's failed-authentication event (`ResponseStarted`
 * only); a 403 a whole request, with the authorization decision annotations when a
 * SubjectAccessReview denied it. Call before the Status is written.
 */
export async function auditRefusal(
  audit: Auditor,
  access: AccessControl | undefined,
  x: AuditedExchange,
  a: Extract<Admission, { kind: 'refuse' }>,
): Promise<void> {
  echoAuditID(audit, x);
  if (a.status.code === 401) {
    const r = await begin(audit, access, x, 'unauthenticated');
    r?.failedAuthentication(x.res, a.status.status);
    return;
  }
  const r = await begin(audit, access, x);
  if (!r) return;
  x.audit = r;
  r.requestReceived();
  // Authorization runs after the audit filter: its annotations are not in RequestReceived.
  if (a.decision === 'deny') {
    r.annotate(DECISION_ANNOTATION, 'forbid');
    r.annotate(REASON_ANNOTATION, a.reason ?? '');
  }
  r.logStatus(a.status.status);
  r.attach(x.res);
}

/**
 * A cached read about to be served (`reason` undefined), or, with `--audit-passed-upstream`, a
 * request passed upstream (`reason` its reason). False when the `RequestReceived` event could not
 * be written in `blocking-strict` mode: the 500 has been answered.
 */
export async function auditStart(
  audit: Auditor,
  access: AccessControl | undefined,
  x: AuditedExchange,
  admission: { decision?: string; reason?: string } | undefined,
  reason: string | undefined,
): Promise<boolean> {
  if (reason !== undefined && !audit.o.passedUpstream) return true;
  echoAuditID(audit, x);
  const r = await begin(audit, access, x);
  if (!r) return true;
  if (reason !== undefined) r.passedUpstream(reason);
  x.audit = r;
  if (!r.requestReceived() && audit.o.backend.mode === 'blocking-strict') {
    x.audit = undefined;
    writeStatus(x.res, internalError('failed to store audit event'));
    return false;
  }
  // Authorization runs after the audit filter: its annotations are not in RequestReceived.
  if (admission?.decision === 'allow') {
    r.annotate(DECISION_ANNOTATION, 'allow');
    r.annotate(REASON_ANNOTATION, admission.reason ?? '');
  }
  r.attach(x.res);
  return true;
}

/**
 * `WithAuditInit`: the request's audit ID (the client's `Audit-ID` or a new one) in the response,
 * and in the request's headers, so that the apiserver, should the request go upstream, logs it
 * under the same ID (it takes a client's `Audit-ID` as is).
 */
function echoAuditID(audit: Auditor, x: AuditedExchange): void {
  const id = audit.auditID(x.req);
  x.req.headers[AUDIT_ID_HEADER] = id;
  x.res.setHeader(AUDIT_ID_HEADER, id);
}

/** A cached read the cache handed upstream after all: its event is completed as passed upstream. */
export function auditHandedUpstream(x: AuditedExchange, reason: string): void {
  x.audit?.passedUpstream(reason);
}
