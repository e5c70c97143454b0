#!/usr/bin/env bash
# Builds the local node's cluster DNS (CoreDNS with the plugins main.go names) from the pin in
# go.mod into the tiny-harness cache, once per pin. Prints the directory holding the binary on
# the last line of stdout; progress goes to stderr. tiny_harness/devcluster/node.py runs it.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
pin="$(cat "$here/go.mod" "$here/go.sum" "$here/main.go" "$here/build.sh" | sha256sum | cut -c1-16)"
version="$(awk '/^require github.com\/coredns\/coredns/ {print $3}' "$here/go.mod")"
out="${XDG_CACHE_HOME:-$HOME/.cache}/tiny-harness/coredns/${version}-${pin}"
export CGO_ENABLED=0 GOFLAGS=-mod=readonly
cd "$here"

if [[ ! -x "$out/coredns" ]]; then
  echo "building CoreDNS ${version} into $out (once per pin; two to three minutes cold)" >&2
  mkdir -p "$out"
  tmp="$(mktemp -d "$out.tmp.XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT
  go build -trimpath -ldflags='-s -w' -o "$tmp/coredns" .
  mv -f "$tmp/coredns" "$out/coredns"
  echo "  coredns built" >&2
fi
echo "$out"
