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
removes those too (:mod:`~tiny_harness.devcluster.node_cleanup`), after killing every container,
so a stopped node leaves nothing running. How each part is configured is
:mod:`~tiny_harness.devcluster.node_config`'s; this module starts them in order and waits for
the node to be Ready.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import IO

import yaml

from tiny_harness.devcluster import network as net
from tiny_harness.devcluster.admin_http import AdminHttp
from tiny_harness.devcluster.binaries import NodeBinaries
from tiny_harness.devcluster.certs import Pki, ensure_node_client
from tiny_harness.devcluster.failures import NodeError
from tiny_harness.devcluster.kubeconfig import write_client_kubeconfig
from tiny_harness.devcluster.node_cleanup import (
    kill_cgroup_tree,
    kill_matching,
    remove_cgroup_tree,
    remove_kubelet_chains,
    unmount_under,
)
from tiny_harness.devcluster.node_config import (
    NODE_NAME,
    containerd_config,
    corefile,
    kube_proxy_args,
    kubelet_args,
    kubelet_config,
    scheduler_args,
)
from tiny_harness.devcluster.pause_image import pause_image_name, write_pause_archive
from tiny_harness.devcluster.processes import free_port, spawn, stop_processes, tail


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
        config = containerd_config(
            root,
            self.containerd_socket,
            pause_image=pause_image_name(self._binaries.pause),
            cni_bin_dir=self._binaries.cni_dir,
            cni_conf_dir=conf_dir,
        )
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
        write_client_kubeconfig(
            kubelet_dir / "kubeconfig", self._server, self._pki.ca_cert, cert, key, "kubelet"
        )
        self.kubelet_port = free_port(self.network.host_ip)
        config = kubelet_config(
            self.network,
            port=self.kubelet_port,
            healthz_port=free_port(),
            client_ca=self._pki.ca_cert,
            containerd_socket=self.containerd_socket,
            pod_logs=self._dir / "pod-logs",
        )
        (kubelet_dir / "config.yaml").write_text(yaml.safe_dump(config))
        self._spawn("kubelet", kubelet_args(self._binaries.kubelet, kubelet_dir, self.network))

    def _start_kube_proxy(self) -> None:
        argv = kube_proxy_args(
            self._binaries.kube_proxy,
            self._admin_kubeconfig,
            self.network,
            metrics_port=free_port(),
            healthz_port=free_port(),
        )
        self._spawn("kube-proxy", argv)

    def _start_coredns(self) -> None:
        """CoreDNS on the bridge address, the cluster's names only (``node_config.corefile``)."""
        ready = free_port()
        path = self._dir / "Corefile"
        path.write_text(corefile(self.network, self._admin_kubeconfig, ready_port=ready))
        self._spawn("coredns", [str(self._binaries.coredns), "-conf", str(path)])
        self._coredns_ready = f"http://127.0.0.1:{ready}/ready"

    def _start_scheduler(self) -> None:
        argv = scheduler_args(
            self._binaries.kube_scheduler, self._admin_kubeconfig, port=free_port()
        )
        self._spawn("kube-scheduler", argv)

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
        kill_cgroup_tree("kubepods")
        if "containerd" in by_name and by_name["containerd"].poll() is None:
            self._remove_containers()
            stop_processes([by_name["containerd"]])
        kill_matching(str(self.containerd_socket))
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
        remove_kubelet_chains()
        unmount_under(self._dir)
        net.tear_down(self.network)
        remove_cgroup_tree("kubepods")

    def _remove_containers(self) -> None:
        listed = subprocess.run([*self._ctr(), "containers", "ls", "-q"], capture_output=True)
        for cid in listed.stdout.decode().split():
            subprocess.run(
                [*self._ctr(), "tasks", "kill", "-s", "SIGKILL", cid], capture_output=True
            )
            subprocess.run([*self._ctr(), "tasks", "delete", "-f", cid], capture_output=True)
            subprocess.run([*self._ctr(), "containers", "delete", cid], capture_output=True)
