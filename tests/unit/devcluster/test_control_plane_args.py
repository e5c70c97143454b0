"""The control plane's command lines (devcluster/control_plane_args.py): the two shapes of one
control plane, on loopback with RBAC alone, and on a node's bridge with the Node authorizer
and the workload controllers."""

from __future__ import annotations

from pathlib import Path

from tiny_harness.devcluster.certs import pki_paths
from tiny_harness.devcluster.control_plane_args import (
    apiserver_args,
    controller_manager_args,
    etcd_args,
)
from tiny_harness.devcluster.network import NodeNetwork

DATA = Path("/data")
PKI = pki_paths(DATA / "pki")


def flag(argv: list[str], name: str) -> str:
    (value,) = [a.split("=", 1)[1] for a in argv if a.startswith(f"--{name}=")]
    return value


def test_without_a_node_the_api_server_binds_loopback_with_rbac_alone() -> None:
    argv = apiserver_args(
        Path("/bin/kube-apiserver"),
        DATA,
        PKI,
        host="127.0.0.1",
        port=6443,
        etcd_port=2379,
        network=None,
    )
    assert argv[0] == "/bin/kube-apiserver"
    assert flag(argv, "bind-address") == "127.0.0.1"
    assert flag(argv, "secure-port") == "6443"
    assert flag(argv, "etcd-servers") == "http://127.0.0.1:2379"
    assert flag(argv, "authorization-mode") == "RBAC"
    assert flag(argv, "endpoint-reconciler-type") == "none"
    assert flag(argv, "client-ca-file") == str(PKI.ca_cert)


def test_with_a_node_the_api_server_binds_the_bridge_and_the_node_authorizer_joins() -> None:
    network = NodeNetwork()
    argv = apiserver_args(
        Path("/bin/kube-apiserver"),
        DATA,
        PKI,
        host=network.host_ip,
        port=6443,
        etcd_port=2379,
        network=network,
    )
    assert flag(argv, "bind-address") == "10.213.0.1"
    assert flag(argv, "authorization-mode") == "Node,RBAC"
    assert flag(argv, "service-cluster-ip-range") == "10.214.0.0/24"
    assert flag(argv, "endpoint-reconciler-type") == "lease"
    assert flag(argv, "kubelet-preferred-address-types") == "InternalIP"


def test_the_controllers_are_the_garbage_collectors_and_with_a_node_the_workloads_too() -> None:
    kubeconfig = DATA / "kubeconfig"
    alone = controller_manager_args(Path("/bin/kcm"), kubeconfig, PKI, None)
    assert flag(alone, "controllers") == "garbagecollector,namespace,clusterrole-aggregation"
    assert flag(alone, "kubeconfig") == str(kubeconfig)
    assert flag(alone, "leader-elect") == "false"
    with_node = controller_manager_args(Path("/bin/kcm"), kubeconfig, PKI, NodeNetwork())
    controllers = flag(with_node, "controllers").split(",")
    assert controllers[:3] == ["garbagecollector", "namespace", "clusterrole-aggregation"]
    assert {"deployment", "replicaset", "serviceaccount-token", "nodelifecycle"} <= set(controllers)
    assert flag(with_node, "cluster-cidr") == "10.213.0.0/24"


def test_only_a_throwaway_etcd_skips_fsync() -> None:
    throwaway = etcd_args(Path("/bin/etcd"), DATA, 2379, 2380, persistent=False)
    kept = etcd_args(Path("/bin/etcd"), DATA, 2379, 2380, persistent=True)
    assert "--unsafe-no-fsync" in throwaway
    assert "--unsafe-no-fsync" not in kept
    assert flag(kept, "data-dir") == "/data/etcd"
    assert flag(kept, "listen-client-urls") == "http://127.0.0.1:2379"
