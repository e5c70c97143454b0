#!/usr/bin/env bash
# Builds etcd and kube-apiserver from the pins in go.mod into the tiny-harness cache, once per pin.
# Prints the directory holding the binaries on its last line of stdout.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
pin="$(cat "$here/go.mod" "$here/go.sum" "$here/etcd/main.go" | sha256sum | cut -c1-16)"
k8s="$(awk '/^require k8s.io\/kubernetes/ {print $3}' "$here/go.mod")"
out="${XDG_CACHE_HOME:-$HOME/.cache}/tiny-harness/controlplane/${k8s}-${pin}"
if [[ -x "$out/kube-apiserver" && -x "$out/etcd" ]]; then
  echo "$out"
  exit 0
fi
echo "building the local control plane (kube-apiserver ${k8s}, etcd) into $out;" \
  "the first build takes several minutes, later starts reuse it" >&2
mkdir -p "$out.tmp"
cd "$here"
export CGO_ENABLED=0 GOFLAGS=-mod=mod
go build -trimpath -ldflags='-s -w' -o "$out.tmp/etcd" ./etcd
echo "  etcd built" >&2
go build -trimpath -ldflags='-s -w' -o "$out.tmp/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
echo "  kube-apiserver built" >&2
rm -rf "$out"
mv "$out.tmp" "$out"
echo "$out"
