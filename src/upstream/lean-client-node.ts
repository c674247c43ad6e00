/**
 * Loads @kubernetes/client-node's `KubeConfig` without what the proxy does not use.
 *
 * `@kubernetes/client-node/dist/config.js` statically imports `./gen/index.js` (hundreds of
 * generated model and API classes, ~40 MiB of RSS) for one method, `KubeConfig.makeApiClient`,
 * which the proxy never calls: it only loads kubeconfigs, resolves TLS material and runs exec /
 * auth-provider plugins (`applyToHTTPSOptions`). It also imports, for every kubeconfig, the
 * Azure, GCP and OIDC auth providers and the `proxy-url` agents (~3.7 MiB of RSS together,
 * bench/tools/startup-rss.ts). {@link installLeanClientNode} registers a synchronous module resolve
 * hook (`module.registerHooks`, Node ≥ 22.15) that answers those imports, from that one file:
 * `./gen/index.js` with {@link ./client-node-gen-stub.ts} (throws), the others with
 * {@link ./client-node-lazy.ts} (the real module, loaded on first use by a kubeconfig that
 * needs it), and `undici` (config.js takes `Agent` and `ProxyAgent` from it) with
 * {@link ./undici-core.ts} (undici's own classes without the rest of undici's index, ~12 MiB of
 * RSS less). Everything else of client-node (loading, merging, in-cluster config, exec and
 * token-file credentials) is the real code, loaded as usual. It must run before any module
 * importing client-node is LINKED, so the CLI installs it and then imports `main.ts` dynamically.
 * The bundled CLI (scripts/bundle.ts) makes the same substitutions at build time with
 * {@link leanRedirect}; there the hook is installed too and answers only the imports of what
 * {@link requireClientNodeModule} loads from node_modules (an auth provider's `./config.js`:
 * client-node-config.ts, emitted beside the bundle so the bundle's own config.js is used).
 */
import { createRequire, registerHooks } from 'node:module';
import { fileURLToPath } from 'node:url';

const GEN_INDEX = './gen/index.js';
/** config.js's imports answered by client-node-lazy.ts (each of its exports is one of theirs). */
const LAZY = new Set([
  './azure_auth.js',
  './gcp_auth.js',
  './oidc_auth.js',
  'socks-proxy-agent',
  'socks',
  'hpagent',
]);
const CONFIG_JS = '/@kubernetes/client-node/dist/config.js';
/** client-node's modules loaded lazily that import `./config.js` back (see client-node-config.ts). */
const LAZY_PARENTS = ['azure_auth.js', 'gcp_auth.js', 'oidc_auth.js'].map(
  (f) => `/@kubernetes/client-node/dist/${f}`,
);

const redirected: string[] = [];
const lazyLoaded: string[] = [];
let installed = false;
/** config.js's URL (as the hook saw it), to load the real modules from. */
let configUrl: string | undefined;
/** True while {@link requireClientNodeModule} loads a real module: no redirect to client-node-lazy.ts. */
let bypass = false;

/** A module of this folder that stands in for one config.js imports. */
export type LeanTarget = 'client-node-gen-stub' | 'undici-core' | 'client-node-lazy' | 'client-node-config';

/**
 * Which module of this folder answers `specifier` imported by `parentUrl` (a `file:` URL or a
 * path), or undefined for the real module: `./gen/index.js`, `undici` and the rarely used
 * credential and proxy modules, each only when imported by client-node's `config.js`; and
 * `./config.js` imported by the lazily loaded auth providers (client-node-config.ts). The one
 * rule of the resolve hook below and of the bundler (scripts/bundle.ts).
 */
export function leanRedirect(specifier: string, parentUrl: string | undefined): LeanTarget | undefined {
  if (specifier === './config.js' && LAZY_PARENTS.some((p) => parentUrl?.endsWith(p)))
    return 'client-node-config';
  if (!parentUrl?.endsWith(CONFIG_JS)) return undefined;
  if (specifier === GEN_INDEX) return 'client-node-gen-stub';
  if (specifier === 'undici') return 'undici-core';
  if (LAZY.has(specifier)) return 'client-node-lazy';
  return undefined;
}

/** URL of a sibling module (`.ts` under type stripping, `.js` in the built dist/). */
function siblingUrl(name: string): string {
  const ext = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
  return new URL(`./${name}${ext}`, import.meta.url).href;
}

/** Installs the resolve hook once per process. Returns false when it was already installed. */
export function installLeanClientNode(): boolean {
  if (installed) return false;
  installed = true;
  const urls: Record<LeanTarget, string> = {
    'client-node-gen-stub': siblingUrl('client-node-gen-stub'),
    'undici-core': siblingUrl('undici-core'),
    'client-node-lazy': siblingUrl('client-node-lazy'),
    'client-node-config': siblingUrl('client-node-config'),
  };
  registerHooks({
    resolve(specifier, context, nextResolve) {
      const target = leanRedirect(specifier, context.parentURL);
      // While requireClientNodeModule loads a real module, its own specifier is not answered by
      // client-node-lazy.ts again; what that module imports in turn still is redirected.
      if (
        target !== undefined &&
        context.parentURL !== undefined &&
        !(bypass && target === 'client-node-lazy')
      ) {
        if (target === 'client-node-gen-stub' || target === 'client-node-lazy') configUrl = context.parentURL;
        if (target === 'client-node-gen-stub') redirected.push(context.parentURL);
        return { url: urls[target], shortCircuit: true };
      }
      return nextResolve(specifier, context);
    },
  });
  return true;
}

/**
 * Loads, synchronously, the module config.js would have imported as `specifier` (one of
 * client-node's own `./x.js` or a dependency of client-node), its namespace object. For
 * client-node-lazy.ts. Throws what `require` throws when it cannot be loaded.
 */
export function requireClientNodeModule(specifier: string): Record<string, unknown> {
  const from = configUrl ?? import.meta.resolve('@kubernetes/client-node/dist/config.js');
  lazyLoaded.push(specifier);
  bypass = true;
  try {
    return createRequire(fileURLToPath(from))(specifier) as Record<string, unknown>;
  } finally {
    bypass = false;
  }
}

/** Parent modules whose `./gen/index.js` import was answered by the stub (tests). */
export function leanRedirects(): readonly string[] {
  return redirected;
}

/** What {@link requireClientNodeModule} loaded, in order (tests: nothing for a token kubeconfig). */
export function lazyLoads(): readonly string[] {
  return lazyLoaded;
}
