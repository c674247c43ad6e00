import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';

// The Dockerfile cannot be built here (no Docker engine); scripts/image-build.sh replays its
// steps instead. These tests keep the two from drifting apart.
const root = new URL('../../../', import.meta.url);
const read = (p: string) => readFileSync(new URL(p, root), 'utf8');
const dockerfile = read('Dockerfile');
const script = read('scripts/image-build.sh');

/** The assignments and Node flags of src/cli.ts's `#!/usr/bin/env -S [NAME=VALUE…] node FLAGS`. */
function shebang(): { env: Record<string, string>; flags: string[] } {
  const line = read('src/cli.ts').split('\n')[0]!;
  const m = /^#!\/usr\/bin\/env -S ((?:[A-Z_]+=\S+ )*)node (.*)$/.exec(line);
  assert.ok(m, line);
  const env = Object.fromEntries(
    m[1]!
      .trim()
      .split(' ')
      .filter((w) => w !== '')
      .map((w) => [w.slice(0, w.indexOf('=')), w.slice(w.indexOf('=') + 1)]),
  );
  return { env, flags: m[2]!.split(' ') };
}

describe('Dockerfile and scripts/image-build.sh', () => {
  it('run the same npm commands in the same order', () => {
    const fromDockerfile = [...dockerfile.matchAll(/^RUN (npm .*)$/gm)].map((m) => m[1]);
    const lines = script.split('\n');
    const fromScript: string[] = [];
    lines.forEach((line, i) => {
      const m = /^# step: (npm .*)$/.exec(line);
      if (!m?.[1]) return;
      // The line after the marker must execute exactly that command.
      assert.ok(lines[i + 1]?.includes(`&& ${m[1]})`), `line after "# step: ${m[1]}" runs something else`);
      fromScript.push(m[1]);
    });
    assert.deepEqual(fromDockerfile, [
      'npm ci --no-audit --no-fund',
      'npm run build',
      'npm ci --omit=dev --no-audit --no-fund',
    ]);
    assert.deepEqual(fromScript, fromDockerfile);
  });

  it('pass the revision to the bundle (the context has no .git) and check that --version prints it', () => {
    assert.match(
      dockerfile,
      /^ARG REVISION=unknown\nENV KCP_REVISION=\$\{REVISION\}\nRUN npm run build$/m,
      'the build stage sets KCP_REVISION from the REVISION build argument',
    );
    assert.match(script, /^export KCP_REVISION="\$revision"\n# step: npm run build$/m);
    assert.match(script, /\[ "\$got" = "kube-cache-proxy \$want \(revision \$revision\)" \]/);
  });

  it('start the package bin as a non-root numeric user', () => {
    const pkg = JSON.parse(read('package.json')) as { bin: Record<string, string> };
    assert.equal(pkg.bin['kube-cache-proxy'], './dist/kube-cache-proxy.js');
    assert.match(
      dockerfile,
      /^ENTRYPOINT \["node", "--max-semi-space-size=2", "dist\/kube-cache-proxy\.js"\]$/m,
    );
    assert.match(script, /dist\/kube-cache-proxy\.js --version/);
    assert.match(dockerfile, /^USER 65532:65532$/m);
    assert.match(script, /KCP_IMAGE_UID-65532:65532/);
  });

  it('the image runs the CLI with the V8 flags of its shebang (what the npm bin runs)', () => {
    const { flags } = shebang();
    const entry = /^ENTRYPOINT \[(.*)\]$/m
      .exec(dockerfile)![1]!
      .split(', ')
      .map((x) => JSON.parse(x) as string);
    assert.deepEqual(entry, ['node', ...flags, 'dist/kube-cache-proxy.js']);
    assert.match(
      script,
      new RegExp(`"\\$node_bin" ${flags.join(' ')} dist/kube-cache-proxy\\.js "\\$\\{run_args`),
    );
  });

  it('the bin and the image run with a fixed glibc mmap threshold of 128 KiB (issue 32: RSS after big LISTs)', () => {
    // Without it glibc raises the threshold after the first big free and serves the cache's slabs
    // and the LISTs' batches from the brk heap, which stays at its high-water mark
    // (docs/benchmarks.md "Protobuf answers": RSS per JSON byte 1.84 against 1.54 after the rows).
    const { env } = shebang();
    assert.deepEqual(env, { MALLOC_MMAP_THRESHOLD_: '131072' });
    const fromImage = Object.fromEntries(
      [...dockerfile.matchAll(/^ENV (MALLOC_\w+)=(\S+)$/gm)].map((m) => [m[1]!, m[2]!]),
    );
    assert.deepEqual(fromImage, env);
    // Set in the final stage (after its FROM), not only in a build stage.
    const lastFrom = dockerfile.lastIndexOf('\nFROM ');
    assert.ok(
      dockerfile.indexOf('\nENV MALLOC_MMAP_THRESHOLD_=131072\n') > lastFrom,
      'ENV in the final stage',
    );
    const run = /exec env -i ([^\n]*)\\\n/.exec(script);
    assert.ok(run?.[1]?.split(' ').includes('MALLOC_MMAP_THRESHOLD_=131072'), run?.[1]);
  });

  it("npm start runs the proxy (in scripts/start.ts's process) with the shebang's settings", () => {
    // Regression: `npm start` ran `node scripts/start.ts`, the proxy in that process without the
    // malloc setting and the V8 flag that docs/operations.md "Process memory" says it runs with.
    const { env, flags } = shebang();
    const start = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts.start!;
    const words = start.split(' ');
    for (const [k, v] of Object.entries(env)) assert.ok(words.includes(`${k}=${v}`), start);
    const node = words.indexOf('node');
    assert.deepEqual(words.slice(node + 1, node + 1 + flags.length), flags, start);
    assert.equal(words.at(-1), 'scripts/start.ts');
  });

  it('the shebang, executed, gives node the malloc setting and the V8 flag', () => {
    // env -S splits the line and takes NAME=VALUE words as assignments (GNU coreutils, BSD).
    const dir = mkdtempSync(join(tmpdir(), 'kcp-shebang-'));
    try {
      const file = join(dir, 'probe.mjs');
      writeFileSync(
        file,
        `${read('src/cli.ts').split('\n')[0]}\nconsole.log(JSON.stringify([process.env.MALLOC_MMAP_THRESHOLD_ ?? null, process.execArgv]));\n`,
      );
      chmodSync(file, 0o755);
      const out = execFileSync(file, {
        encoding: 'utf8',
        env: { PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}` },
      });
      assert.deepEqual(JSON.parse(out), ['131072', shebang().flags]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('COPY only what .dockerignore lets into the context', () => {
    const allowed = read('.dockerignore')
      .split('\n')
      .filter((l) => l.startsWith('!'))
      .map((l) => l.slice(1).replace(/\/\*\*$/, ''));
    const copyLines = [...dockerfile.matchAll(/^COPY (?!--from)(.+) \S+$/gm)];
    const copied = [...new Set(copyLines.flatMap((m) => m[1]?.split(' ') ?? []))];
    assert.deepEqual(copied.sort(), [
      'package-lock.json',
      'package.json',
      'scripts/bundle.ts',
      'src',
      'tsconfig.build.json',
      'tsconfig.json',
    ]);
    assert.deepEqual(
      copied.filter((c) => !allowed.includes(c)),
      [],
    );
  });

  it('carries the OCI labels', () => {
    for (const label of ['title', 'description', 'licenses', 'version', 'revision', 'base.name']) {
      assert.match(dockerfile, new RegExp(`org\\.opencontainers\\.image\\.${label.replace('.', '\\.')}=`));
    }
  });
});
