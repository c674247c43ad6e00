/**
 * What client-node's lazily loaded auth providers import from `./config.js`
 * (`oidc_auth.js`: `bufferFromFileOrString`), re-exported from the config.js the proxy already
 * runs (lean-client-node.ts answers their `./config.js` with this module). Without it, the
 * bundled CLI (scripts/bundle.ts), whose config.js is inside the bundle, would load a second
 * config.js from node_modules for an OIDC kubeconfig, and with it client-node's generated API
 * and undici's index (~37 MiB of RSS; the attack pass of issue 12).
 */
export { bufferFromFileOrString } from '@kubernetes/client-node/dist/config.js';
