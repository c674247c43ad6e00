#!/usr/bin/env node
/** The `kube-cache-proxy` command (see `config.ts` for every flag). */
import { main } from './main.ts';

main(process.argv.slice(2), process.env).then(
  (code) => {
    if (code !== undefined) process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`kube-cache-proxy: ${(err as Error).stack ?? err}\n`);
    process.exitCode = 1;
  },
);
