"""One real node for the local control plane: containerd with runc, the CNI bridge plugins, a
kubelet, kube-proxy and kube-scheduler, so that Deployments become pods that run.

It exists so that the chart's pods are seen running somewhere that needs no Docker engine and
no download: containerd and runc are the machine's packages, the Kubernetes binaries are built
from the same pin as the control plane, the sandbox image is written from a locally built
pause binary, and the tiny-harness image comes as an OCI archive (``hack/image/build.sh``)
loaded with :meth:`LocalNode.load_image`. Every address is on the bridge of
:mod:`tiny_harness.devcluster.network` or on loopback.

Everything the node makes lives under its data directory (containerd's root and state, the
kubelet's root, pod logs, the network namespaces) except what the kernel keeps globally: the
bridge, kube-proxy's iptables chains and the kubelet's ``kubepods`` cgroups. :meth:`stop`
removes those too, after killing every container, so a stopped node leaves nothing running.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import yaml

from tiny_harness.devcluster import network as net
from tiny_harness.devcluster.admin_http import AdminHttp
from tiny_harness.devcluster.binaries import NodeBinaries
from tiny_harness.devcluster.certs import Pki, ensure_node_client
from tiny_harness.devcluster.pause_image import pause_image_name, write_pause_archive
from tiny_harness.devcluster.processes import spawn, stop_processes, tail

NODE_NAME = "tiny-harness-node"
_CGROUP_ROOT = Path("/sys/fs/cgroup")


class NodeError(RuntimeError):
    """The node did not come up; the message says which part and where its log is."""


def free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class LocalNode:
    """The node's processes. Started by :class:`~tiny_harness.devcluster.LocalCluster` after
    its API server (which it reaches at ``server``) and stopped before it."""

    def __init__(
        self,
        data_dir: Path,
        *,
        network: net.NodeNetwork,
        binaries: NodeBinaries,
        pki: Pki,
        server: str,
        admin: AdminHttp,
        admin_kubeconfig: Path,
        progress: Callable[[str], None],
    ) -> None:
        self._dir = data_dir
        self.network = network
        self._binaries = binaries
        self._pki = pki
        self._server = server
        self._admin = admin
        self._admin_kubeconfig = admin_kubeconfig
        self._progress = progress
        self._procs: list[subprocess.Popen[bytes]] = []
        self._names: list[str] = []
        self._logs: list[IO[bytes]] = []

    @property
    def containerd_socket(self) -> Path:
        return self._dir / "containerd" / "containerd.sock"

    # -- start ----------------------------------------------------------------------------

    def start(self, ready_timeout: float = 120.0) -> None:
        self._dir.mkdir(parents=True, exist_ok=True)
        self._start_containerd()
        pause = write_pause_archive(self._binaries.pause, self._dir / "pause.oci.tar")
        self.load_image(self._dir / "pause.oci.tar")
        self._progress(f"node: sandbox image {pause} loaded")
        self._start_kube_proxy()
        self._start_coredns()
        self._start_kubelet()
        self._start_scheduler()
        self._wait_node_ready(ready_timeout)

    def load_image(self, archive: Path) -> list[str]:
        """Import an OCI (or Docker) archive into the node's image store; return its names."""
        proc = subprocess.run(
            [*self._ctr(), "images", "import", str(archive)],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise NodeError(f"importing {archive} failed: {proc.stderr.strip()}")
        names = [
            line.split()[1]
            for line in proc.stdout.splitlines()
            if line.startswith("unpacking ") and len(line.split()) > 1
        ]
        return names

    def _ctr(self) -> list[str]:
        return [str(self._binaries.ctr), "--address", str(self.containerd_socket), "-n", "k8s.io"]

    def _spawn(self, name: str, argv: list[str]) -> None:
        self._procs.append(spawn(self._dir, name, argv, self._logs))
        self._names.append(name)

    def _start_containerd(self) -> None:
        root = self._dir / "containerd"
        conf_dir = self._dir / "cni" / "net.d"
        net.bring_up(self.network, conf_dir, self._dir / "cni" / "ipam")
        pause_name = pause_image_name(self._binaries.pause)
        cri = '[plugins."io.containerd.grpc.v1.cri"]'
        config = f"""version = 2
root = "{root / "root"}"
state = "{root / "state"}"
[grpc]
  address = "{self.containerd_socket}"
[ttrpc]
  address = "{self.containerd_socket}.ttrpc"
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "{root / "opt"}"
{cri}
  sandbox_image = "{pause_name}"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  # Clamp every container's OOM score to containerd's own: lowering a score (the sandbox's
  # -998) needs CAP_SYS_RESOURCE, which a container or VM running the node may not have.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{self._binaries.cni_dir}"
    conf_dir = "{conf_dir}"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = ""
"""
        root.mkdir(parents=True, exist_ok=True)
        (root / "config.toml").write_text(config)
        self._spawn(
            "containerd", [str(self._binaries.containerd), "--config", str(root / "config.toml")]
        )
        deadline = time.monotonic() + 30
        while not self._containerd_answers():
            self._check_alive()
            if time.monotonic() > deadline:
                raise NodeError(
                    f"containerd did not answer within 30s; see {self._log('containerd')}"
                )
            time.sleep(0.1)

    def _containerd_answers(self) -> bool:
        if not self.containerd_socket.exists():
            return False
        proc = subprocess.run([*self._ctr(), "version"], capture_output=True)
        return proc.returncode == 0

    def _start_kubelet(self) -> None:
        kubelet_dir = self._dir / "kubelet"
        kubelet_dir.mkdir(parents=True, exist_ok=True)
        cert, key = ensure_node_client(self._pki, NODE_NAME)
        kubeconfig = kubelet_dir / "kubeconfig"
        _write_kubeconfig(kubeconfig, self._server, self._pki.ca_cert, cert, key, "kubelet")
        self.kubelet_port = free_port(self.network.host_ip)
        config: dict[str, Any] = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "address": self.network.host_ip,
            "port": self.kubelet_port,
            "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1",
            "healthzPort": free_port("127.0.0.1"),
            "authentication": {
                "anonymous": {"enabled": False},
                "webhook": {"enabled": False},
                "x509": {"clientCAFile": str(self._pki.ca_cert)},
            },
            # The API server is the kubelet's only client (logs, exec, port-forward), with the
            # admin's certificate.
            "authorization": {"mode": "AlwaysAllow"},
            "cgroupDriver": "cgroupfs",
            "failCgroupV1": False,
            "failSwapOn": False,
            "containerRuntimeEndpoint": f"unix://{self.containerd_socket}",
            "podLogsDir": str(self._dir / "pod-logs"),
            # The cluster's names from CoreDNS on the bridge; no pod learns the machine's
            # resolvers, and nothing outside the cluster resolves.
            "clusterDNS": [self.network.host_ip],
            "clusterDomain": "cluster.local",
            "resolvConf": "",
            # A shared developer disk is often fuller than a real node's: evict only when it
            # is nearly full, and never collect images (nothing could pull them back).
            "evictionHard": {
                "memory.available": "100Mi",
                "nodefs.available": "1%",
                "nodefs.inodesFree": "1%",
                "imagefs.available": "1%",
            },
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "serializeImagePulls": False,
            "registerNode": True,
            "rotateCertificates": False,
            "serverTLSBootstrap": False,
        }
        (kubelet_dir / "config.yaml").write_text(yaml.safe_dump(config))
        self._spawn(
            "kubelet",
            [
                str(self._binaries.kubelet),
                f"--config={kubelet_dir / 'config.yaml'}",
                f"--kubeconfig={kubeconfig}",
                f"--root-dir={kubelet_dir / 'root'}",
                f"--cert-dir={kubelet_dir / 'pki'}",
                f"--hostname-override={NODE_NAME}",
                f"--node-ip={self.network.host_ip}",
                "--v=0",
            ],
        )

    def _start_kube_proxy(self) -> None:
        self._spawn(
            "kube-proxy",
            [
                str(self._binaries.kube_proxy),
                f"--kubeconfig={self._admin_kubeconfig}",
                f"--hostname-override={NODE_NAME}",
                "--proxy-mode=iptables",
                f"--cluster-cidr={self.network.pod_cidr}",
                # NodePorts on the bridge address only: never the machine's own interfaces,
                # and not loopback (which would need route_localnet set machine-wide).
                f"--nodeport-addresses={self.network.pod_cidr}",
                "--iptables-localhost-nodeports=false",
                # 0: leave the machine's conntrack settings as they are.
                "--conntrack-max-per-core=0",
                "--conntrack-tcp-timeout-established=0",
                "--conntrack-tcp-timeout-close-wait=0",
                f"--metrics-bind-address=127.0.0.1:{free_port('127.0.0.1')}",
                f"--healthz-bind-address=127.0.0.1:{free_port('127.0.0.1')}",
                "--v=0",
            ],
        )

    def _start_coredns(self) -> None:
        """CoreDNS on the bridge address: the Service names pods use (``kubernetes.default.svc``
        above all, which kopf's in-cluster login dials), and no forwarding of any other name."""
        ready = free_port("127.0.0.1")
        corefile = self._dir / "Corefile"
        corefile.write_text(
            f""".:53 {{
    bind {self.network.host_ip}
    ready 127.0.0.1:{ready}
    errors
    kubernetes cluster.local in-addr.arpa ip6.arpa {{
        kubeconfig {self._admin_kubeconfig} tiny-harness
        pods insecure
    }}
}}
"""
        )
        self._spawn("coredns", [str(self._binaries.coredns), "-conf", str(corefile)])
        self._coredns_ready = f"http://127.0.0.1:{ready}/ready"

    def _start_scheduler(self) -> None:
        self._spawn(
            "kube-scheduler",
            [
                str(self._binaries.kube_scheduler),
                f"--kubeconfig={self._admin_kubeconfig}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={free_port('127.0.0.1')}",
                "--v=0",
            ],
        )

    def _wait_node_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last = "not registered"
        while time.monotonic() < deadline:
            self._check_alive()
            resp = self._admin.request("GET", f"/api/v1/nodes/{NODE_NAME}")
            if resp.status == 200:
                conditions = resp.json().get("status", {}).get("conditions") or []
                ready = [c for c in conditions if c.get("type") == "Ready"]
                taints = [t["key"] for t in resp.json().get("spec", {}).get("taints") or []]
                if ready and ready[0].get("status") == "True" and not taints:
                    if self._dns_ready():
                        self._progress(f"node: {NODE_NAME} Ready, cluster DNS ready")
                        return
                    last = "the node is Ready; CoreDNS has not synced yet"
                if ready:
                    last = f"{ready[0].get('reason')}: {ready[0].get('message')}; taints {taints}"
            time.sleep(0.5)
        raise NodeError(
            f"the node was not Ready within {timeout:.0f}s (last: {last}); "
            f"see {self._log('kubelet')} and {self._log('containerd')}"
        )

    def _dns_ready(self) -> bool:
        try:
            with urllib.request.urlopen(self._coredns_ready, timeout=2) as resp:
                return bool(resp.status == 200)
        except OSError:
            return False

    def _check_alive(self) -> None:
        for proc, name in zip(self._procs, self._names, strict=True):
            if proc.poll() is not None:
                raise NodeError(
                    f"{name} exited with code {proc.returncode}; its log is "
                    f"{self._log(name)}:\n{tail(self._log(name))}"
                )

    def _log(self, name: str) -> Path:
        return self._dir / f"{name}.log"

    # -- stop -----------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop the node and remove all it made; safe to call on a half-started node."""
        by_name = dict(zip(self._names, self._procs, strict=True))
        stop_processes([p for n, p in by_name.items() if n != "containerd"])
        _kill_cgroup_tree("kubepods")
        if "containerd" in by_name and by_name["containerd"].poll() is None:
            self._remove_containers()
            stop_processes([by_name["containerd"]])
        _kill_matching(str(self.containerd_socket))
        self._procs.clear()
        self._names.clear()
        for log in self._logs:
            log.close()
        self._logs.clear()
        with contextlib.suppress(OSError):
            subprocess.run(
                [str(self._binaries.kube_proxy), "--cleanup", "--proxy-mode=iptables"],
                capture_output=True,
                timeout=60,
            )
        _remove_kubelet_chains()
        _unmount_under(self._dir)
        net.tear_down(self.network)
        _remove_cgroup_tree("kubepods")

    def _remove_containers(self) -> None:
        listed = subprocess.run([*self._ctr(), "containers", "ls", "-q"], capture_output=True)
        for cid in listed.stdout.decode().split():
            subprocess.run(
                [*self._ctr(), "tasks", "kill", "-s", "SIGKILL", cid], capture_output=True
            )
            subprocess.run([*self._ctr(), "tasks", "delete", "-f", cid], capture_output=True)
            subprocess.run([*self._ctr(), "containers", "delete", cid], capture_output=True)


def reap_node_leftovers(data_dir: Path, network: net.NodeNetwork) -> None:
    """What a node on ``data_dir`` left when its launcher was killed: shims and containers,
    mounts, the bridge."""
    _kill_matching(str(data_dir / "containerd" / "containerd.sock"))
    _kill_cgroup_tree("kubepods")
    _unmount_under(data_dir)
    with contextlib.suppress(net.NetworkError):
        net.tear_down(network)
    _remove_cgroup_tree("kubepods")


def _write_kubeconfig(path: Path, server: str, ca: Path, cert: Path, key: Path, user: str) -> None:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "local", "cluster": {"server": server, "certificate-authority": str(ca)}}
        ],
        "users": [
            {"name": user, "user": {"client-certificate": str(cert), "client-key": str(key)}}
        ],
        "contexts": [{"name": "local", "context": {"cluster": "local", "user": user}}],
        "current-context": "local",
    }
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        yaml.safe_dump(config, f)


def _remove_kubelet_chains() -> None:
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


def _kill_matching(needle: str) -> None:
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


def _kill_cgroup_tree(name: str) -> None:
    """SIGKILL every process in the kubelet's cgroup tree (every pod's containers), by pid."""
    tree = _CGROUP_ROOT / "pids" / name
    if not tree.exists():
        return
    for procs in tree.rglob("cgroup.procs"):
        with contextlib.suppress(OSError):
            for pid in procs.read_text().split():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)


def _remove_cgroup_tree(name: str) -> None:
    for hierarchy in _CGROUP_ROOT.iterdir():
        tree = hierarchy / name
        if not tree.is_dir():
            continue
        dirs = sorted((p for p in tree.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts))
        for d in [*dirs, tree]:
            with contextlib.suppress(OSError):
                d.rmdir()


def _unmount_under(directory: Path) -> None:
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
