"""What a node leaves in the machine beyond its data directory, and how it is removed.

Most of what a node makes lives under its data directory, but the kernel keeps some of it
globally: the containers' processes in the kubelet's ``kubepods`` cgroups, containerd's shims,
the mounts (overlay root filesystems, volumes, network namespaces), the chains the kubelet adds
to iptables, and the bridge. :meth:`~tiny_harness.devcluster.node.LocalNode.stop` removes all
of it, and :func:`reap_node_leftovers` does the same at the next start for a node whose
launcher was killed, so a developer's machine is left as it was.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path

from tiny_harness.devcluster import network as net

_CGROUP_ROOT = Path("/sys/fs/cgroup")


def reap_node_leftovers(data_dir: Path, network: net.NodeNetwork) -> None:
    """What a node on ``data_dir`` left when its launcher was killed: shims and containers,
    mounts, the bridge."""
    kill_matching(str(data_dir / "containerd" / "containerd.sock"))
    kill_cgroup_tree("kubepods")
    unmount_under(data_dir)
    with contextlib.suppress(net.NetworkError):
        net.tear_down(network)
    remove_cgroup_tree("kubepods")


def remove_kubelet_chains() -> None:
    """The chains the kubelet adds to the machine's iptables and keeps after it exits (kube-proxy
    ``--cleanup`` removes kube-proxy's own): its firewall against outside packets to loopback,
    and the canaries by which it notices a flush."""
    for tool in ("iptables", "ip6tables"):
        for hook in ("INPUT", "OUTPUT"):
            while _iptables(tool, "filter", "-D", hook, "-j", "KUBE-FIREWALL"):
                pass
        for table, chain in (
            ("filter", "KUBE-FIREWALL"),
            ("filter", "KUBE-KUBELET-CANARY"),
            ("nat", "KUBE-KUBELET-CANARY"),
            ("mangle", "KUBE-KUBELET-CANARY"),
            ("mangle", "KUBE-IPTABLES-HINT"),
        ):
            _iptables(tool, table, "-F", chain)
            _iptables(tool, table, "-X", chain)


def _iptables(tool: str, table: str, *args: str) -> bool:
    proc = subprocess.run([tool, "-w", "-t", table, *args], capture_output=True)
    return proc.returncode == 0


def kill_matching(needle: str) -> None:
    """SIGKILL every process whose command line names ``needle`` (the node's containerd
    socket: its shims carry it as ``-address``), by pid."""
    mine = str(os.getpid())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or entry.name == mine:
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if needle.encode() in cmdline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry.name), signal.SIGKILL)


def kill_cgroup_tree(name: str) -> None:
    """SIGKILL every process in the kubelet's cgroup tree (every pod's containers), by pid."""
    tree = _CGROUP_ROOT / "pids" / name
    if not tree.exists():
        return
    for procs in tree.rglob("cgroup.procs"):
        with contextlib.suppress(OSError):
            for pid in procs.read_text().split():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)


def remove_cgroup_tree(name: str) -> None:
    for hierarchy in _CGROUP_ROOT.iterdir():
        tree = hierarchy / name
        if not tree.is_dir():
            continue
        dirs = sorted((p for p in tree.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts))
        for d in [*dirs, tree]:
            with contextlib.suppress(OSError):
                d.rmdir()


def unmount_under(directory: Path) -> None:
    """Unmount every mount below ``directory``, deepest first (overlay root filesystems,
    volumes, network namespaces)."""
    prefix = str(directory.resolve()) + "/"
    points: list[str] = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            point = line.split()[4].replace("\\040", " ")
            if point.startswith(prefix):
                points.append(point)
    for point in sorted(set(points), key=len, reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True)
