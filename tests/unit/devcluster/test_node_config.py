"""The node's configuration (devcluster/node_config.py): every address on the bridge or on
loopback, nothing pulled or collected, nothing of the machine's own settings changed."""

from __future__ import annotations

from pathlib import Path

from tiny_harness.devcluster.network import NodeNetwork
from tiny_harness.devcluster.node_config import (
    NODE_NAME,
    containerd_config,
    corefile,
    kube_proxy_args,
    kubelet_args,
    kubelet_config,
)

NETWORK = NodeNetwork()


def test_containerd_keeps_everything_under_its_root_and_never_pulls_the_sandbox() -> None:
    root = Path("/data/node/containerd")
    text = containerd_config(
        root,
        root / "containerd.sock",
        pause_image="localhost/pause:abc",
        cni_bin_dir=Path("/usr/lib/cni"),
        cni_conf_dir=Path("/data/node/cni/net.d"),
    )
    assert 'root = "/data/node/containerd/root"' in text
    assert 'address = "/data/node/containerd/containerd.sock"' in text
    assert 'sandbox_image = "localhost/pause:abc"' in text
    assert "restrict_oom_score_adj = true" in text
    assert 'conf_dir = "/data/node/cni/net.d"' in text


def test_the_kubelet_serves_on_the_bridge_and_never_collects_images() -> None:
    config = kubelet_config(
        NETWORK,
        port=10250,
        healthz_port=10248,
        client_ca=Path("/pki/ca.crt"),
        containerd_socket=Path("/c.sock"),
        pod_logs=Path("/logs"),
    )
    assert config["address"] == "10.213.0.1"
    assert config["healthzBindAddress"] == "127.0.0.1"
    assert config["clusterDNS"] == ["10.213.0.1"]
    assert config["resolvConf"] == ""
    assert config["imageGCHighThresholdPercent"] == 100
    assert config["containerRuntimeEndpoint"] == "unix:///c.sock"
    argv = kubelet_args(Path("/bin/kubelet"), Path("/k"), NETWORK)
    assert f"--hostname-override={NODE_NAME}" in argv
    assert "--kubeconfig=/k/kubeconfig" in argv
    assert "--node-ip=10.213.0.1" in argv


def test_node_ports_are_on_the_bridge_alone_and_conntrack_is_left_as_it_is() -> None:
    argv = kube_proxy_args(
        Path("/bin/kube-proxy"), Path("/admin"), NETWORK, metrics_port=1, healthz_port=2
    )
    assert "--nodeport-addresses=10.213.0.0/24" in argv
    assert "--iptables-localhost-nodeports=false" in argv
    assert "--conntrack-max-per-core=0" in argv
    assert "--metrics-bind-address=127.0.0.1:1" in argv


def test_coredns_answers_the_clusters_names_on_the_bridge_and_forwards_nothing() -> None:
    text = corefile(NETWORK, Path("/admin"), ready_port=8181)
    assert "bind 10.213.0.1" in text
    assert "ready 127.0.0.1:8181" in text
    assert "kubeconfig /admin tiny-harness" in text
    assert "forward" not in text
