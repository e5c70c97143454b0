#!/usr/bin/env bash
# Builds etcd, kube-apiserver and kube-controller-manager from the pins in go.mod into the
# tiny-harness cache, once per pin, and kubectl of the same release when the machine has none.
# With --node it also builds the node's kubelet, kube-scheduler and kube-proxy from the same
# Kubernetes pin, and the pods' sandbox process (pause/), into the same directory
# (tiny_harness/devcluster/node.py runs them). Prints
# the directory holding the binaries on the last line of stdout; progress goes to stderr.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
node=0
[[ "${1:-}" == "--node" ]] && node=1
pin="$(cat "$here/go.mod" "$here/go.sum" "$here/etcd/main.go" "$here/pause/main.go" "$here/build.sh" | sha256sum | cut -c1-16)"
k8s="$(awk '/^require k8s.io\/kubernetes/ {print $3}' "$here/go.mod")"
minor="$(echo "$k8s" | cut -d. -f2)"
# Without these the server reports v0.0.0-master, and clients that check the version (helm's
# kubeVersion constraints) refuse it.
version_flags="-X k8s.io/component-base/version.gitVersion=${k8s} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor} -X k8s.io/component-base/version.gitTreeState=clean"
out="${XDG_CACHE_HOME:-$HOME/.cache}/tiny-harness/controlplane/${k8s}-${pin}"
export CGO_ENABLED=0 GOFLAGS=-mod=readonly
cd "$here"

# Each binary is built into a directory of this run's own and moved into place whole, so two
# builds of the same pin at once (two checkouts, two test runs) never see half a binary.
mkdir -p "$out"
tmp="$(mktemp -d "$out.tmp.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

build() {  # build <name> <package> <ldflags>
  [[ -x "$out/$1" ]] && return
  go build -trimpath -ldflags="$3" -o "$tmp/$1" "$2"
  mv -f "$tmp/$1" "$out/$1"
  echo "  $1 built" >&2
}

if [[ ! -x "$out/kube-apiserver" || ! -x "$out/etcd" || ! -x "$out/kube-controller-manager" ]]; then
  echo "building the local control plane (kube-apiserver and kube-controller-manager ${k8s}," \
    "etcd) into $out; the first build takes several minutes, later starts reuse it" >&2
fi
build etcd ./etcd "-s -w"
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "-s -w ${version_flags}"
build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager "-s -w ${version_flags}"

if (( node )); then
  if [[ ! -x "$out/kubelet" || ! -x "$out/kube-scheduler" || ! -x "$out/kube-proxy" \
    || ! -x "$out/pause" ]]; then
    echo "building the node (kubelet, kube-scheduler, kube-proxy ${k8s}) into $out;" \
      "once per pin, several minutes cold" >&2
  fi
  build kubelet k8s.io/kubernetes/cmd/kubelet "-s -w ${version_flags}"
  build kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler "-s -w ${version_flags}"
  build kube-proxy k8s.io/kubernetes/cmd/kube-proxy "-s -w ${version_flags}"
  build pause ./pause "-s -w"
fi

if ! command -v kubectl >/dev/null 2>&1; then
  [[ -x "$out/kubectl" ]] || echo "no kubectl on PATH: building kubectl ${k8s} into $out" >&2
  build kubectl k8s.io/kubernetes/cmd/kubectl "-s -w ${version_flags}"
fi
echo "$out"
