/**
 * Know who is asking (docs/design.md §4): the per-request gate of the main listener, in the
 * apiserver's filter order (`server/config.go` `DefaultBuildHandlerChain`: authentication, then
 * authorization). Three modes:
 *
 * - **simple** (sidecar, no `--delegated-auth`): the `Host` must match `--accept-hosts`; a
 *   cached read is served only to a request with no credential or one of the proxy's own
 *   identity (`proxy-identity.ts`); any other credential goes upstream with it.
 * - **authenticated** (`--delegated-auth`): a client certificate verified by `--client-ca-file`
 *   or a bearer token reviewed by TokenReview is the user; a presented but invalid credential
 *   is 401 (an unverified certificate only when no valid token follows it: the union order); a request without credential goes upstream WITHOUT the proxy's (the apiserver's
 *   anonymous rules decide) and is never served from the cache; every cached read is authorized
 *   by SubjectAccessReview (403 worded as the apiserver's when denied; upstream with the
 *   client's credential when the review fails). With `--authorization-outage-grace`, a review
 *   that fails for want of an answer may reuse an allowed answer (`outage-grace.ts`).
 * - refused: `listen-mode.ts` (the process does not start).
 */
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { ResourceRequest } from '../apimachinery/request-info.ts';
import type { StatusError } from '../apimachinery/status.ts';
import type { Logger } from '../util/logger.ts';
import type { AcceptHosts } from './accept-hosts.ts';
import { bearerToken } from './bearer-token.ts';
import { forbidden, proxyForbidden, unauthorized } from './forbidden.ts';
import type { ImpersonationRights } from './impersonation-rights.ts';
import type { ProxyIdentity } from './proxy-identity.ts';
import { type AuthorizationAttributes, readAttributes } from './request-attributes.ts';
import type { SubjectAccessReviewAuthorizer } from './subject-access-review.ts';
import type { TokenReviewAuthenticator } from './token-review.ts';
import { type UserInfo, x509User } from './user-info.ts';

/** The credential a request presented, and whom it proved (when checked). */
export type ClientIdentity =
  | { kind: 'none' }
  /** An `Authorization` header (any scheme); `user` once a TokenReview proved it. */
  | { kind: 'bearer'; authorization: string; user?: UserInfo }
  /** A client certificate verified by `--client-ca-file`. */
  | { kind: 'x509'; user: UserInfo };

/** Why a cached read goes upstream because of who asks (entries of `UPSTREAM_REASONS`). */
export type IdentityReason = 'unauthenticated' | 'other-identity' | 'authorization-error';

/** The authorization outcome recorded in the request's log line. */
export type AuthzDecision = 'allow' | 'deny' | 'unauthenticated';

/** What the gate decided. */
export type Admission =
  /** Answer this Status (401, 403) and nothing else. */
  | {
      kind: 'refuse';
      status: StatusError;
      identity: ClientIdentity;
      decision?: AuthzDecision;
      /** The authorizer's reason (SubjectAccessReview `status.reason`) with a decision. */
      reason?: string;
      cached?: boolean;
    }
  /** Go on: a cached read may be served from the cache (`upstream` undefined) or must go upstream. */
  | {
      kind: 'admit';
      identity: ClientIdentity;
      upstream?: IdentityReason;
      decision?: AuthzDecision;
      /** The authorizer's reason (SubjectAccessReview `status.reason`) with a decision. */
      reason?: string;
      cached?: boolean;
    };

/** A cached read to authorize. */
export interface CacheReadRequest {
  verb: 'get' | 'list' | 'watch';
  info: ResourceRequest;
  query: URLSearchParams;
}

/** Metric hooks (kube_cache_proxy_authentication_attempts_total, …_authorization_decisions_total). */
export interface AccessMetrics {
  authenticationAttempt(result: 'success' | 'failure' | 'error'): void;
  authorizationDecision(decision: 'allowed' | 'denied' | 'error'): void;
}

/** Options of {@link AccessControl}. */
export interface AccessControlOptions {
  delegatedAuth: boolean;
  /** The Host allow-list; applied when `delegatedAuth` is false. */
  acceptHosts?: AcceptHosts;
  /** Required with `delegatedAuth`. */
  tokens?: TokenReviewAuthenticator;
  /** Required with `delegatedAuth`. */
  authorizer?: SubjectAccessReviewAuthorizer;
  /** The simple mode's same-identity check; without it any credential goes upstream. */
  proxyIdentity?: ProxyIdentity;
  impersonateCertificateClients: boolean;
  /** The proxy's own impersonation rights, for the per-client impersonation mode (`server/upstream-credentials.ts`). */
  impersonationRights?: ImpersonationRights;
  metrics?: AccessMetrics;
  log?: Logger;
}

/** The per-request gate. */
export class AccessControl {
  readonly o: AccessControlOptions;
  constructor(o: AccessControlOptions) {
    if (o.delegatedAuth && (!o.tokens || !o.authorizer))
      throw new Error('AccessControl: delegatedAuth needs a TokenReviewAuthenticator and an authorizer');
    this.o = o;
  }

  /**
   * Authenticates `req` and, for a cached read (`read`), decides whether the cache may answer.
   * Never throws: review failures become 401 (authentication) or an upstream reason (authorization).
   */
  async admit(req: IncomingMessage, read: CacheReadRequest | undefined): Promise<Admission> {
    const o = this.o;
    if (!o.delegatedAuth && o.acceptHosts && !o.acceptHosts.accepts(req.headers.host)) {
      return {
        kind: 'refuse',
        identity: { kind: 'none' },
        status: proxyForbidden(
          `Host ${JSON.stringify(req.headers.host ?? '')} is not accepted by --accept-hosts (kube-cache-proxy answers only requests addressed to the machine itself without authentication)`,
        ),
      };
    }
    const id = await this.#identify(req);
    if (id === 'unauthorized') return { kind: 'refuse', identity: { kind: 'none' }, status: unauthorized() };
    if (!read) return { kind: 'admit', identity: id };
    if (!o.delegatedAuth) return this.#simple(id);
    const user = id.kind === 'none' ? undefined : id.user;
    if (!user)
      return { kind: 'admit', identity: id, upstream: 'unauthenticated', decision: 'unauthenticated' };
    const attrs = readAttributes(read.verb, read.info, read.query);
    try {
      const d = await o.authorizer!.authorize(user, attrs);
      o.metrics?.authorizationDecision(d.allowed ? 'allowed' : 'denied');
      this.#logDecision(user, attrs, d.allowed ? 'allow' : 'deny', d.cached, d.grace === true);
      if (d.allowed)
        return { kind: 'admit', identity: id, decision: 'allow', reason: d.reason, cached: d.cached };
      return {
        kind: 'refuse',
        identity: id,
        status: forbidden(user.username, attrs, d.reason),
        decision: 'deny',
        reason: d.reason,
        cached: d.cached,
      };
    } catch (err) {
      o.metrics?.authorizationDecision('error');
      o.log?.warn({ err: (err as Error).message }, 'SubjectAccessReview failed: request passed upstream');
      return { kind: 'admit', identity: id, upstream: 'authorization-error' };
    }
  }

  async #simple(id: ClientIdentity): Promise<Admission> {
    if (id.kind === 'none') return { kind: 'admit', identity: id };
    const pi = this.o.proxyIdentity;
    const same = pi
      ? id.kind === 'x509'
        ? await pi.sameAsUser(id.user)
        : await pi.sameAsAuthorization(id.authorization)
      : false;
    return same
      ? { kind: 'admit', identity: id }
      : { kind: 'admit', identity: id, upstream: 'other-identity' };
  }

  /**
   * The credential of `req`, in the apiserver's union order: a client certificate first, then the
   * bearer token. A certificate that does not verify fails softly, as the union authenticator
   * (`request/union/union.go`) keeps the x509 authenticator's error and moves on: a valid token
   * still authenticates the request; only when nothing else does is the request 401 (the error
   * is returned, so `union.NewFailOnError` never reaches the anonymous authenticator).
   */
  async #identify(req: IncomingMessage): Promise<ClientIdentity | 'unauthorized'> {
    const o = this.o;
    const sock = req.socket as Partial<TLSSocket>;
    const cert = typeof sock.getPeerCertificate === 'function' ? sock.getPeerCertificate() : undefined;
    let certFailed = false;
    // A certificate without CN authenticates no one, without error (x509.go
    // `CommonNameUserConversion`): the request counts as without one.
    if (cert && Object.keys(cert).length > 0) {
      if (!sock.authorized) certFailed = true;
      else {
        const user = x509User(cert);
        if (user) {
          if (o.delegatedAuth) o.metrics?.authenticationAttempt('success');
          return { kind: 'x509', user };
        }
      }
    }
    const header = req.headers.authorization;
    // No bearer token by the apiserver's rule (no header, another scheme, `Bearer` alone,
    // `Bearer\ttok`, `Bearer  tok`): its bearer authenticator ignores the header.
    const token = header === undefined ? undefined : bearerToken(header);
    if (token === undefined && certFailed) {
      o.metrics?.authenticationAttempt('failure');
      return 'unauthorized';
    }
    if (header === undefined) return { kind: 'none' };
    if (!o.delegatedAuth) return { kind: 'bearer', authorization: header };
    // Anonymous to the apiserver; so to the proxy: forwarded as is, never served from the cache.
    if (token === undefined) return { kind: 'bearer', authorization: header };
    try {
      const r = await o.tokens!.authenticate(token);
      o.metrics?.authenticationAttempt(r.authenticated ? 'success' : 'failure');
      if (!r.authenticated) {
        o.log?.debug({ decision: 'unauthenticated', cached: r.cached }, 'token not authenticated');
        return 'unauthorized';
      }
      return { kind: 'bearer', authorization: header, user: r.user };
    } catch (err) {
      // The apiserver answers 401 when its token webhook fails (authentication.go).
      o.metrics?.authenticationAttempt('error');
      o.log?.warn({ err: (err as Error).message }, 'TokenReview failed: answered 401');
      return 'unauthorized';
    }
  }

  #logDecision(
    user: UserInfo,
    a: AuthorizationAttributes,
    decision: AuthzDecision,
    cached: boolean,
    grace: boolean,
  ): void {
    if (!this.o.log?.isLevelEnabled('debug')) return;
    this.o.log.debug(
      {
        user: user.username,
        verb: a.verb,
        group: a.group,
        resource: a.resource,
        namespace: a.namespace ?? '',
        name: a.name ?? '',
        decision,
        cached,
        ...(grace ? { grace } : {}),
      },
      'authorization decision',
    );
  }
}
