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
 * Impersonation is decided per client, from that client's user and the proxy's own rights only
 * (never from what other clients did): the apiserver remembers per requestor the impersonation
 * mode (KEP-5284) that last succeeded and tries it first, so every header set sent here is one
 * that every mode accepting it turns into the same user — the user the certificate is directly:
 * - a node user (`system:node:<n>` with exactly `system:nodes`): if the proxy may use legacy
 *   impersonation for that username, `Impersonate-User` + `Impersonate-Group: system:nodes`
 *   (legacy mode only); otherwise `Impersonate-User` alone (`arbitrary-node` fixes the group;
 *   legacy, which would give no `system:nodes`, cannot succeed for it);
 * - a service account username with exactly its fixed groups: `Impersonate-User` alone (the
 *   `serviceaccount` and legacy modes both add those groups);
 * - anyone else as `user-info` with its groups, without `system:authenticated` (the apiserver
 *   adds it); a node or service account username with no other group sends
 *   `Impersonate-Group: system:authenticated`, so that no mode adds the fixed groups.
 */
import type { Dispatcher } from 'undici';
import type { StatusError } from '../apimachinery/status.ts';
import type { ClientIdentity } from '../auth/access-control.ts';
import { proxyForbidden } from '../auth/forbidden.ts';
import type { ImpersonationRights } from '../auth/impersonation-rights.ts';
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
  /**
   * The proxy's own impersonation rights, asked for node users ({@link impersonationMode});
   * without it, the constrained form.
   */
  impersonationRights?: ImpersonationRights | undefined;
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

/**
 * The message of the 403 for Impersonate-* headers without any credential in simple mode: what
 * `kubectl --as` through an `http://` server always sends, since clientcmd merges a user's
 * credentials only into a TLS config (client-go `tools/clientcmd/client_config.go` `ClientConfig`:
 * "only try to read the auth information if we are secure") while `--as` headers are sent
 * regardless. The apiserver words its own impersonation refusal `configmaps is forbidden: User
 * "system:anonymous" cannot impersonate-on:user-info:list resource "configmaps" …`; this one says
 * why no user was there to impersonate with, and what to use instead.
 */
export const NO_CREDENTIAL_IMPERSONATION_MESSAGE =
  "Impersonate-* headers arrived without a credential, and kube-cache-proxy never lends its own credentials to impersonate: kubectl and client-go send no credential to an http:// server (only the Impersonate-* headers of --as), so every request through http:// acts as the proxy's identity; for your own identity, and --as, use the proxy's https:// listener with --delegated-auth";

/**
 * How the proxy impersonates one client: `legacy` (the `impersonate` verb) or `constrained`
 * (KEP-5284 modes). Only a node user's headers differ between the two (see above).
 */
export type ImpersonationMode = 'constrained' | 'legacy';

/** Groups of the service account `username` (`serviceaccount.MakeGroupNames`), or undefined. */
function serviceAccountGroups(username: string): string[] | undefined {
  if (!isServiceAccountUsername(username)) return undefined;
  const ns = username.split(':')[2];
  return ['system:serviceaccounts', `system:serviceaccounts:${ns}`];
}

const sameSet = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && a.every((x) => b.includes(x)) && b.every((x) => a.includes(x));

/** `user`'s groups without `system:authenticated` (the apiserver adds it to every impersonated user). */
function ownGroups(user: UserInfo): string[] {
  return user.groups.filter((g) => g !== ALL_AUTHENTICATED);
}

/** Whether `user` is a node as the Node authorizer knows it: `system:node:<n>`, exactly `system:nodes`. */
export function isNodeUser(user: UserInfo): boolean {
  const g = ownGroups(user);
  return (
    nodeName(user.username) !== undefined &&
    g.length === 1 &&
    g[0] === NODES_GROUP &&
    user.uid === '' &&
    Object.keys(user.extra).length === 0
  );
}

/**
 * The impersonation mode for `user`, decided from `user` and the proxy's rights alone: `legacy`
 * for a node user when the proxy may legacy-impersonate its username (then `Impersonate-User`
 * alone could be served by the legacy mode, without `system:nodes`), else `constrained`.
 * @throws when `rights` could not be asked.
 */
export async function impersonationMode(
  user: UserInfo,
  rights: ImpersonationRights | undefined,
): Promise<ImpersonationMode> {
  if (!rights || !isNodeUser(user)) return 'constrained';
  return (await rights.mayLegacyImpersonateUser(user.username)) ? 'legacy' : 'constrained';
}

/** The `Impersonate-*` headers for the proxy acting as `user` in `mode` (see the module comment). */
export function impersonationHeaders(
  user: UserInfo,
  mode: ImpersonationMode = 'constrained',
): Record<string, string | string[]> {
  const groups = ownGroups(user);
  if (isNodeUser(user))
    return mode === 'legacy'
      ? { 'impersonate-user': user.username, 'impersonate-group': [NODES_GROUP] }
      : { 'impersonate-user': user.username };
  const saGroups = serviceAccountGroups(user.username);
  const plain = user.uid === '' && Object.keys(user.extra).length === 0;
  if (saGroups && plain && sameSet(groups, saGroups)) return { 'impersonate-user': user.username };
  const h: Record<string, string | string[]> = { 'impersonate-user': user.username };
  if (groups.length > 0) h['impersonate-group'] = groups;
  // A node or service account username without its fixed groups: naming a group keeps every
  // mode from adding them (only legacy impersonation accepts such a user).
  else if (saGroups || nodeName(user.username) !== undefined) h['impersonate-group'] = [ALL_AUTHENTICATED];
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
    const mode = await impersonationMode(identity.user, input.impersonationRights);
    const auth = await upstream.authorization();
    if (auth !== undefined) headers.authorization = auth;
    return {
      headers: { ...headers, ...impersonationHeaders(identity.user, mode) },
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
  if (clientImpersonates) return proxyForbidden(NO_CREDENTIAL_IMPERSONATION_MESSAGE);
  const auth = await upstream.authorization();
  if (auth !== undefined) headers.authorization = auth;
  return { headers, dispatcher: pick(upstream), carries: 'proxy' };
}
