#!/usr/bin/env bash
# Builds etcd, kube-apiserver and kube-controller-manager from the pins in go.mod into the
# tiny-harness cache, once per pin, and kubectl of the same release when the machine has none. Prints the directory holding
# the binaries on the last line of stdout; progress goes to stderr.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
pin="$(cat "$here/go.mod" "$here/go.sum" "$here/etcd/main.go" "$here/build.sh" | sha256sum | cut -c1-16)"
k8s="$(awk '/^require k8s.io\/kubernetes/ {print $3}' "$here/go.mod")"
minor="$(echo "$k8s" | cut -d. -f2)"
# Without these the server reports v0.0.0-master, and clients that check the version (helm's
# kubeVersion constraints) refuse it.
version_flags="-X k8s.io/component-base/version.gitVersion=${k8s} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor} -X k8s.io/component-base/version.gitTreeState=clean"
out="${XDG_CACHE_HOME:-$HOME/.cache}/tiny-harness/controlplane/${k8s}-${pin}"
export CGO_ENABLED=0 GOFLAGS=-mod=readonly
cd "$here"

if [[ ! -x "$out/kube-apiserver" || ! -x "$out/etcd" || ! -x "$out/kube-controller-manager" ]]; then
  echo "building the local control plane (kube-apiserver and kube-controller-manager ${k8s}," \
    "etcd) into $out; the first build takes several minutes, later starts reuse it" >&2
  rm -rf "$out.tmp" && mkdir -p "$out.tmp"
  go build -trimpath -ldflags='-s -w' -o "$out.tmp/etcd" ./etcd
  echo "  etcd built" >&2
  go build -trimpath -ldflags="-s -w ${version_flags}" -o "$out.tmp/kube-apiserver" \
    k8s.io/kubernetes/cmd/kube-apiserver
  echo "  kube-apiserver built" >&2
  go build -trimpath -ldflags="-s -w ${version_flags}" -o "$out.tmp/kube-controller-manager" \
    k8s.io/kubernetes/cmd/kube-controller-manager
  echo "  kube-controller-manager built" >&2
  mkdir -p "$out"
  mv "$out.tmp/etcd" "$out.tmp/kube-apiserver" "$out.tmp/kube-controller-manager" "$out/"
  rm -rf "$out.tmp"
fi

if ! command -v kubectl >/dev/null 2>&1 && [[ ! -x "$out/kubectl" ]]; then
  echo "no kubectl on PATH: building kubectl ${k8s} into $out" >&2
  go build -trimpath -ldflags="-s -w ${version_flags}" -o "$out/kubectl.tmp" \
    k8s.io/kubernetes/cmd/kubectl
  mv "$out/kubectl.tmp" "$out/kubectl"
fi
echo "$out"
