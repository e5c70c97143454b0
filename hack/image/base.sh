#!/usr/bin/env bash
# Builds the image's Python base from Debian bookworm's packages (debootstrap), once per pin
# (this file), into the buildah storage in the tiny-harness cache. Prints the base's name on
# the last line of stdout; progress goes to stderr. bookworm's Python is 3.11, the version of
# the Dockerfile's default base (python:3.11-slim).
#
#   TINY_HARNESS_DEBIAN_MIRROR  where debootstrap fetches bookworm (default deb.debian.org)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/storage.sh"
mirror="${TINY_HARNESS_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# What the base holds: Python 3.11 with venv and pip (the Dockerfile's builder runs `python -m
# pip wheel` and `python -m venv`), and CA certificates for pip.
packages="python3,python3-venv,python3-pip,python-is-python3,ca-certificates"
pin="$(sha256sum <"$here/base.sh" | cut -c1-16)"
base="localhost/tiny-harness/base-python:bookworm-${pin}"

if ! bah inspect --type image "$base" >/dev/null 2>&1; then
  echo "building the Python base $base from Debian bookworm ($mirror); once per pin," \
    "about a minute" >&2
  rootfs="$(mktemp -d "$cache/rootfs.XXXXXX")"
  trap 'rm -rf "$rootfs" "$rootfs.log"' EXIT
  debootstrap --variant=minbase --include="$packages" bookworm "$rootfs" "$mirror" \
    >"$rootfs.log" 2>&1 || {
    tail -20 "$rootfs.log" >&2
    exit 1
  }
  # What an image needs no copy of: apt's lists and downloads, documentation, man pages.
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/* "$rootfs"/usr/share/doc/* \
    "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/*
  ctr="$(bah from --quiet scratch)"
  mnt="$(bah mount "$ctr")"
  cp -a "$rootfs/." "$mnt/"
  bah umount "$ctr" >/dev/null
  bah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env LANG=C.UTF-8 --cmd python3 "$ctr"
  bah commit --quiet --rm "$ctr" "$base" >/dev/null
  echo "  base built" >&2
fi
echo "$base"
