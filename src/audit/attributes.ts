/**
 * A request's authorizer attributes as the audit reads them (k8s.io/apiserver v0.37.2
 * `endpoints/filters/authorization.go` `GetAuthorizerAttributes` over `request/requestinfo.go`):
 * the lower-case verb (`list`, `watch`, `get`, `create`, … ; the HTTP method for a non-resource
 * path), and for a resource request its group, version, resource, subresource, namespace and
 * name, with the same reading as the SubjectAccessReview of a cached read
 * (`auth/request-attributes.ts`: a named namespace is its own namespace; a list or watch naming
 * one object by `metadata.name` has that name).
 */
import type { ResourceRequest } from '../apimachinery/request-info.ts';
import { requestVerb } from '../apimachinery/request-verb.ts';
import { readAttributes } from '../auth/request-attributes.ts';
import type { UserInfo } from '../auth/user-info.ts';
import type { AuditAttributes } from './checker.ts';

/**
 * The attributes of a request: `info` is the parsed resource path (undefined: a non-resource
 * request such as `/version` or discovery); `watch` whether `?watch` asks for a watch.
 */
export function auditAttributes(
  method: string,
  path: string,
  query: URLSearchParams,
  info: ResourceRequest | undefined,
  watch: boolean,
  user: UserInfo | undefined,
): AuditAttributes {
  const verb = requestVerb(method, info, watch).toLowerCase();
  if (!info) return { user, verb, resourceRequest: false, path };
  const base: AuditAttributes = { user, verb, resourceRequest: true, path };
  if ((verb === 'get' || verb === 'list' || verb === 'watch') && info.subresource === undefined) {
    const a = readAttributes(verb, info, query);
    return {
      ...base,
      apiGroup: a.group,
      apiVersion: a.version,
      resource: a.resource,
      ...(a.namespace !== undefined ? { namespace: a.namespace } : {}),
      ...(a.name !== undefined ? { name: a.name } : {}),
    };
  }
  const namespace =
    info.namespace ?? (info.resource === 'namespaces' && info.name !== undefined ? info.name : undefined);
  return {
    ...base,
    apiGroup: info.group,
    apiVersion: info.version,
    resource: info.resource,
    ...(namespace !== undefined ? { namespace } : {}),
    ...(info.name !== undefined ? { name: info.name } : {}),
    ...(info.subresource !== undefined ? { subresource: info.subresource } : {}),
  };
}
