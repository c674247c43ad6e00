/**
 * Proxy process settings the bench tools compare side by side (bench/tools/memory-rows.ts,
 * bench/tools/protobuf-rows.ts): V8 flags (`nodeArgs`, replacing the CLI's shebang flags and its
 * environment assignments) and glibc malloc settings (`env`). Names are what `--variants` takes.
 */

/** One variant: what {@link startProxy} gets (bench/support/proxy-process.ts). */
export interface ProxyVariant {
  /** Node flags before the CLI; absent = the CLI's shebang (flags and environment), as shipped. */
  nodeArgs?: string[];
  /** Environment of the proxy process on top of the shebang's (glibc reads `MALLOC_*` at start). */
  env?: NodeJS.ProcessEnv;
  /** The CLI to run instead of the tool's (another build's `dist/kube-cache-proxy.js`: before/after rows). */
  cli?: string;
}

/** The V8 flag the CLI ships (`--max-semi-space-size=2`, issue 12) without any malloc setting. */
const SEMI2 = ['--max-semi-space-size=2'];

/** Every variant by name. */
export const PROXY_VARIANTS: Record<string, ProxyVariant> = {
  /** No V8 flags and no malloc setting (`node dist/src/cli.js` before issue 12). */
  default: { nodeArgs: [] },
  /** The CLI's shebang: its flags and its environment assignments (what the bin and the image run). */
  shipped: {},
  semi1: { nodeArgs: ['--max-semi-space-size=1'] },
  /** The shipped V8 flag with glibc's malloc defaults (what shipped before issue 32's RSS work). */
  semi2: { nodeArgs: SEMI2 },
  semi4: { nodeArgs: ['--max-semi-space-size=4'] },
  arena2: { env: { MALLOC_ARENA_MAX: '2' } },
  semi2arena2: { nodeArgs: SEMI2, env: { MALLOC_ARENA_MAX: '2' } },
  /**
   * A fixed mmap threshold of 128 KiB (glibc's initial one): malloc no longer raises it after the
   * first big free, so blocks of 128 KiB or more stay mmapped and go back to the kernel when freed
   * instead of being carved from (and fragmenting) the brk heap.
   */
  mmap128k: { nodeArgs: SEMI2, env: { MALLOC_MMAP_THRESHOLD_: '131072' } },
  /** {@link mmap128k} at 64 KiB. */
  mmap64k: { nodeArgs: SEMI2, env: { MALLOC_MMAP_THRESHOLD_: '65536' } },
  /**
   * As shipped, with V8's background GC tasks off (`--single-threaded-gc`): whether the thread
   * arenas' growth is the GC helpers' (diagnosis, issue 32).
   */
  singleGc: {
    nodeArgs: [...SEMI2, '--single-threaded-gc'],
    env: { MALLOC_MMAP_THRESHOLD_: '131072' },
  },
  /**
   * As shipped, with one malloc arena for every thread (`MALLOC_ARENA_MAX=1`): V8's compiler
   * threads' zones in the brk heap instead of arenas of their own (issue 32).
   */
  arena1: { nodeArgs: SEMI2, env: { MALLOC_MMAP_THRESHOLD_: '131072', MALLOC_ARENA_MAX: '1' } },
  /**
   * As shipped (its flags and fixed mmap threshold), with two malloc arenas (`MALLOC_ARENA_MAX=2`):
   * V8's worker threads share one arena instead of one each (issue 32's thread arenas).
   */
  shippedArena2: { env: { MALLOC_ARENA_MAX: '2' } },
  /** As shipped, with two V8 worker threads instead of Node's four (`--v8-pool-size=2`). */
  pool2: { nodeArgs: [...SEMI2, '--v8-pool-size=2'], env: { MALLOC_MMAP_THRESHOLD_: '131072' } },
  /** As shipped, with every V8 background task off (`--single-threaded`: GC and compilers). */
  singleThreaded: {
    nodeArgs: [...SEMI2, '--single-threaded'],
    env: { MALLOC_MMAP_THRESHOLD_: '131072' },
  },
  /** {@link mmap128k} and a fixed trim threshold of 1 MiB (a fixed mmap threshold fixes it at 128 KiB). */
  mmap128kTrim1m: {
    nodeArgs: SEMI2,
    env: { MALLOC_MMAP_THRESHOLD_: '131072', MALLOC_TRIM_THRESHOLD_: '1048576' },
  },
};

/**
 * The variant named `name`; throws an Error listing the names when there is none. `before`: as
 * shipped, but the built CLI at `KCP_BENCH_BEFORE_CLI` (another worktree's
 * `dist/kube-cache-proxy.js`, e.g. the base branch's), for before/after rows in one run.
 */
export function proxyVariant(name: string): ProxyVariant {
  if (name === 'before') {
    const cli = process.env.KCP_BENCH_BEFORE_CLI;
    if (!cli)
      throw new Error(
        "variant before: set KCP_BENCH_BEFORE_CLI to the other build's dist/kube-cache-proxy.js",
      );
    return { cli };
  }
  const v = PROXY_VARIANTS[name];
  if (!v) throw new Error(`unknown variant ${name} (${Object.keys(PROXY_VARIANTS).join(', ')})`);
  return v;
}
