//go:build tools

// Package tools records the kube-apiserver main package as a dependency, so that
// `go mod tidy` keeps its module graph and `go build k8s.io/kubernetes/cmd/kube-apiserver` works.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
