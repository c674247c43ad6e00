#!/usr/bin/env -S MALLOC_MMAP_THRESHOLD_=131072 node --max-semi-space-size=2
/** The `kube-cache-proxy` command (see `config/config.ts` for every flag). */

// Checked before anything else is linked: older Node.js fails on an import below with an
// unhelpful SyntaxError (e.g. `registerHooks`, Node ≥ 22.15). package.json `engines` says the same.
const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 19)) {
  process.stderr.write(
    `kube-cache-proxy: needs Node.js >= 22.19 (24 LTS recommended); this is ${process.version}. ` +
      "From a source checkout, `MALLOC_MMAP_THRESHOLD_=131072 npx node --max-semi-space-size=2 dist/kube-cache-proxy.js` uses the node@24 devDependency with the bin's memory settings.\n",
  );
  process.exit(2);
}
// Before main.ts (and client-node) are even linked: see lean-client-node.ts (~40 MiB less RSS).
const { installLeanClientNode } = await import('./upstream/lean-client-node.ts');
installLeanClientNode();
// A missing dependency (util/errors.ts DependencyMissingError: the bundle without its
// node_modules) is an operator's error: one line, not Node's stack and source line.
const { main } = await import('./main.ts').catch((err: Error & { code?: string }) => {
  const missing = err.code === 'KCP_ERR_DEPENDENCY_MISSING';
  process.stderr.write(`kube-cache-proxy: ${missing ? err.message : (err.stack ?? err.message)}\n`);
  process.exit(1);
});

main(process.argv.slice(2), process.env).then(
  (code) => {
    if (code !== undefined) process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`kube-cache-proxy: ${(err as Error).stack ?? err}\n`);
    process.exitCode = 1;
  },
);
