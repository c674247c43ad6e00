#!/usr/bin/env bash
# Builds the fixture binaries (kube-apiserver, kubectl, etcd, informer-probe, crmanager) into
# .cache/fixture/<version>/bin, reusing them when present. With --pods, also what the pods
# fixture needs (test/fixture/pods-fixture.ts): kube-controller-manager, kube-scheduler, and KWOK
# (test/kwok/build.sh). With --helm, also helm (test/helm/build.sh), for the chart tests
# (test/e2e/helm.test.ts). With --e2e, also the upstream e2e suite, e2e.test (`go test -c` of
# k8s.io/kubernetes/test/e2e at the same version; scripts/conformance.ts runs it): ~120 MB and
# several minutes of compiling, so only on request. The flags combine (`--pods --helm --e2e`).
# Idempotent; safe to run concurrently with itself only via the locks below.
#
# usage: build.sh [--pods] [--helm] [--e2e]
set -euo pipefail
pods=0
helm=0
e2e=0
for a in "$@"; do
  case $a in
    --pods) pods=1 ;;
    --helm) helm=1 ;;
    --e2e) e2e=1 ;;
    *) echo "build.sh: unknown argument: $a (usage: build.sh [--pods] [--helm] [--e2e])" >&2; exit 2 ;;
  esac
done
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
# Whether binary $1 was built from the module versions go.mod selects for package $2 now (its
# build info, `go version -m`, lists them): go.sum grows when another binary is added, which
# must not rebuild the others.
# With a third argument (-test) the package's test dependencies count too (a `go test -c` binary):
# a test binary embeds no module list, so the one wanted at its build is kept beside it (BIN.deps).
want_deps() { # package [-test]
  go list -deps ${2:-} -f '{{with .Module}}{{.Path}} {{with .Replace}}{{.Version}}{{else}}{{.Version}}{{end}}{{end}}' "$1" | sort -u
}
same_deps() {
  local have want
  if [ "${3:-}" = -test ]; then
    have=$(cat "$1.deps" 2>/dev/null || true)
  else
    have=$(go version -m "$1" | awk '$1=="mod"||$1=="dep"{p=$2; m[p]=$3} $1=="=>"{m[p]=$3} END{for(p in m) print p, m[p]}' | sort)
  fi
  want=$(want_deps "$2" "${3:-}")
  [ -n "$have" ] && [ "$have" = "$want" ]
}
build() { # name package [-test]
  # A package of this module (./probe, ./crmanager) is also rebuilt when its main.go is newer.
  local src=""
  case $2 in ./*) src="$here/${2#./}/main.go" ;; esac
  if [ -x "$out/$1" ] && { [ -z "$src" ] || [ "$out/$1" -nt "$src" ]; }; then
    if [ "$out/$1" -nt "$here/go.sum" ]; then return 0; fi
    if [ -z "$src" ] && same_deps "$out/$1" "$2" "${3:-}"; then touch "$out/$1"; return 0; fi
  fi
  local t0=$SECONDS
  echo "fixture: building $1 ($version)…" >&2
  if [ "${3:-}" = -test ]; then
    # The e2e suite is a test binary; vet would only add minutes. nice: it compiles for minutes
    # on a machine others share.
    CGO_ENABLED=0 nice go test -c -vet=off -trimpath -ldflags "$ldflags" -o "$out/$1.tmp" "$2"
    want_deps "$2" -test > "$out/$1.deps"
  else
    CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out/$1.tmp" "$2"
  fi
  mv "$out/$1.tmp" "$out/$1"
  echo "fixture: built $1 in $((SECONDS - t0)) s" >&2
}
build etcd go.etcd.io/etcd/server/v3
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
build kubectl k8s.io/kubernetes/cmd/kubectl
build informer-probe ./probe
build crmanager ./crmanager
if [ "$pods" = 1 ]; then
  build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager
  build kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler
  bash "$root/test/kwok/build.sh" "$out"
fi
if [ "$helm" = 1 ]; then
  bash "$root/test/helm/build.sh" "$out"
fi
if [ "$e2e" = 1 ]; then
  # Minutes of compiling under its own lock, so the fixture builds of concurrent test runs (which
  # need only the binaries above) are not held up behind it.
  exec 9>&-
  exec 8>"$out/.lock-e2e"
  flock 8
  build e2e.test k8s.io/kubernetes/test/e2e -test
fi
echo "$out"
