#!/usr/bin/env bash
# Builds the fixture binaries (kube-apiserver, kubectl, etcd, informer-probe) into
# .cache/fixture/<version>/bin, reusing them when present. Idempotent; safe to run concurrently
# with itself only via the lock below.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
version=$(cat "$here/VERSION")
out="${KCP_FIXTURE_DIR:-$root/.cache/fixture}/$version/bin"
mkdir -p "$out"
exec 9>"$out/.lock"
flock 9
minor=${version#v1.}; minor=${minor%%.*}
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
cd "$here"
build() { # name package
  if [ -x "$out/$1" ] && [ "$out/$1" -nt "$here/go.sum" ] && { [ "$1" != informer-probe ] || [ "$out/$1" -nt "$here/probe/main.go" ]; }; then
    return 0
  fi
  local t0=$SECONDS
  echo "fixture: building $1 ($version)…" >&2
  CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out/$1.tmp" "$2"
  mv "$out/$1.tmp" "$out/$1"
  echo "fixture: built $1 in $((SECONDS - t0)) s" >&2
}
build etcd go.etcd.io/etcd/server/v3
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
build kubectl k8s.io/kubernetes/cmd/kubectl
build informer-probe ./probe
echo "$out"
