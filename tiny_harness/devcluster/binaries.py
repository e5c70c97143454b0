"""Where the etcd, kube-apiserver and kube-controller-manager binaries come from.

They are built from the pinned Go modules in ``hack/controlplane`` by its ``build.sh``, which
caches them under ``${XDG_CACHE_HOME:-~/.cache}/tiny-harness/controlplane/<pin>/`` and rebuilds
only when the pin changes. ``TINY_HARNESS_CONTROLPLANE_DIR`` points at a directory holding both
binaries instead (for example an envtest bundle), for installs without the repository; such a
directory may lack kube-controller-manager, and the cluster then runs without its garbage
collector (owner references do not cascade).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ENV_DIR = "TINY_HARNESS_CONTROLPLANE_DIR"
BUILD_SCRIPT = Path(__file__).resolve().parents[2] / "hack" / "controlplane" / "build.sh"


class BinariesError(RuntimeError):
    """The control plane binaries are missing and cannot be built; the message says what to do."""


@dataclass(frozen=True)
class ControlPlaneBinaries:
    etcd: Path
    kube_apiserver: Path
    #: None when the directory has none (an envtest bundle): no garbage collection then.
    kube_controller_manager: Path | None = None

    @classmethod
    def in_directory(cls, directory: Path) -> ControlPlaneBinaries:
        manager = directory / "kube-controller-manager"
        found = cls(
            etcd=directory / "etcd",
            kube_apiserver=directory / "kube-apiserver",
            kube_controller_manager=manager if os.access(manager, os.X_OK) else None,
        )
        missing = [str(p) for p in (found.etcd, found.kube_apiserver) if not os.access(p, os.X_OK)]
        if missing:
            raise BinariesError(f"not found or not executable: {', '.join(missing)}")
        return found


def find_binaries(progress: Callable[[str], None]) -> ControlPlaneBinaries:
    """The cached binaries, built first if this pin has never been built on this machine."""
    configured = os.environ.get(ENV_DIR)
    if configured:
        return ControlPlaneBinaries.in_directory(Path(configured))
    if not BUILD_SCRIPT.exists():
        raise BinariesError(
            f"no control plane binaries: set {ENV_DIR} to a directory holding etcd and "
            "kube-apiserver, or run from a clone of the repository (hack/controlplane)"
        )
    proc = subprocess.Popen(
        ["bash", str(BUILD_SCRIPT)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    assert proc.stdout is not None
    for line in proc.stderr:
        progress(line.rstrip())
    out = proc.stdout.read().strip().splitlines()
    if proc.wait() != 0 or not out:
        raise BinariesError(
            f"building the control plane failed (exit {proc.returncode}); run "
            f"`bash {BUILD_SCRIPT}` to see the Go error"
        )
    return ControlPlaneBinaries.in_directory(Path(out[-1]))
