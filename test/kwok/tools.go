//go:build tools

// Package tools pins the KWOK binary the pods fixture builds (simulated nodes that serve the
// kubelet API: exec, attach, logs, port-forward) so that `go mod tidy` keeps it in go.mod/go.sum.
package tools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
