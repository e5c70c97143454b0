#!/usr/bin/env bash
# Builds the tiny-harness image from the repository's Dockerfile without a Docker engine:
# buildah, with the Python base from base.sh (Debian bookworm's packages, once per pin) and the
# web UI's assets as `make web` built them. Writes an OCI archive that containerd imports
# (`ctr images import`) and prints its path on the last line of stdout; progress goes to
# stderr. Needs root (debootstrap, buildah's storage) and buildah and debootstrap installed.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
for tool in buildah debootstrap; do
  command -v "$tool" >/dev/null || {
    echo "$tool is not installed: apt-get install buildah debootstrap" >&2
    exit 1
  }
done
source "$here/storage.sh"
base="$(bash "$here/base.sh" | tail -1)"

if [[ ! -f "$repo/tiny_harness/a2a_gateway/webui/index.html" ]]; then
  echo "building the web UI's assets (make web)" >&2
  make -C "$repo" --no-print-directory web >&2
fi

echo "building the image from $repo/Dockerfile (buildah bud; cached layers make a rebuild" \
  "of unchanged stages quick)" >&2
# --network host: the build's RUN steps install requirements.lock's pins from PyPI; the layers
# cache is the warm path (the dependencies' layer is reused while the lock is unchanged).
# The machine's CA certificates and pip configuration are lent to the RUN steps (mounted, so
# never part of a layer): a build behind a TLS-inspecting proxy or a private index reaches PyPI
# as pip on the machine does, and the image keeps Debian's own trust store.
lent=()
[[ -d /etc/ssl/certs ]] && lent+=(--volume /etc/ssl/certs:/etc/ssl/certs:ro)
[[ -f /etc/pip.conf ]] && lent+=(--volume /etc/pip.conf:/etc/pip.conf:ro)
id_file="$(mktemp)"
trap 'rm -f "$id_file"' EXIT
bah bud --quiet --layers --network host --format oci "${lent[@]}" \
  --build-arg PYTHON_IMAGE="$base" --build-arg WEB_ASSETS=prebuilt \
  --build-context webui="$repo/tiny_harness/a2a_gateway/webui" \
  --iidfile "$id_file" -f "$repo/Dockerfile" "$repo" >&2
digest="$(cut -d: -f2 <"$id_file")"
id="${digest:0:12}"
tag="localhost/tiny-harness:$id"
bah tag "$digest" "$tag"

# One archive per image id: the same image is written once, and a node running an older one
# never sees its archive change.
archive="$cache/archives/tiny-harness-$id.oci.tar"
if [[ ! -f "$archive" ]]; then
  mkdir -p "$cache/archives"
  rm -f "$archive.tmp"
  bah push --quiet "$tag" "oci-archive:$archive.tmp:$tag" >&2
  mv "$archive.tmp" "$archive"
fi
# Keep the newest three archives (a node may still be importing the one before this): each
# is the whole image, a few hundred MB.
ls -1t "$cache"/archives/tiny-harness-*.oci.tar | tail -n +4 | while read -r old; do
  rm -f "$old"
  old_id="$(basename "$old" .oci.tar)"
  bah rmi "localhost/tiny-harness:${old_id#tiny-harness-}" >/dev/null 2>&1 || true
done
echo "  image $tag in $archive" >&2
echo "$archive"
