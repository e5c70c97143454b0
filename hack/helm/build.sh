#!/usr/bin/env bash
# Builds helm from the pin in go.mod into the tiny-harness cache, once per pin. Prints the
# directory holding the binary on the last line of stdout; progress goes to stderr.
# Used by tests/integration/test_chart.py (lint, template, RBAC on a real API server).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# The build flags below are part of the pin: changing them builds a new binary.
pin="$(cat "$here/go.mod" "$here/go.sum" "$here/tools.go" "$here/build.sh" | sha256sum | cut -c1-16)"
version="$(awk '/^require helm.sh\/helm\/v3/ {print $3}' "$here/go.mod")"
out="${XDG_CACHE_HOME:-$HOME/.cache}/tiny-harness/helm/${version}-${pin}"
export CGO_ENABLED=0 GOFLAGS=-mod=readonly
cd "$here"

if [[ ! -x "$out/helm" ]]; then
  echo "building helm ${version} into $out (once per pin; two to three minutes cold)" >&2
  rm -rf "$out.tmp" && mkdir -p "$out.tmp"
  # The same -X flags as helm's own Makefile: its version, and the Kubernetes version that
  # `helm template` and `helm lint` assume (client-go v0.N is Kubernetes 1.N), which
  # otherwise stays at 1.20 and fails the chart's kubeVersion constraint.
  client_go="$(go list -m -f '{{.Version}}' k8s.io/client-go)"
  k8s_minor="$(echo "$client_go" | cut -d. -f2)"
  ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=${version}"
  for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
    ldflags+=" -X ${pkg}.k8sVersionMajor=1 -X ${pkg}.k8sVersionMinor=${k8s_minor}"
  done
  go build -trimpath -ldflags="$ldflags" -o "$out.tmp/helm" helm.sh/helm/v3/cmd/helm
  mkdir -p "$out"
  mv "$out.tmp/helm" "$out/helm"
  rm -rf "$out.tmp"
  echo "  helm built" >&2
fi
echo "$out"
