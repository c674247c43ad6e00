#!/usr/bin/env node
/** The `kube-cache-proxy` command (see `config.ts` for every flag). */
import { installLeanClientNode } from './ops/lean-client-node.ts';

// Before main.ts (and client-node) are even linked: see lean-client-node.ts (~40 MiB less RSS).
installLeanClientNode();
const { main } = await import('./main.ts');

main(process.argv.slice(2), process.env).then(
  (code) => {
    if (code !== undefined) process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`kube-cache-proxy: ${(err as Error).stack ?? err}\n`);
    process.exitCode = 1;
  },
);
