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
``PR_SET_PDEATHSIG`` and recorded in a pid file, so an interrupted test run or a killed
``make run`` leaves nothing behind.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import yaml

from tiny_harness.devcluster import network as net
from tiny_harness.devcluster.admin_http import AdminHttp
from tiny_harness.devcluster.binaries import (
    ControlPlaneBinaries,
    NodeBinaries,
    find_binaries,
    find_node_binaries,
)
from tiny_harness.devcluster.certs import Pki, ensure_pki, ensure_serving_ips
from tiny_harness.devcluster.node import LocalNode, reap_node_leftovers

_PR_SET_PDEATHSIG = 1
_CONTEXT = "tiny-harness"
#: The controllers every local control plane runs (see the module's docstring).
_CONTROL_PLANE_CONTROLLERS = "garbagecollector,namespace,clusterrole-aggregation"


class ClusterError(RuntimeError):
    """The local control plane could not be started; the message says why and where to look."""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:
    """Runs in the child before exec: the kernel kills it when the launcher dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


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
        _reap_leftovers(self.data_dir)
        pki = ensure_pki(self.data_dir / "pki")
        if self._network is not None:
            assert self._bridge_lock is not None
            self._bridge_lock.acquire(self._progress)
            reap_node_leftovers(self.data_dir / "node", self._network)
            # The API server binds the bridge's address, so the bridge comes first.
            net.bring_up(
                self._network,
                self.data_dir / "node" / "cni" / "net.d",
                self.data_dir / "node" / "cni" / "ipam",
            )
            ensure_serving_ips(
                pki, ["127.0.0.1", self._network.host_ip, self._network.kubernetes_service_ip]
            )
        try:
            self._start_etcd(binaries)
            self._start_apiserver(binaries, pki)
            self._wait_ready()
            self._write_kubeconfig(pki)
            if self._crds is not None:
                apply_crds(self.admin(), self._crds)
            apply_admission(self.admin(), self._admission)
            # After the CRDs: the garbage collector finds resource types when it starts and
            # then only every 30 s, and until it watches a type it deletes none of its objects.
            self._start_controller_manager(binaries)
            if self._network is not None:
                assert self._node_binaries is not None
                self.node = LocalNode(
                    self.data_dir / "node",
                    network=self._network,
                    binaries=self._node_binaries,
                    pki=pki,
                    server=self.server,
                    admin=self.admin(),
                    admin_kubeconfig=self.kubeconfig,
                    progress=self._progress,
                )
                self.node.start()
        except BaseException:
            self.stop()
            raise
        return self

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

    # -- the two processes ----------------------------------------------------------------

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        log = (self.data_dir / f"{name}.log").open("ab")
        self._logs.append(log)
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent,
            cwd=self.data_dir,
        )
        self._procs.append(proc)
        with (self.data_dir / "pids").open("a") as f:
            f.write(f"{proc.pid}\n")
        return proc

    def _start_etcd(self, binaries: ControlPlaneBinaries, *, port: int = 0, peer: int = 0) -> None:
        self.etcd_port = port or _free_port()
        peer = peer or _free_port()
        self._etcd_peer = peer
        argv = [
            str(binaries.etcd),
            "--name=default",
            f"--data-dir={self.data_dir / 'etcd'}",
            f"--listen-client-urls=http://127.0.0.1:{self.etcd_port}",
            f"--advertise-client-urls=http://127.0.0.1:{self.etcd_port}",
            f"--listen-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-cluster=default=http://127.0.0.1:{peer}",
            "--log-level=warn",
        ]
        if not self._persistent:
            # A throwaway test cluster does not need its writes on disk; this is most of
            # etcd's latency on a shared machine.
            argv.append("--unsafe-no-fsync")
        self._spawn("etcd", argv)

    def _start_apiserver(self, binaries: ControlPlaneBinaries, pki: Pki, *, port: int = 0) -> None:
        self.port = port or _free_port()
        argv = [
            str(binaries.kube_apiserver),
            f"--etcd-servers=http://127.0.0.1:{self.etcd_port}",
            f"--bind-address={self._host}",
            f"--advertise-address={self._host}",
            f"--secure-port={self.port}",
            f"--cert-dir={self.data_dir / 'apiserver-certs'}",
            f"--tls-cert-file={pki.serving_cert}",
            f"--tls-private-key-file={pki.serving_key}",
            f"--client-ca-file={pki.ca_cert}",
            f"--service-account-key-file={pki.sa_pub}",
            f"--service-account-signing-key-file={pki.sa_key}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            *self._apiserver_mode_flags(pki),
            "--enable-priority-and-fairness=false",
            "--profiling=false",
            "--allow-privileged=true",
            "--v=0",
        ]
        self._spawn("kube-apiserver", argv)

    def _apiserver_mode_flags(self, pki: Pki) -> list[str]:
        if self._network is None:
            return [
                "--authorization-mode=RBAC",
                "--service-cluster-ip-range=10.0.0.0/24",
                "--endpoint-reconciler-type=none",
            ]
        return [
            "--authorization-mode=Node,RBAC",
            f"--service-cluster-ip-range={self._network.service_cidr}",
            # The `kubernetes` Service's endpoints name this API server, for pods.
            "--endpoint-reconciler-type=lease",
            # The node's name resolves nowhere; its address is on the bridge.
            "--kubelet-preferred-address-types=InternalIP",
            f"--kubelet-client-certificate={pki.admin_cert}",
            f"--kubelet-client-key={pki.admin_key}",
        ]

    def _start_controller_manager(self, binaries: ControlPlaneBinaries) -> None:
        if binaries.kube_controller_manager is None:
            self._progress(
                "no kube-controller-manager beside the control plane binaries: owner references "
                "will not cascade (deleted tasks leave their messages and turn records)"
            )
            return
        self._spawn(
            "kube-controller-manager",
            [
                str(binaries.kube_controller_manager),
                f"--kubeconfig={self.kubeconfig}",
                *self._controllers_flags(),
                "--leader-elect=false",
                "--secure-port=0",
                "--use-service-account-credentials=false",
                "--concurrent-gc-syncs=20",
                # The default client rate (20 requests/s) would take a minute to delete a
                # task of 500 turns; a real cluster's administrator sets their own.
                "--kube-api-qps=500",
                "--kube-api-burst=1000",
                "--v=0",
            ],
        )

    def _controllers_flags(self) -> list[str]:
        if self._network is None:
            return [f"--controllers={_CONTROL_PLANE_CONTROLLERS}"]
        workloads = [
            "deployment",
            "replicaset",
            "endpointslice",
            "endpointslicemirroring",
            "endpoint",
            "serviceaccount",
            "serviceaccount-token",
            "root-ca-cert-publisher",
            "podgc",
            # Lifts the not-ready taint the kubelet registers with, once the node is Ready.
            "nodelifecycle",
        ]
        return [
            f"--controllers={_CONTROL_PLANE_CONTROLLERS},{','.join(workloads)}",
            f"--root-ca-file={self.pki.ca_cert}",
            f"--service-account-private-key-file={self.pki.sa_key}",
            f"--cluster-cidr={self._network.pod_cidr}",
        ]

    def _wait_ready(self) -> None:
        admin = self.admin()
        deadline = time.monotonic() + self._ready_timeout
        last = ""
        while time.monotonic() < deadline:
            for proc, name in zip(self._procs, ("etcd", "kube-apiserver"), strict=False):
                if proc.poll() is not None:
                    raise ClusterError(
                        f"{name} exited with code {proc.returncode} during start-up; "
                        f"its log is {self.data_dir / (name + '.log')}:\n{self._tail(name)}"
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

    def _tail(self, name: str, lines: int = 20) -> str:
        try:
            text = (self.data_dir / f"{name}.log").read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def _write_kubeconfig(self, pki: Pki) -> None:
        def b64(path: Path) -> str:
            return base64.b64encode(path.read_bytes()).decode()

        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": _CONTEXT,
                    "cluster": {
                        "server": self.server,
                        "certificate-authority-data": b64(pki.ca_cert),
                    },
                }
            ],
            "users": [
                {
                    "name": "tiny-harness-admin",
                    "user": {
                        "client-certificate-data": b64(pki.admin_cert),
                        "client-key-data": b64(pki.admin_key),
                    },
                }
            ],
            "contexts": [
                {
                    "name": _CONTEXT,
                    "context": {
                        "cluster": _CONTEXT,
                        "user": "tiny-harness-admin",
                        "namespace": "default",
                    },
                }
            ],
            "current-context": _CONTEXT,
        }
        fd = os.open(self.kubeconfig, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            yaml.safe_dump(config, f)


def apply_admission(admin: AdminHttp, docs: list[dict[str, Any]]) -> None:
    """Server-side apply admission policies and their bindings (the harness's identity policy,
    ``kube/admission.py``). The API server starts enforcing a policy within a moment of the
    write; a caller that depends on it being enforced waits for a refusal."""
    for doc in docs:
        plural = {
            "ValidatingAdmissionPolicy": "validatingadmissionpolicies",
            "ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybindings",
        }[doc["kind"]]
        name = doc["metadata"]["name"]
        resp = admin.request(
            "PATCH",
            f"/apis/admissionregistration.k8s.io/v1/{plural}/{name}"
            "?fieldManager=tiny-harness&force=true",
            body=json.dumps(doc).encode(),
            content_type="application/apply-patch+yaml",
        )
        if resp.status >= 300:
            raise ClusterError(
                f"applying the {doc['kind']} {name} failed ({resp.status}): "
                f"{resp.body.decode()[:500]}"
            )


def apply_crds(admin: AdminHttp, directory: Path, timeout: float = 30.0) -> list[str]:
    """Server-side apply every CRD in ``directory`` and wait until each is established."""
    names: list[str] = []
    served: list[str] = []
    for path in sorted(directory.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if not doc:
                continue
            name = doc["metadata"]["name"]
            resp = admin.request(
                "PATCH",
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                f"{name}?fieldManager=tiny-harness&force=true",
                body=json.dumps(doc).encode(),
                content_type="application/apply-patch+yaml",
            )
            if resp.status >= 300:
                raise ClusterError(
                    f"applying {path.name} failed ({resp.status}): {resp.body.decode()[:500]}"
                )
            names.append(name)
            spec = doc["spec"]
            for version in spec["versions"]:
                served.append(f"/apis/{spec['group']}/{version['name']}/{spec['names']['plural']}")
    deadline = time.monotonic() + timeout
    for name in names:
        while not _established(admin, name):
            if time.monotonic() > deadline:
                raise ClusterError(f"the CRD {name} was not established within {timeout:.0f}s")
            time.sleep(0.05)
    # Established is not yet servable: until its storage is initialised a list gets 429.
    for url in served:
        while admin.request("GET", f"{url}?limit=1").status != 200:
            if time.monotonic() > deadline:
                raise ClusterError(f"{url} was not served within {timeout:.0f}s")
            time.sleep(0.05)
    return names


def _established(admin: AdminHttp, name: str) -> bool:
    resp = admin.request("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
    if resp.status != 200:
        return False
    conditions: list[dict[str, Any]] = (resp.json().get("status") or {}).get("conditions") or []
    for c in conditions:
        if c["type"] == "NonStructuralSchema" and c["status"] == "True":
            raise ClusterError(f"the CRD {name} is not structural: {c.get('message')}")
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


def _reap_leftovers(data_dir: Path) -> None:
    """Kill processes a previous launcher on this data directory left (it was SIGKILLed
    before the kernel could deliver the death signal, or ran under another parent)."""
    pidfile = data_dir / "pids"
    if not pidfile.exists():
        return
    for pid in _recorded(pidfile):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if str(data_dir).encode() in cmdline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    pidfile.unlink()


def _recorded(pidfile: Path) -> Iterator[int]:
    for line in pidfile.read_text().split():
        if line.isdigit():
            yield int(line)
