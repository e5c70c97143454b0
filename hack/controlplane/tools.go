//go:build tools

// Package tools records the Kubernetes main packages built from this pin as dependencies, so
// that `go mod tidy` keeps their module graph and `go build` of each works: the control plane
// (kube-apiserver, kube-controller-manager) and the node (kubelet, kube-scheduler, kube-proxy).
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
