/**
 * The Kubernetes verb of a request, upper-case as in `apiserver_request_total`
 * (`apiserver/pkg/endpoints/metrics`): GET on a collection is LIST (WATCH with `watch`),
 * on an object GET; POST is CREATE, PUT UPDATE, DELETE on a collection DELETECOLLECTION.
 * Non-resource paths keep the HTTP method.
 */
import type { ResourceRequest } from './request-info.ts';

export function requestVerb(method: string, info: ResourceRequest | undefined, watch: boolean): string {
  if (!info) return method;
  const collection = info.name === undefined;
  switch (method) {
    case 'GET':
    case 'HEAD':
      if (watch) return 'WATCH';
      return collection ? 'LIST' : 'GET';
    case 'POST':
      return 'CREATE';
    case 'PUT':
      return 'UPDATE';
    case 'PATCH':
      return 'PATCH';
    case 'DELETE':
      return collection ? 'DELETECOLLECTION' : 'DELETE';
    default:
      return method;
  }
}
