/**
 * The upstream layer: re-exports the apiserver connection, kubeconfig loading, discovery, HTTP
 * request helpers, the rotating token source and the upstream error predicates.
 */
export {
  isConnectionRefused,
  isExpired,
  isInternalError,
  isTooLargeResourceVersion,
  isTooManyRequests,
} from './api-errors.ts';
export { createUpstream, type Upstream, type UpstreamOptions } from './connection.ts';
export {
  discoverResource,
  discoverServedResources,
  isBuiltInGroup,
  parseResourceName,
  type ServedResource,
} from './discovery.ts';
export { type KubeConfigSource, type LoadedKubeConfig, loadKubeConfig } from './kubeconfig.ts';
export {
  type Query,
  readLines,
  type StreamingResponse,
  upstreamGet,
  upstreamGetBuffer,
  upstreamUrl,
} from './request.ts';
export { FileTokenSource } from './token-source.ts';
export {
  checkUpstream,
  describeUpstreamFailure,
  type UpstreamCheckFailed,
  type UpstreamCheckPassed,
  type UpstreamCheckTarget,
} from './upstream-check.ts';
export { UpstreamMonitor, type UpstreamMonitorOptions } from './upstream-monitor.ts';
