/**
 * Stands in for `@kubernetes/client-node/dist/gen/index.js` when the CLI loads client-node
 * lean (see lean-client-node.ts). config.js imports exactly these two names, used only by
 * `KubeConfig.makeApiClient`, which kube-cache-proxy never calls.
 */
import { ApiClientUnavailableError } from '../util/errors.ts';

const MESSAGE =
  'kube-cache-proxy loads @kubernetes/client-node without its generated API client: KubeConfig.makeApiClient is unavailable';

/** Throws: the generated API client is not loaded. */
export function createConfiguration(): never {
  throw new ApiClientUnavailableError(MESSAGE);
}

/** Throws on construction: the generated API client is not loaded. */
export class ServerConfiguration {
  constructor() {
    throw new ApiClientUnavailableError(MESSAGE);
  }
}
