//go:build tools

// Package tools records the kube-apiserver and kube-controller-manager main packages as
// dependencies, so that `go mod tidy` keeps their module graph and `go build` of either works.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
