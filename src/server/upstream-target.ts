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
   * A pool that speaks HTTP/1.1 only, for HTTP Upgrade (exec, attach, port-forward:
   * `upgrade-tunnel.ts`); HTTP/2 cannot carry an upgrade. Default: `longRunningDispatcher`
   * (fine for a plain-HTTP upstream, where h2 is never negotiated).
   */
  readonly upgradeDispatcher?: Dispatcher;
  /**
   * The proxy's own `Authorization` header value (re-read when tokens rotate), if any; used only
   * when the client sent none. May be async (exec plugins, token files).
   */
  authorization(): string | undefined | Promise<string | undefined>;
  /**
   * Pools WITHOUT the proxy's TLS client certificate, for requests that carry the client's own
   * `Authorization`: the apiserver authenticates a client certificate before any bearer token,
   * so sending the client's token over the proxy's certificate connection would act with the
   * proxy's rights (docs/design.md §4: the client's own credentials are forwarded). Absent when the
   * proxy's identity is not a client certificate (then the pools above serve both).
   */
  readonly clientCredentialPools?: {
    readonly dispatcher: Dispatcher;
    readonly longRunningDispatcher: Dispatcher;
    readonly upgradeDispatcher?: Dispatcher;
  };
}
