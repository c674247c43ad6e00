#!/usr/bin/env bash
# Builds helm (helm.sh/helm/v4/cmd/helm, the version in go.mod) into the fixture's bin directory
# ($1, as test/apiserver/build.sh passes it), for the chart tests (test/e2e/helm.test.ts: `helm
# lint`, `helm template`). A module of its own: helm's Kubernetes libraries need not match the
# fixture apiserver's. Idempotent: reuses the binary while it is newer than go.mod, go.sum and
# this script.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build.sh BIN_DIR}
mkdir -p "$out"
cd "$here"
fresh=1
[ -x "$out/helm" ] || fresh=0
for f in go.sum go.mod build.sh; do [ "$out/helm" -nt "$f" ] || fresh=0; done
[ "$fresh" = 1 ] && exit 0

t0=$SECONDS
version=$(go list -m -f '{{.Version}}' helm.sh/helm/v4)
echo "fixture: building helm ($version)…" >&2
# The version stamp helm's own Makefile sets (`helm version` prints it).
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$version" \
  -o "$out/helm.tmp" helm.sh/helm/v4/cmd/helm
mv "$out/helm.tmp" "$out/helm"
echo "fixture: built helm in $((SECONDS - t0)) s" >&2
