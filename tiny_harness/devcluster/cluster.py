"""Start and stop a local control plane (etcd, kube-apiserver with RBAC on, and
kube-controller-manager running only the garbage-collector, namespace and ClusterRole
aggregation controllers), and hand out a kubeconfig.

The controller manager is there so that what a real cluster does with owner references and
namespaces happens here too: deleting a task deletes its messages, turn records and children,
and deleting a namespace empties it; and a role the chart aggregates into ``edit`` and ``admin``
(its roles for people) is granted as on a real cluster. Nothing else of a cluster
(scheduling, pods, service account tokens) is needed by the harness, so no other controller
runs.

With ``node=`` it is a one-node cluster instead (:mod:`tiny_harness.devcluster.node`): the API
server moves from loopback to the node's bridge address (where pods reach it, through the
``kubernetes`` Service that kube-proxy routes), the Node authorizer joins RBAC, and the controller
manager also runs the workload controllers: Deployments, ReplicaSets, EndpointSlices, service
accounts, their tokens and the root CA ConfigMap that every pod's token volume mounts.

The same idea as controller-runtime's envtest, without downloads: the binaries come from
:mod:`tiny_harness.devcluster.binaries`. Every child process is tied to the launcher with
``PR_SET_PDEATHSIG`` and recorded in a pid file (:mod:`tiny_harness.devcluster.processes`), so
an interrupted test run or a killed ``make run`` leaves nothing behind.

This module is the order of a start and a stop; the parts are elsewhere: the processes' command
lines in :mod:`~tiny_harness.devcluster.control_plane_args`, the key material in
:mod:`~tiny_harness.devcluster.certs`, the kubeconfig in
:mod:`~tiny_harness.devcluster.kubeconfig`, the CRDs and admission policies in
:mod:`~tiny_harness.devcluster.apply`.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from tiny_harness.devcluster import network as net
from tiny_harness.devcluster.admin_http import AdminHttp
from tiny_harness.devcluster.apply import apply_admission, apply_crds
from tiny_harness.devcluster.binaries import (
    ControlPlaneBinaries,
    NodeBinaries,
    find_binaries,
    find_node_binaries,
)
from tiny_harness.devcluster.certs import Pki, ensure_pki, ensure_serving_ips
from tiny_harness.devcluster.control_plane_args import (
    apiserver_args,
    controller_manager_args,
    etcd_args,
)
from tiny_harness.devcluster.failures import ClusterError
from tiny_harness.devcluster.kubeconfig import write_admin_kubeconfig
from tiny_harness.devcluster.node import LocalNode
from tiny_harness.devcluster.node_cleanup import reap_node_leftovers
from tiny_harness.devcluster.processes import free_port, reap_leftovers, spawn, tail


class LocalCluster:
    """A running local control plane.

    ``data_dir=None`` uses a temporary directory removed on stop (tests); a given directory
    keeps etcd's data and the key material, so tasks survive restarts (``make run``).
    """

    def __init__(
        self,
        data_dir: Path | None = None,
        *,
        crds: Path | None = None,
        admission: list[dict[str, Any]] | None = None,
        binaries: ControlPlaneBinaries | None = None,
        progress: Callable[[str], None] | None = None,
        ready_timeout: float = 90.0,
        node: net.NodeNetwork | None = None,
    ) -> None:
        self._persistent = data_dir is not None
        self._data_dir = data_dir
        self._crds = crds
        self._admission = admission or []
        self._binaries = binaries
        self._progress = progress or (lambda line: print(line, file=sys.stderr))
        self._ready_timeout = ready_timeout
        self._procs: list[subprocess.Popen[bytes]] = []
        self._logs: list[IO[bytes]] = []
        self.port = 0
        self.etcd_port = 0
        self._etcd_peer = 0
        self._network = node
        self._host = node.host_ip if node is not None else "127.0.0.1"
        self._node_binaries: NodeBinaries | None = None
        self._bridge_lock = net.BridgeLock(node) if node is not None else None
        self.node: LocalNode | None = None

    # -- public surface -------------------------------------------------------------------

    @property
    def data_dir(self) -> Path:
        if self._data_dir is None:
            raise ClusterError("the cluster has not been started")
        return self._data_dir

    @property
    def kubeconfig(self) -> Path:
        return self.data_dir / "kubeconfig"

    @property
    def server(self) -> str:
        return f"https://{self._host}:{self.port}"

    @property
    def pki(self) -> Pki:
        return ensure_pki(self.data_dir / "pki")

    def admin(self) -> AdminHttp:
        return AdminHttp(self.port, self.pki, self._host)

    def start(self) -> LocalCluster:
        binaries = self._binaries or find_binaries(self._progress)
        if self._network is not None:
            self._node_binaries = find_node_binaries(self._progress)
        if self._data_dir is None:
            self._data_dir = Path(tempfile.mkdtemp(prefix="tiny-harness-cluster-"))
        self._data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        reap_leftovers(self.data_dir)
        pki = ensure_pki(self.data_dir / "pki")
        if self._network is not None:
            self._bring_up_bridge(self._network, pki)
        try:
            self._start_etcd(binaries)
            self._start_apiserver(binaries, pki)
            self._wait_ready()
            write_admin_kubeconfig(self.kubeconfig, self.server, pki)
            if self._crds is not None:
                apply_crds(self.admin(), self._crds)
            apply_admission(self.admin(), self._admission)
            # After the CRDs: the garbage collector finds resource types when it starts and
            # then only every 30 s, and until it watches a type it deletes none of its objects.
            self._start_controller_manager(binaries)
            if self._network is not None:
                self._start_node(self._network, pki)
        except BaseException:
            self.stop()
            raise
        return self

    def _bring_up_bridge(self, network: net.NodeNetwork, pki: Pki) -> None:
        """Take the bridge (one node per bridge at a time), clear what a killed node left on
        it, and bring it up: the API server binds the bridge's address, so it comes first."""
        assert self._bridge_lock is not None
        self._bridge_lock.acquire(self._progress)
        reap_node_leftovers(self.data_dir / "node", network)
        net.bring_up(
            network,
            self.data_dir / "node" / "cni" / "net.d",
            self.data_dir / "node" / "cni" / "ipam",
        )
        ensure_serving_ips(pki, ["127.0.0.1", network.host_ip, network.kubernetes_service_ip])

    def _start_node(self, network: net.NodeNetwork, pki: Pki) -> None:
        assert self._node_binaries is not None
        self.node = LocalNode(
            self.data_dir / "node",
            network=network,
            binaries=self._node_binaries,
            pki=pki,
            server=self.server,
            admin=self.admin(),
            admin_kubeconfig=self.kubeconfig,
            progress=self._progress,
        )
        self.node.start()

    def stop(self) -> None:
        """Stop the node, the API server, then etcd; remove a temporary data directory."""
        if self.node is not None:
            self.node.stop()
            self.node = None
        elif self._network is not None and self._bridge_lock and self._bridge_lock.held:
            with contextlib.suppress(net.NetworkError):
                net.tear_down(self._network)
        for proc in reversed(self._procs):
            if proc.poll() is None:
                proc.terminate()
        deadline = time.monotonic() + 10
        for proc in reversed(self._procs):
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._procs.clear()
        for log in self._logs:
            log.close()
        self._logs.clear()
        if self._data_dir is not None:
            with contextlib.suppress(FileNotFoundError):
                (self._data_dir / "pids").unlink()
            if not self._persistent:
                shutil.rmtree(self._data_dir, ignore_errors=True)
                self._data_dir = None
        if self._bridge_lock is not None:
            self._bridge_lock.release()

    def restart(self, name: str, *, down_seconds: float = 1.0) -> None:
        """Stop ``etcd`` or ``kube-apiserver``, keep it down for ``down_seconds``, and start it
        again on the same ports, then wait until the API server is ready. For tests of what
        survives an outage: the other process, the data and every client's kubeconfig stay."""
        index = {"etcd": 0, "kube-apiserver": 1}[name]
        proc = self._procs[index]
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        time.sleep(down_seconds)
        binaries = self._binaries or find_binaries(self._progress)
        if name == "etcd":
            self._start_etcd(binaries, port=self.etcd_port, peer=self._etcd_peer)
        else:
            self._start_apiserver(binaries, self.pki, port=self.port)
        self._procs[index] = self._procs.pop()
        self._wait_ready()

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self._procs]

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- the control plane's processes ----------------------------------------------------

    def _spawn(self, name: str, argv: list[str]) -> None:
        self._procs.append(spawn(self.data_dir, name, argv, self._logs))

    def _start_etcd(self, binaries: ControlPlaneBinaries, *, port: int = 0, peer: int = 0) -> None:
        self.etcd_port = port or free_port()
        self._etcd_peer = peer or free_port()
        argv = etcd_args(
            binaries.etcd,
            self.data_dir,
            self.etcd_port,
            self._etcd_peer,
            persistent=self._persistent,
        )
        self._spawn("etcd", argv)

    def _start_apiserver(self, binaries: ControlPlaneBinaries, pki: Pki, *, port: int = 0) -> None:
        self.port = port or free_port()
        argv = apiserver_args(
            binaries.kube_apiserver,
            self.data_dir,
            pki,
            host=self._host,
            port=self.port,
            etcd_port=self.etcd_port,
            network=self._network,
        )
        self._spawn("kube-apiserver", argv)

    def _start_controller_manager(self, binaries: ControlPlaneBinaries) -> None:
        if binaries.kube_controller_manager is None:
            self._progress(
                "no kube-controller-manager beside the control plane binaries: owner references "
                "will not cascade (deleted tasks leave their messages and turn records)"
            )
            return
        argv = controller_manager_args(
            binaries.kube_controller_manager, self.kubeconfig, self.pki, self._network
        )
        self._spawn("kube-controller-manager", argv)

    def _wait_ready(self) -> None:
        admin = self.admin()
        deadline = time.monotonic() + self._ready_timeout
        last = ""
        while time.monotonic() < deadline:
            for proc, name in zip(self._procs, ("etcd", "kube-apiserver"), strict=False):
                if proc.poll() is not None:
                    log = self.data_dir / f"{name}.log"
                    raise ClusterError(
                        f"{name} exited with code {proc.returncode} during start-up; "
                        f"its log is {log}:\n{tail(log)}"
                    )
            try:
                resp = admin.request("GET", "/readyz", timeout=2)
                if resp.status == 200:
                    return
                last = resp.body.decode(errors="replace")[-400:]
            except OSError as exc:
                last = str(exc)
            time.sleep(0.1)
        raise ClusterError(
            f"kube-apiserver was not ready within {self._ready_timeout:.0f}s (last: {last}); "
            f"see {self.data_dir / 'kube-apiserver.log'}"
        )
