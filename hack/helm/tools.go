//go:build tools

// Package tools records helm's main package as a dependency, so that `go mod tidy` keeps its
// module graph and `go build helm.sh/helm/v3/cmd/helm` works from this module.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
