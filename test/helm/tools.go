//go:build tools

// Package tools pins helm (helm.sh/helm/v4/cmd/helm), which test/helm/build.sh builds into the
// fixture's bin directory for the chart tests (test/e2e/helm.test.ts). Its own module, apart from
// test/apiserver: helm's Kubernetes libraries need not match the fixture's apiserver version.
package tools

import (
	_ "helm.sh/helm/v4/cmd/helm"
)
