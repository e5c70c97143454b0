"""The command lines of the control plane's processes: etcd, kube-apiserver and
kube-controller-manager, as plain functions of where the cluster lives.

Two shapes of one control plane come out of them. Without a node, the API server binds
loopback with RBAC alone, and the controller manager runs only the garbage-collector,
namespace and ClusterRole aggregation controllers, which give the harness what a real cluster
does with owner references, namespaces and aggregated roles. With a node
(:class:`~tiny_harness.devcluster.network.NodeNetwork`), the API server binds the bridge
address with the Node authorizer beside RBAC, and the controller manager also runs the
workload controllers that turn Deployments into pods.
"""

from __future__ import annotations

from pathlib import Path

from tiny_harness.devcluster import network as net
from tiny_harness.devcluster.certs import Pki

#: The controllers every local control plane runs (see the module's docstring).
CONTROL_PLANE_CONTROLLERS = "garbagecollector,namespace,clusterrole-aggregation"
#: The controllers a cluster with a node runs besides: pods from Deployments, their Services'
#: endpoints, service accounts and their tokens, and the node's lifecycle.
WORKLOAD_CONTROLLERS = (
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
)


def etcd_args(etcd: Path, data_dir: Path, port: int, peer: int, *, persistent: bool) -> list[str]:
    """etcd on loopback, its data under ``data_dir``."""
    argv = [
        str(etcd),
        "--name=default",
        f"--data-dir={data_dir / 'etcd'}",
        f"--listen-client-urls=http://127.0.0.1:{port}",
        f"--advertise-client-urls=http://127.0.0.1:{port}",
        f"--listen-peer-urls=http://127.0.0.1:{peer}",
        f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
        f"--initial-cluster=default=http://127.0.0.1:{peer}",
        "--log-level=warn",
    ]
    if not persistent:
        # A throwaway test cluster does not need its writes on disk; this is most of
        # etcd's latency on a shared machine.
        argv.append("--unsafe-no-fsync")
    return argv


def apiserver_args(
    apiserver: Path,
    data_dir: Path,
    pki: Pki,
    *,
    host: str,
    port: int,
    etcd_port: int,
    network: net.NodeNetwork | None,
) -> list[str]:
    """kube-apiserver on ``host``, its serving certificate and service-account keys from
    ``pki``, clients authenticated by the cluster's CA."""
    return [
        str(apiserver),
        f"--etcd-servers=http://127.0.0.1:{etcd_port}",
        f"--bind-address={host}",
        f"--advertise-address={host}",
        f"--secure-port={port}",
        f"--cert-dir={data_dir / 'apiserver-certs'}",
        f"--tls-cert-file={pki.serving_cert}",
        f"--tls-private-key-file={pki.serving_key}",
        f"--client-ca-file={pki.ca_cert}",
        f"--service-account-key-file={pki.sa_pub}",
        f"--service-account-signing-key-file={pki.sa_key}",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        *_apiserver_mode_args(pki, network),
        "--enable-priority-and-fairness=false",
        "--profiling=false",
        "--allow-privileged=true",
        "--v=0",
    ]


def _apiserver_mode_args(pki: Pki, network: net.NodeNetwork | None) -> list[str]:
    if network is None:
        return [
            "--authorization-mode=RBAC",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--endpoint-reconciler-type=none",
        ]
    return [
        "--authorization-mode=Node,RBAC",
        f"--service-cluster-ip-range={network.service_cidr}",
        # The `kubernetes` Service's endpoints name this API server, for pods.
        "--endpoint-reconciler-type=lease",
        # The node's name resolves nowhere; its address is on the bridge.
        "--kubelet-preferred-address-types=InternalIP",
        f"--kubelet-client-certificate={pki.admin_cert}",
        f"--kubelet-client-key={pki.admin_key}",
    ]


def controller_manager_args(
    controller_manager: Path, kubeconfig: Path, pki: Pki, network: net.NodeNetwork | None
) -> list[str]:
    """kube-controller-manager as the admin, with the controllers this shape of cluster
    needs and no leader election (it is the only one)."""
    return [
        str(controller_manager),
        f"--kubeconfig={kubeconfig}",
        *_controllers_args(pki, network),
        "--leader-elect=false",
        "--secure-port=0",
        "--use-service-account-credentials=false",
        "--concurrent-gc-syncs=20",
        # The default client rate (20 requests/s) would take a minute to delete a
        # task of 500 turns; a real cluster's administrator sets their own.
        "--kube-api-qps=500",
        "--kube-api-burst=1000",
        "--v=0",
    ]


def _controllers_args(pki: Pki, network: net.NodeNetwork | None) -> list[str]:
    if network is None:
        return [f"--controllers={CONTROL_PLANE_CONTROLLERS}"]
    return [
        f"--controllers={CONTROL_PLANE_CONTROLLERS},{','.join(WORKLOAD_CONTROLLERS)}",
        f"--root-ca-file={pki.ca_cert}",
        f"--service-account-private-key-file={pki.sa_key}",
        f"--cluster-cidr={network.pod_cidr}",
    ]
