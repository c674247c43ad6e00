/**
 * What the server needs from the upstream layer (`src/upstream/`) to pass requests through:
 * where the apiserver is, connection pools with the kubeconfig's TLS, and the proxy's own
 * credentials. `main.ts` adapts the upstream layer's exports to this.
 */
import type { Dispatcher } from 'undici';

export interface UpstreamTarget {
  /** Base URL of the apiserver, e.g. `https://10.96.0.1:443` (a path prefix is kept). */
  readonly server: URL;
  /** Pool for short requests (TLS from the kubeconfig; never weakened). */
  readonly dispatcher: Dispatcher;
  /**
   * A SEPARATE pool for long-running requests (watches, `logs -f`), so they can never occupy
   * every connection short requests need. May be the same object only in tests.
   */
  readonly longRunningDispatcher: Dispatcher;
  /**
   * The proxy's own `Authorization` header value (re-read when tokens rotate), if any; used only
   * when the client sent none. May be async (exec plugins, token files).
   */
  authorization(): string | undefined | Promise<string | undefined>;
}
