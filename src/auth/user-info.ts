/**
 * Who is asking: the apiserver's `user.Info` (`k8s.io/apiserver/pkg/authentication/user`) and
 * how a verified x509 client certificate becomes one (`authentication/request/x509`
 * `CommonNameUserConversion`, then the authenticated-group adder of
 * `authentication/group/authenticated_group_adder.go`).
 */
import type { PeerCertificate } from 'node:tls';

/** `user.Info`: name, uid, groups, extra (TokenReview `status.user` has the same fields). */
export interface UserInfo {
  username: string;
  uid: string;
  groups: string[];
  extra: Record<string, string[]>;
}

/** `user.AllAuthenticated`. */
export const ALL_AUTHENTICATED = 'system:authenticated';
/** `user.NodesGroup`. */
export const NODES_GROUP = 'system:nodes';

/** The node name of a `system:node:<name>` username, or undefined. */
export function nodeName(username: string): string | undefined {
  const m = /^system:node:(.+)$/.exec(username);
  return m ? m[1] : undefined;
}

/** Whether `username` is a `system:serviceaccount:<ns>:<name>` username. */
export function isServiceAccountUsername(username: string): boolean {
  return /^system:serviceaccount:[^:]+:[^:]+$/.test(username);
}

/**
 * The user of a verified client certificate: CN as the name, the Organizations as groups, plus
 * `system:authenticated` (as the apiserver's authenticated-group adder). Undefined for a
 * certificate without CN (the apiserver's x509 authenticator does not authenticate it).
 */
export function x509User(cert: Pick<PeerCertificate, 'subject'>): UserInfo | undefined {
  const cn = one(cert.subject?.CN);
  if (!cn) return undefined;
  const o = cert.subject?.O as string | string[] | undefined;
  const groups = o === undefined ? [] : Array.isArray(o) ? [...o] : [o];
  return { username: cn, uid: '', groups: withAuthenticated(groups), extra: {} };
}

/** `groups` with `system:authenticated` appended unless present (authenticated_group_adder.go). */
export function withAuthenticated(groups: readonly string[]): string[] {
  return groups.includes(ALL_AUTHENTICATED) ? [...groups] : [...groups, ALL_AUTHENTICATED];
}

function one(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}
