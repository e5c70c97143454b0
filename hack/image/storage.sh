# Sourced by build.sh and base.sh: one buildah storage for the image, the base and the build's
# cached layers, kept in the tiny-harness cache rather than the machine's /var/lib/containers,
# so a warm build reuses them and removing the cache removes all of it.
cache="${XDG_CACHE_HOME:-$HOME/.cache}/tiny-harness/image"
mkdir -p "$cache/storage"
run_root="${XDG_RUNTIME_DIR:-/run}/tiny-harness-buildah"
bah() { buildah --root "$cache/storage" --runroot "$run_root" --storage-driver overlay "$@"; }
