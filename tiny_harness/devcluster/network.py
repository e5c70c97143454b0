"""The local node's network: one Linux bridge the run creates, and nothing else.

Pods get addresses on the bridge from the CNI ``bridge`` and ``host-local`` plugins; the host
holds the bridge's first address, which is where pods reach the API server, the kubelet and
anything a test serves to them. Services are kube-proxy's iptables rules for a range that exists
nowhere but in those rules. The bridge is not a gateway anywhere: the plugin is told not to
enable IP forwarding or masquerading, and a FORWARD rule drops whatever would leave the bridge
for another interface, so a pod can reach the host and other pods and never an outside address.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import json
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

#: Names the host-local IPAM and the CNI configuration use for this network.
CNI_NETWORK = "tiny-harness"


class NetworkError(RuntimeError):
    """The bridge could not be set up; the message names the command that failed."""


@dataclass(frozen=True)
class NodeNetwork:
    """Where the node's pods and Services live. The defaults are ranges a developer machine
    rarely routes; pass others when they clash with one of its networks."""

    bridge: str = "th-node0"
    pod_cidr: str = "10.213.0.0/24"
    service_cidr: str = "10.214.0.0/24"

    @property
    def host_ip(self) -> str:
        """The host's address on the bridge: the API server, kubelet and test servers."""
        return str(next(ipaddress.ip_network(self.pod_cidr).hosts()))

    @property
    def kubernetes_service_ip(self) -> str:
        """The ClusterIP the API server gives the ``kubernetes`` Service: the range's first."""
        return str(next(ipaddress.ip_network(self.service_cidr).hosts()))

    def cni_config(self, ipam_dir: Path) -> dict[str, object]:
        return {
            "cniVersion": "0.4.0",
            "name": CNI_NETWORK,
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": self.bridge,
                    # The host is the pods' gateway for the bridge alone: no forwarding, no NAT.
                    "isGateway": False,
                    "ipMasq": False,
                    "hairpinMode": True,
                    "ipam": {
                        "type": "host-local",
                        "dataDir": str(ipam_dir),
                        "ranges": [[{"subnet": self.pod_cidr, "gateway": self.host_ip}]],
                        "routes": [{"dst": "0.0.0.0/0", "gw": self.host_ip}],
                    },
                },
                {"type": "portmap", "capabilities": {"portMappings": True}},
            ],
        }


class BridgeLock:
    """One node per bridge on a machine: two runs at once (two test sessions, ``make cluster``
    beside ``make cluster-test``) would share the bridge, its addresses and the NodePorts, so the
    second waits for the first to stop, saying so, instead of breaking both."""

    def __init__(self, network: NodeNetwork, directory: Path = Path("/run/lock")) -> None:
        self._path = directory / f"tiny-harness-{network.bridge}.lock"
        self._fd: int | None = None
        self._bridge = network.bridge

    def acquire(self, progress: Callable[[str], None]) -> None:
        self._path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            progress(f"another local node holds the bridge {self._bridge}; waiting for it to stop")
            fcntl.flock(fd, fcntl.LOCK_EX)
        self._fd = fd

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def bring_up(network: NodeNetwork, conf_dir: Path, ipam_dir: Path) -> None:
    """Create the bridge with the host's address, the drop rule, and the CNI configuration."""
    prefix = ipaddress.ip_network(network.pod_cidr).prefixlen
    if not Path(f"/sys/class/net/{network.bridge}").exists():
        _run("ip", "link", "add", network.bridge, "type", "bridge")
    with contextlib.suppress(NetworkError):  # already there from an interrupted run
        _run("ip", "addr", "add", f"{network.host_ip}/{prefix}", "dev", network.bridge)
    _run("ip", "link", "set", network.bridge, "up")
    if not _has_rule(network):
        _run("iptables", "-w", "-I", "FORWARD", *_drop_rule(network))
    conf_dir.mkdir(parents=True, exist_ok=True)
    ipam_dir.mkdir(parents=True, exist_ok=True)
    (conf_dir / "10-tiny-harness.conflist").write_text(
        json.dumps(network.cni_config(ipam_dir), indent=2)
    )


def tear_down(network: NodeNetwork) -> None:
    """Remove the bridge and the drop rule; what is already gone is not an error."""
    while _has_rule(network):
        _run("iptables", "-w", "-D", "FORWARD", *_drop_rule(network))
    if Path(f"/sys/class/net/{network.bridge}").exists():
        _run("ip", "link", "delete", network.bridge)


def _drop_rule(network: NodeNetwork) -> list[str]:
    return [
        "-i",
        network.bridge,
        "!",
        "-o",
        network.bridge,
        "-m",
        "comment",
        "--comment",
        "tiny-harness node: pods reach no outside address",
        "-j",
        "DROP",
    ]


def _has_rule(network: NodeNetwork) -> bool:
    check = ["iptables", "-w", "-C", "FORWARD", *_drop_rule(network)]
    return subprocess.run(check, capture_output=True).returncode == 0


def _run(*argv: str) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        raise NetworkError(f"`{' '.join(argv)}` failed: {proc.stderr.strip()}")
