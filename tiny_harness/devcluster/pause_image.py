"""The node's sandbox ("pause") image, written here from the pause binary hack/controlplane builds.

Every pod starts with a sandbox container that holds its namespaces; containerd's CRI plugin
names its image (``sandbox_image``) and pulls it when it is missing. A node that never pulls
anything needs that image present from the start, so this module writes it as an OCI image
layout archive (one uncompressed layer holding ``/pause``) that ``ctr images import`` loads. It
is deterministic: the same binary gives the same digests, and the name's tag is derived from them.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

REPOSITORY = "localhost/tiny-harness/pause"


def pause_image_name(binary: Path) -> str:
    return f"{REPOSITORY}:{hashlib.sha256(binary.read_bytes()).hexdigest()[:12]}"


def write_pause_archive(binary: Path, archive: Path) -> str:
    """Write the archive and return the image's name (which ``sandbox_image`` must be)."""
    name = pause_image_name(binary)
    layer = _tar({"pause": (binary.read_bytes(), 0o755)})
    layer_digest = _digest(layer)
    config = _json(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": {"Entrypoint": ["/pause"]},
            "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
        }
    )
    manifest = _json(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": _digest(config),
                "size": len(config),
            },
            "layers": [
                {
                    "mediaType": "application/vnd.oci.image.layer.v1.tar",
                    "digest": layer_digest,
                    "size": len(layer),
                }
            ],
        }
    )
    index = _json(
        {
            "schemaVersion": 2,
            "manifests": [
                {
                    "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "digest": _digest(manifest),
                    "size": len(manifest),
                    "platform": {"architecture": "amd64", "os": "linux"},
                    "annotations": {"org.opencontainers.image.ref.name": name},
                }
            ],
        }
    )
    files: dict[str, tuple[bytes, int]] = {
        "oci-layout": (_json({"imageLayoutVersion": "1.0.0"}), 0o644),
        "index.json": (index, 0o644),
    }
    for blob in (layer, config, manifest):
        files[f"blobs/sha256/{_digest(blob).split(':')[1]}"] = (blob, 0o644)
    archive.write_bytes(_tar(files))
    return name


def _tar(files: dict[str, tuple[bytes, int]]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path, (data, mode) in files.items():
            info = tarfile.TarInfo(path)
            info.size = len(data)
            info.mode = mode
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _json(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":"), sort_keys=True).encode()


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()
