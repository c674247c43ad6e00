/**
 * The main listener's access control as the settings ask for it (docs/design.md §4): the Host
 * allow-list without `--delegated-auth`; with it, TokenReview and SubjectAccessReview with their
 * decision caches and `--authorization-outage-grace`; the simple mode's same-identity check; the
 * proxy's own impersonation rights for `--impersonate-certificate-clients`.
 */
import type { Config } from '../config/config.ts';
import type { Metrics } from '../ops/metrics.ts';
import type { Logger } from '../util/logger.ts';
import { AcceptHosts } from './accept-hosts.ts';
import { AccessControl } from './access-control.ts';
import { IMPERSONATION_RIGHTS_TTL_MS, LegacyImpersonationRights } from './impersonation-rights.ts';
import { ProxyIdentity } from './proxy-identity.ts';
import type { ReviewUpstream } from './review-client.ts';
import { ReviewOutage } from './review-outage.ts';
import { SubjectAccessReviewAuthorizer } from './subject-access-review.ts';
import { TokenReviewAuthenticator } from './token-review.ts';

/**
 * The access control of the main listener from the config (docs/design.md §4): the Host
 * allow-list without `--delegated-auth`, TokenReview + SubjectAccessReview with their caches,
 * the simple mode's same-identity check.
 */
export function createAccessControl(
  config: Config,
  reviews: ReviewUpstream | undefined,
  logger: Logger,
  metrics?: Metrics,
): AccessControl {
  const lookup = (cache: 'authentication' | 'authorization') => (hit: boolean) =>
    metrics?.webhookCacheRequests.inc({ cache, result: hit ? 'hit' : 'miss' });
  // The outage policy applies to the delegated decisions only (not to the simple mode's
  // same-identity check, whose failure sends the request upstream anyway).
  // One outage memory for both review clients (one apiserver answers both).
  const outage = config.delegatedAuth && config.authorizationOutageGrace > 0 ? new ReviewOutage() : undefined;
  const grace = (cache: 'authentication' | 'authorization', review: string) =>
    outage
      ? {
          outageGraceMs: config.authorizationOutageGrace,
          outage,
          onGrace: (err: Error) => {
            metrics?.outageGraceDecisions.inc({ cache });
            logger.warn(
              { err: err.message },
              `${review} failed: an allowed answer reused within --authorization-outage-grace`,
            );
          },
        }
      : {};
  const tokens = reviews
    ? new TokenReviewAuthenticator({
        upstream: reviews,
        ttlMs: config.authenticationTokenWebhookCacheTtl,
        onCacheLookup: lookup('authentication'),
        ...grace('authentication', 'TokenReview'),
      })
    : undefined;
  const authorizer =
    reviews && config.delegatedAuth
      ? new SubjectAccessReviewAuthorizer({
          upstream: reviews,
          authorizedTtlMs: config.authorizationWebhookCacheAuthorizedTtl,
          unauthorizedTtlMs: config.authorizationWebhookCacheUnauthorizedTtl,
          onCacheLookup: lookup('authorization'),
          ...grace('authorization', 'SubjectAccessReview'),
        })
      : undefined;
  return new AccessControl({
    delegatedAuth: config.delegatedAuth,
    acceptHosts: new AcceptHosts(config.acceptHosts),
    ...(tokens ? { tokens } : {}),
    ...(authorizer ? { authorizer } : {}),
    ...(reviews && tokens && !config.delegatedAuth
      ? {
          proxyIdentity: new ProxyIdentity({
            upstream: reviews,
            tokens,
            ttlMs: config.authenticationTokenWebhookCacheTtl,
            log: logger,
          }),
        }
      : {}),
    impersonateCertificateClients: config.impersonateCertificateClients,
    ...(reviews && config.impersonateCertificateClients
      ? {
          impersonationRights: new LegacyImpersonationRights({
            upstream: reviews,
            ttlMs: IMPERSONATION_RIGHTS_TTL_MS,
          }),
        }
      : {}),
    log: logger,
    ...(metrics
      ? {
          metrics: {
            authenticationAttempt: (result) => metrics.authenticationAttempts.inc({ result }),
            authorizationDecision: (decision) => metrics.authorizationDecisions.inc({ decision }),
          },
        }
      : {}),
  });
}
