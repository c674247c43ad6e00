/**
 * Loads @kubernetes/client-node's `KubeConfig` without its generated API client.
 *
 * `@kubernetes/client-node/dist/config.js` statically imports `./gen/index.js` (hundreds of
 * generated model and API classes, ~40 MiB of RSS) for one method, `KubeConfig.makeApiClient`,
 * which the proxy never calls: it only loads kubeconfigs, resolves TLS material and runs exec /
 * auth-provider plugins (`applyToHTTPSOptions`). {@link installLeanClientNode} registers a
 * synchronous module resolve hook (`module.registerHooks`, Node ≥ 22.15) that answers that one
 * import, from that one file, with {@link ./client-node-gen-stub.ts}; everything else of
 * client-node (loading, merging, in-cluster config, exec plugins, OIDC/Azure/GCP providers) is
 * the real code. It must run before any module importing client-node is LINKED, so the CLI
 * installs it and then imports `main.ts` dynamically.
 */
import { registerHooks } from 'node:module';

const GEN_INDEX = './gen/index.js';
const CONFIG_JS = '/@kubernetes/client-node/dist/config.js';

const redirected: string[] = [];
let installed = false;

/** URL of the stub module (`.ts` under type stripping, `.js` in the built dist/). */
function stubUrl(): string {
  const ext = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
  return new URL(`./client-node-gen-stub${ext}`, import.meta.url).href;
}

/** Installs the resolve hook once per process. Returns false when it was already installed. */
export function installLeanClientNode(): boolean {
  if (installed) return false;
  installed = true;
  const stub = stubUrl();
  registerHooks({
    resolve(specifier, context, nextResolve) {
      if (specifier === GEN_INDEX && context.parentURL?.endsWith(CONFIG_JS)) {
        redirected.push(context.parentURL);
        return { url: stub, shortCircuit: true };
      }
      return nextResolve(specifier, context);
    },
  });
  return true;
}

/** Parent modules whose `./gen/index.js` import was answered by the stub (tests). */
export function leanRedirects(): readonly string[] {
  return redirected;
}
