"""Where the etcd, kube-apiserver and kube-controller-manager binaries come from.

They are built from the pinned Go modules in ``hack/controlplane`` by its ``build.sh``, which
caches them under ``${XDG_CACHE_HOME:-~/.cache}/tiny-harness/controlplane/<pin>/`` and rebuilds
only when the pin changes. ``TINY_HARNESS_CONTROLPLANE_DIR`` points at a directory holding both
binaries instead (for example an envtest bundle), for installs without the repository; such a
directory may lack kube-controller-manager, and the cluster then runs without its garbage
collector (owner references do not cascade).

A cluster with a node also needs kubelet, kube-scheduler, kube-proxy and the pause sandbox
binary, which ``build.sh --node`` builds into the same directory (:func:`find_node_binaries`),
CoreDNS for the cluster's names (``hack/coredns/build.sh``, cached the same way), and
containerd, runc, ``ctr`` and the CNI plugins, which come from the machine's packages (Debian's
``containerd``, ``runc`` and ``containernetworking-plugins``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ENV_DIR = "TINY_HARNESS_CONTROLPLANE_DIR"
BUILD_SCRIPT = Path(__file__).resolve().parents[2] / "hack" / "controlplane" / "build.sh"
COREDNS_BUILD_SCRIPT = BUILD_SCRIPT.parents[1] / "coredns" / "build.sh"


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


@dataclass(frozen=True)
class NodeBinaries:
    kubelet: Path
    kube_scheduler: Path
    kube_proxy: Path
    pause: Path
    coredns: Path
    containerd: Path
    ctr: Path
    cni_dir: Path

    @classmethod
    def in_directory(cls, directory: Path, coredns: Path) -> NodeBinaries:
        machine = {name: shutil.which(name) for name in ("containerd", "ctr", "runc")}
        cni_dir = next((d for d in _CNI_DIRS if (d / "bridge").exists()), None)
        missing = [name for name, found in machine.items() if found is None]
        if cni_dir is None:
            missing.append("the CNI plugins (bridge, host-local)")
        if missing:
            raise BinariesError(
                f"a node needs {', '.join(missing)}: apt-get install containerd runc "
                "containernetworking-plugins"
            )
        assert cni_dir is not None
        found = cls(
            kubelet=directory / "kubelet",
            kube_scheduler=directory / "kube-scheduler",
            kube_proxy=directory / "kube-proxy",
            pause=directory / "pause",
            coredns=coredns / "coredns",
            containerd=Path(str(machine["containerd"])),
            ctr=Path(str(machine["ctr"])),
            cni_dir=cni_dir,
        )
        built = (found.kubelet, found.kube_scheduler, found.kube_proxy, found.pause, found.coredns)
        absent = [str(p) for p in built if not os.access(p, os.X_OK)]
        if absent:
            raise BinariesError(
                f"not found or not executable: {', '.join(absent)} "
                f"(`bash {BUILD_SCRIPT} --node` builds them)"
            )
        return found


_CNI_DIRS = (Path("/usr/lib/cni"), Path("/opt/cni/bin"))


def find_node_binaries(progress: Callable[[str], None]) -> NodeBinaries:
    """The node's binaries beside the control plane's, built first when missing. With
    ``TINY_HARNESS_CONTROLPLANE_DIR`` set, CoreDNS is looked for in that directory too."""
    directory = _built_directory(progress, node=True)
    if os.environ.get(ENV_DIR):
        return NodeBinaries.in_directory(directory, directory)
    return NodeBinaries.in_directory(directory, _run_build(COREDNS_BUILD_SCRIPT, [], progress))


def find_binaries(progress: Callable[[str], None]) -> ControlPlaneBinaries:
    """The cached binaries, built first if this pin has never been built on this machine."""
    return ControlPlaneBinaries.in_directory(_built_directory(progress, node=False))


def _built_directory(progress: Callable[[str], None], *, node: bool) -> Path:
    configured = os.environ.get(ENV_DIR)
    if configured:
        return Path(configured)
    if not BUILD_SCRIPT.exists():
        raise BinariesError(
            f"no control plane binaries: set {ENV_DIR} to a directory holding etcd and "
            "kube-apiserver, or run from a clone of the repository (hack/controlplane)"
        )
    return _run_build(BUILD_SCRIPT, ["--node"] if node else [], progress)


def _run_build(script: Path, args: list[str], progress: Callable[[str], None]) -> Path:
    proc = subprocess.Popen(
        ["bash", str(script), *args],
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
            f"building failed (exit {proc.returncode}); run `bash {script} {' '.join(args)}` "
            "to see the Go error"
        )
    return Path(out[-1])
