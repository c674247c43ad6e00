/**
 * Stands in, for client-node's `config.js` only, for the modules it imports for credentials and
 * proxies that a kubeconfig rarely uses (see lean-client-node.ts): the Azure, GCP and OIDC auth
 * providers (`openid-client`, `jsonpath-plus`) and the `proxy-url` agents (`socks-proxy-agent`,
 * `socks`, `hpagent`). Each export is the real class, loaded synchronously (`require` of the
 * real module, Node ≥ 22.12 loads ES modules so) the first time config.js uses it: an auth
 * provider's `isAuthProvider` answers without loading anything (the same test as the real one,
 * by `auth-provider.name`), so a kubeconfig with a token, a certificate or an exec plugin never
 * loads them. Measured: ~3.7 MiB less idle RSS (bench/tools/startup-rss.ts).
 */
import { requireClientNodeModule } from './lean-client-node.ts';

function real<T>(specifier: string, name: string): T {
  return requireClientNodeModule(specifier)[name] as T;
}

type Ctor = new (...args: unknown[]) => object;

/**
 * An auth provider of client-node (`isAuthProvider(user)`, `applyAuthentication(user, opts)`)
 * whose real class is constructed on first use by a kubeconfig that names it.
 */
type AuthProvider = { applyAuthentication(user: unknown, opts: unknown): Promise<void> };

function lazyAuthProvider(specifier: string, className: string, providerName: string): Ctor {
  return class {
    #real: AuthProvider | undefined;
    isAuthProvider(user: { authProvider?: { name?: string } } | undefined): boolean {
      return user?.authProvider?.name === providerName;
    }
    applyAuthentication(user: unknown, opts: unknown): Promise<void> {
      this.#real ??= new (real<Ctor>(specifier, className))() as AuthProvider;
      return this.#real.applyAuthentication(user, opts);
    }
  };
}

/** A class whose construction constructs the real one (an agent for `proxy-url`). */
function lazyClass(specifier: string, className: string): Ctor {
  return function (this: unknown, ...args: unknown[]) {
    return new (real<Ctor>(specifier, className))(...args);
  } as unknown as Ctor;
}

/** `./azure_auth.js`. */
export const AzureAuth = lazyAuthProvider('./azure_auth.js', 'AzureAuth', 'azure');
/** `./gcp_auth.js`. */
export const GoogleCloudPlatformAuth = lazyAuthProvider('./gcp_auth.js', 'GoogleCloudPlatformAuth', 'gcp');
/** `./oidc_auth.js`. */
export const OpenIDConnectAuth = lazyAuthProvider('./oidc_auth.js', 'OpenIDConnectAuth', 'oidc');
/** `socks-proxy-agent` (a `socks://` `proxy-url`). */
export const SocksProxyAgent = lazyClass('socks-proxy-agent', 'SocksProxyAgent');
/** `hpagent` (an `http(s)://` `proxy-url`). */
export const HttpProxyAgent = lazyClass('hpagent', 'HttpProxyAgent');
/** `hpagent`. */
export const HttpsProxyAgent = lazyClass('hpagent', 'HttpsProxyAgent');
/** `socks`: config.js calls `SocksClient.createConnection` for a socks `proxy-url` with undici. */
export const SocksClient = {
  createConnection(...args: unknown[]): unknown {
    return real<{ createConnection(...a: unknown[]): unknown }>('socks', 'SocksClient').createConnection(
      ...args,
    );
  },
};
