/**
 * The apiserver's refusals, word for word: `responsewriters.ForbiddenStatusError` +
 * `forbiddenMessage` (`k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go`)
 * wrapped by `apierrors.NewForbidden`, and the authentication filter's 401
 * (`filters/authentication.go` → `apierrors.NewUnauthorized("Unauthorized")`).
 */
import { goQuote } from '../apimachinery/go-quote.ts';
import { StatusError } from '../apimachinery/status.ts';
import type { AuthorizationAttributes } from './request-attributes.ts';

/** `sanitizer` of errors.go: `&`, `<`, `>` HTML-escaped in the message (not in the reason). */
function sanitize(s: string): string {
  return s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

/** Go's `%q` of a string (names, verbs, namespaces, the user name). */
const q = goQuote;

/**
 * `forbiddenMessage`: `User "<u>" cannot <verb> resource "<res>[/<sub>]" in API group "<g>"
 * in the namespace "<ns>"` or `... at the cluster scope`.
 */
export function forbiddenMessage(username: string, a: AuthorizationAttributes): string {
  const resource = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  if (a.namespace)
    return `User ${q(username)} cannot ${a.verb} resource ${q(resource)} in API group ${q(a.group)} in the namespace ${q(a.namespace)}`;
  return `User ${q(username)} cannot ${a.verb} resource ${q(resource)} in API group ${q(a.group)} at the cluster scope`;
}

/**
 * The 403 of `responsewriters.Forbidden`: `<resource>[.<group>] ["<name>"] is forbidden:
 * <forbiddenMessage>[: <reason>]`, details `{name, group, kind: resource}`.
 */
export function forbidden(username: string, a: AuthorizationAttributes, reason: string): StatusError {
  const msg = sanitize(forbiddenMessage(username, a));
  const err = reason === '' ? msg : `${msg}: ${reason}`;
  const gr = a.group === '' ? a.resource : `${a.resource}.${a.group}`;
  const message = a.name ? `${gr} ${q(a.name)} is forbidden: ${err}` : `${gr} is forbidden: ${err}`;
  return new StatusError(403, 'Forbidden', message, {
    ...(a.name ? { name: a.name } : {}),
    ...(a.group ? { group: a.group } : {}),
    kind: a.resource,
  });
}

/** A 403 of the proxy itself (no resource): `apierrors.NewForbidden` with an empty GroupResource. */
export function proxyForbidden(message: string): StatusError {
  return new StatusError(403, 'Forbidden', `forbidden: ${message}`, {});
}

/** The authentication filter's 401 for a presented but invalid or expired credential. */
export function unauthorized(): StatusError {
  return new StatusError(401, 'Unauthorized', 'Unauthorized');
}
