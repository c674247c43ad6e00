#!/usr/bin/env bash
# Builds KWOK (sigs.k8s.io/kwok, the version in go.mod) into the fixture's bin directory ($1, as
# test/apiserver/build.sh --pods passes it), with its default Stage objects next to it as
# kwok-stages.yaml. The module comes from the Go module proxy; a COPY of it from the module cache
# gets the small patches in this directory (*.patch), and is built through a temporary -modfile
# with a `replace` to that copy (the committed go.mod has no replace):
#   stdin-eof.patch: exec with stdin never closed the command's stdin pipe, so `kubectl exec -i
#   … -- cat` and `kubectl cp` into a pod hung after the client's stdin had ended.
# Idempotent: reuses the binary while it is newer than go.sum and every patch.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build.sh BIN_DIR}
cd "$here"
fresh=1
[ -x "$out/kwok" ] && [ -f "$out/kwok-stages.yaml" ] || fresh=0
for f in go.sum go.mod build.sh ./*.patch; do [ "$out/kwok" -nt "$f" ] || fresh=0; done
[ "$fresh" = 1 ] && exit 0

t0=$SECONDS
version=$(go list -m -f '{{.Version}}' sigs.k8s.io/kwok)
echo "fixture: building kwok ($version)…" >&2
src=$(go mod download -json "sigs.k8s.io/kwok@$version" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$src" "$work/kwok"
chmod -R u+w "$work/kwok"
for p in "$here"/*.patch; do (cd "$work/kwok" && git apply -p1 "$p"); done
cp go.mod "$work/go.mod"
cp go.sum "$work/go.sum"
echo "replace sigs.k8s.io/kwok => $work/kwok" >> "$work/go.mod"
CGO_ENABLED=0 go build -modfile="$work/go.mod" -trimpath -ldflags "-s -w" -o "$out/kwok.tmp" sigs.k8s.io/kwok/cmd/kwok
# The default stages kwokctl gives kwok: nodes become Ready and keep a Lease, pods become
# Running/Ready, complete, and are deleted.
stages=$work/kwok/kustomize/stage
for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
  pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
  echo '---'
  cat "$stages/$f"
done > "$out/kwok-stages.yaml.tmp"
mv "$out/kwok-stages.yaml.tmp" "$out/kwok-stages.yaml"
mv "$out/kwok.tmp" "$out/kwok"
echo "fixture: built kwok in $((SECONDS - t0)) s" >&2
