//go:build tools

// Package tools pins the binaries the fixture builds (kube-apiserver, kubectl, etcd; for the pods
// fixture kube-controller-manager and kube-scheduler) so that `go mod tidy` keeps them in
// go.mod/go.sum.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/test/e2e"
)
