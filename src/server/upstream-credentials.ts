/**
 * The ONE place that decides what credential a forwarded request carries upstream, and over
 * which pool (docs/design.md §4): used by `passthrough.ts` (and by the HTTP-Upgrade tunnel).
 *
 * | client presented | carries upstream | pool |
 * |---|---|---|
 * | an `Authorization` (bearer) | that header, with its own `Impersonate-*` | without the proxy's client certificate |
 * | a client certificate, `--impersonate-certificate-clients` | the proxy's credential + `Impersonate-User`/`-Group` | the proxy's |
 * | a client certificate, without the flag | nothing: 403 naming the flag | — |
 * | a client certificate and its own `Impersonate-*` | nothing: 403 | — |
 * | nothing, `--delegated-auth` | nothing (the apiserver's anonymous rules decide) | without the proxy's client certificate |
 * | nothing, simple mode | the proxy's credential (the sidecar model) | the proxy's |
 * | nothing, simple mode, with `Impersonate-*` | nothing: 403 (never the proxy's rights) | — |
 *
 * Impersonation follows constrained impersonation (KEP-5284): a node user (`system:node:<n>`
 * with only `system:nodes`) and a service account username are sent as `Impersonate-User`
 * alone (the `arbitrary-node` / `serviceaccount` modes fix their groups); any other user as
 * `user-info` with its groups, without `system:authenticated` (the apiserver adds it).
 */
import type { Dispatcher } from 'undici';
import type { StatusError } from '../apimachinery/status.ts';
import type { ClientIdentity } from '../auth/access-control.ts';
import { proxyForbidden } from '../auth/forbidden.ts';
import {
  ALL_AUTHENTICATED,
  isServiceAccountUsername,
  NODES_GROUP,
  nodeName,
  type UserInfo,
} from '../auth/user-info.ts';
import type { UpstreamTarget } from './upstream-target.ts';

/** What identifies the request and the proxy's policy. */
export interface CredentialInput {
  identity: ClientIdentity;
  /** The request headers to forward (hop-by-hop already removed); not modified. */
  headers: Record<string, string | string[]>;
  delegatedAuth: boolean;
  impersonateCertificateClients: boolean;
  longRunning: boolean;
  /** An HTTP Upgrade (`upgrade-tunnel.ts`): the HTTP/1.1-only pools (`upgradeDispatcher`). */
  upgrade?: boolean;
}

/** How to forward: headers (with the credential) and pool. */
export interface ForwardPlan {
  headers: Record<string, string | string[]>;
  dispatcher: Dispatcher;
  /** Whose credential travels (for logs): the client's, the proxy's, the proxy impersonating, none. */
  carries: 'client' | 'proxy' | 'impersonation' | 'none';
}

/** The message of the 403 for an x509 client's pass-through without the flag. */
export const IMPERSONATION_FLAG_MESSAGE =
  "a client certificate cannot be forwarded to the apiserver: requests that are not served from the cache need --impersonate-certificate-clients (the proxy then impersonates the certificate's user)";

/** The message of the 403 for a client's own Impersonate-* headers without its own bearer token. */
export const CLIENT_IMPERSONATION_MESSAGE =
  "Impersonate-* headers are forwarded only with the client's own bearer token (kube-cache-proxy never lends its own credentials to impersonate)";

/** The `Impersonate-*` headers for the proxy acting as `user` (constrained impersonation modes). */
export function impersonationHeaders(user: UserInfo): Record<string, string | string[]> {
  const groups = user.groups.filter((g) => g !== ALL_AUTHENTICATED);
  const onlyNodes = groups.length === 0 || (groups.length === 1 && groups[0] === NODES_GROUP);
  if (
    (nodeName(user.username) !== undefined && onlyNodes) ||
    (isServiceAccountUsername(user.username) && groups.every((g) => g.startsWith('system:serviceaccounts')))
  )
    return { 'impersonate-user': user.username };
  const h: Record<string, string | string[]> = { 'impersonate-user': user.username };
  if (groups.length > 0) h['impersonate-group'] = groups;
  if (user.uid !== '') h['impersonate-uid'] = user.uid;
  for (const [k, v] of Object.entries(user.extra)) h[`impersonate-extra-${encodeURIComponent(k)}`] = v;
  return h;
}

/**
 * Decides the credential and pool of a forwarded request (table above).
 * @returns the plan, or the 403 StatusError to answer instead.
 */
export async function upstreamCredentials(
  input: CredentialInput,
  upstream: UpstreamTarget,
): Promise<ForwardPlan | StatusError> {
  const { identity } = input;
  const headers = { ...input.headers };
  const clientImpersonates = Object.keys(headers).some((h) => h.startsWith('impersonate-'));
  // The client's own credentials never travel over the proxy's client-certificate connection.
  const clientPools = upstream.clientCredentialPools ?? upstream;
  const pick = (p: {
    dispatcher: Dispatcher;
    longRunningDispatcher: Dispatcher;
    upgradeDispatcher?: Dispatcher | undefined;
  }) =>
    input.upgrade
      ? (p.upgradeDispatcher ?? p.longRunningDispatcher)
      : input.longRunning
        ? p.longRunningDispatcher
        : p.dispatcher;
  if (identity.kind === 'x509') {
    if (clientImpersonates) return proxyForbidden(CLIENT_IMPERSONATION_MESSAGE);
    if (!input.impersonateCertificateClients) return proxyForbidden(IMPERSONATION_FLAG_MESSAGE);
    delete headers.authorization;
    const auth = await upstream.authorization();
    if (auth !== undefined) headers.authorization = auth;
    return {
      headers: { ...headers, ...impersonationHeaders(identity.user) },
      dispatcher: pick(upstream),
      carries: 'impersonation',
    };
  }
  if (identity.kind === 'bearer') {
    headers.authorization = identity.authorization;
    return { headers, dispatcher: pick(clientPools), carries: 'client' };
  }
  delete headers.authorization;
  if (input.delegatedAuth) return { headers, dispatcher: pick(clientPools), carries: 'none' };
  if (clientImpersonates) return proxyForbidden(CLIENT_IMPERSONATION_MESSAGE);
  const auth = await upstream.authorization();
  if (auth !== undefined) headers.authorization = auth;
  return { headers, dispatcher: pick(upstream), carries: 'proxy' };
}
