#!/usr/bin/env bash
# Performs the install and build steps of the Dockerfile in a clean temporary folder, without a
# Docker engine, then starts the result the way the image's ENTRYPOINT does:
#   1. export the committed tree (`git archive REF`, the equivalent of a clean build context);
#   2. stage `build`:     npm ci → npm run build            (dev dependencies, produces dist/,
#                         the bundled entrypoint dist/kube-cache-proxy.js)
#   3. stage `prod-deps`: npm ci --omit=dev                  (production dependencies only)
#   4. runtime:           package.json + node_modules + dist/, read-only, as UID 65532;
#   5. `node dist/kube-cache-proxy.js --version` must print the package version and the revision
#      of REF (the archive has no .git: the build is given it as the Dockerfile's REVISION);
#   6. with `-- ARGS...`: start `node dist/kube-cache-proxy.js ARGS...` and wait for the ops listener's
#      /readyz to answer 200 (e.g. against the test fixture), then stop it.
# The `npm` commands here and in the Dockerfile must stay identical
# (test/unit/repo/image-steps.test.ts checks it).
#
# usage: scripts/image-build.sh [--ref REF] [--keep] [-- ARGS...]
# env:   KCP_IMAGE_UID        UID:GID to run as when root (default 65532:65532; "" keeps root)
#        KCP_IMAGE_READY_URL  readiness URL for step 6 (default http://127.0.0.1:8081/readyz)
#        KCP_IMAGE_TIMEOUT    seconds to wait for readiness (default 60)
set -euo pipefail

ref=HEAD
keep=0
run_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --ref) ref="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    --) shift; run_args=("$@"); break ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "image-build: unknown argument: $1" >&2; exit 2 ;;
  esac
done

fail() { echo "image-build: FAILED: $*" >&2; exit 1; }
t0=$SECONDS
step() { echo "image-build: == $* (t=$((SECONDS - t0))s)" >&2; }

repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/kcp-image.XXXXXX")"
chmod 755 "$work"
pid=""
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  if [ "$keep" = 1 ]; then echo "image-build: kept $work" >&2; else chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"; fi
}
trap cleanup EXIT

step "context: git archive $ref"
mkdir "$work/context"
git -C "$repo" archive --format=tar "$ref" | tar -x -C "$work/context"
ctx="$work/context"

# The image's entrypoint is built from src/cli.ts: without it, fail before ~30 s of installs.
[ -f "$ctx/src/cli.ts" ] ||
  fail "src/cli.ts is missing from $ref: the build cannot produce dist/kube-cache-proxy.js, the image entrypoint"

step "stage build"
mkdir "$work/build"
cp "$ctx/package.json" "$ctx/package-lock.json" "$work/build/"
# step: npm ci --no-audit --no-fund
(cd "$work/build" && npm ci --no-audit --no-fund) >&2 || fail "npm ci (build stage)"
cp "$ctx/tsconfig.json" "$ctx/tsconfig.build.json" "$work/build/"
cp -R "$ctx/src" "$work/build/src"
mkdir "$work/build/scripts" && cp "$ctx/scripts/bundle.ts" "$work/build/scripts/"
# The Dockerfile's `ARG REVISION` / `ENV KCP_REVISION`: the revision the bundle records.
revision="$(git -C "$repo" rev-parse "$ref^{commit}")"
export KCP_REVISION="$revision"
# step: npm run build
(cd "$work/build" && npm run build) >&2 || fail "npm run build (see the compiler errors above)"

step "stage prod-deps"
mkdir "$work/prod-deps"
cp "$ctx/package.json" "$ctx/package-lock.json" "$work/prod-deps/"
# step: npm ci --omit=dev --no-audit --no-fund
(cd "$work/prod-deps" && npm ci --omit=dev --no-audit --no-fund) >&2 || fail "npm ci --omit=dev (prod-deps stage)"

step "runtime"
app="$work/app"
mkdir "$app"
# The stage folders are not used again: moving is the same as the Dockerfile's COPY --from, minus
# copying ~100 MB (about 8 s of this script).
cp "$work/prod-deps/package.json" "$app/package.json"
mv "$work/prod-deps/node_modules" "$app/node_modules"
mv "$work/build/dist" "$app/dist"
[ -f "$app/dist/kube-cache-proxy.js" ] ||
  fail "dist/kube-cache-proxy.js is missing: the build did not produce the image entrypoint (does $ref contain src/cli.ts?)"
# Dev-only tools (@types/node is NOT listed: @kubernetes/client-node depends on it at run time).
for dev in typescript @biomejs/biome node esbuild; do
  [ ! -e "$app/node_modules/$dev" ] || fail "dev dependency $dev is in the runtime node_modules"
done
chmod -R a-w "$app" # readOnlyRootFilesystem: the app must not need to write next to itself

# The image runs the base image's Node 24; here that is the node@24 devDependency's binary.
node_bin="$(readlink -f "$work/build/node_modules/.bin/node")"
"$node_bin" --version | grep -q '^v24\.' || fail "expected Node 24 at $node_bin, got $("$node_bin" --version)"
as_user=()
uid="${KCP_IMAGE_UID-65532:65532}"
if [ "$(id -u)" = 0 ] && [ -n "$uid" ]; then
  as_user=(setpriv "--reuid=${uid%%:*}" "--regid=${uid##*:}" --clear-groups --)
fi

step "entrypoint: node dist/kube-cache-proxy.js --version (as ${uid:-$(id -u)})"
want="$(cd "$app" && "$node_bin" -p 'require("./package.json").version')"
got="$(cd "$app" && env -i PATH=/usr/bin:/bin HOME=/nonexistent NODE_ENV=production "${as_user[@]}" "$node_bin" dist/kube-cache-proxy.js --version 2>&1)" ||
  fail "node dist/kube-cache-proxy.js --version exited non-zero: $got"
[ "$got" = "kube-cache-proxy $want (revision $revision)" ] ||
  fail "--version printed '$got', expected 'kube-cache-proxy $want (revision $revision)'"
unset KCP_REVISION
echo "image-build: --version: $got" >&2

if [ ${#run_args[@]} -gt 0 ]; then
  ready_url="${KCP_IMAGE_READY_URL:-http://127.0.0.1:8081/readyz}"
  timeout_s="${KCP_IMAGE_TIMEOUT:-60}"
  step "start: node dist/kube-cache-proxy.js ${run_args[*]}; waiting for $ready_url"
  log="$work/run.log"
  (cd "$app" && exec env -i PATH=/usr/bin:/bin HOME=/nonexistent NODE_ENV=production MALLOC_MMAP_THRESHOLD_=131072 \
    "${as_user[@]}" "$node_bin" --max-semi-space-size=2 dist/kube-cache-proxy.js "${run_args[@]}") >"$log" 2>&1 &
  pid=$!
  deadline=$((SECONDS + timeout_s))
  until [ "$(curl -s -o /dev/null -w '%{http_code}' "$ready_url" 2>/dev/null)" = 200 ]; do
    if ! kill -0 "$pid" 2>/dev/null; then tail -n 40 "$log" >&2; fail "the proxy exited before it was ready"; fi
    if [ $SECONDS -ge $deadline ]; then
      curl -s "$ready_url?verbose" >&2 || true
      tail -n 40 "$log" >&2
      fail "not ready within ${timeout_s}s"
    fi
    sleep 0.5
  done
  curl -s "$ready_url?verbose" >&2
  kill -TERM "$pid"
  wait "$pid" || true
  pid=""
  echo "image-build: the proxy became ready and stopped on SIGTERM" >&2
fi
echo "image-build: OK"
