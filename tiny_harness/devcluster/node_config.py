"""How the node's parts are configured: containerd's config, the kubelet's configuration and
flags, CoreDNS's Corefile, kube-proxy's and kube-scheduler's flags, as plain functions of where
the node lives.

Each setting here is a decision about a node on a developer's machine rather than a real one:
every address on the node's bridge or on loopback, nothing pulled (the sandbox image is loaded,
images are never collected), nothing of the machine's own configuration changed (its
resolvers, its conntrack settings, its interfaces' NodePorts), and no capability asked that a
container or VM running the node may lack.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tiny_harness.devcluster import network as net
from tiny_harness.devcluster.kubeconfig import CONTEXT

#: The node's name, as it registers (its kubelet's client certificate says the same).
NODE_NAME = "tiny-harness-node"


def containerd_config(
    root: Path, socket: Path, *, pause_image: str, cni_bin_dir: Path, cni_conf_dir: Path
) -> str:
    """containerd's ``config.toml``: its root, state and socket under ``root``, the CRI plugin
    with runc, overlayfs and the CNI plugins, and ``pause_image`` as every pod's sandbox."""
    cri = '[plugins."io.containerd.grpc.v1.cri"]'
    return f"""version = 2
root = "{root / "root"}"
state = "{root / "state"}"
[grpc]
  address = "{socket}"
[ttrpc]
  address = "{socket}.ttrpc"
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "{root / "opt"}"
{cri}
  sandbox_image = "{pause_image}"
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
    bin_dir = "{cni_bin_dir}"
    conf_dir = "{cni_conf_dir}"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = ""
"""


def kubelet_config(
    network: net.NodeNetwork,
    *,
    port: int,
    healthz_port: int,
    client_ca: Path,
    containerd_socket: Path,
    pod_logs: Path,
) -> dict[str, Any]:
    """The kubelet's ``KubeletConfiguration``: serving on the bridge address, the API server
    its only client, the cluster's DNS on the bridge, eviction only on a nearly full disk."""
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": network.host_ip,
        "port": port,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": healthz_port,
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": False},
            "x509": {"clientCAFile": str(client_ca)},
        },
        # The API server is the kubelet's only client (logs, exec, port-forward), with the
        # admin's certificate.
        "authorization": {"mode": "AlwaysAllow"},
        "cgroupDriver": "cgroupfs",
        "failCgroupV1": False,
        "failSwapOn": False,
        "containerRuntimeEndpoint": f"unix://{containerd_socket}",
        "podLogsDir": str(pod_logs),
        # The cluster's names from CoreDNS on the bridge; no pod learns the machine's
        # resolvers, and nothing outside the cluster resolves.
        "clusterDNS": [network.host_ip],
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


def kubelet_args(kubelet: Path, kubelet_dir: Path, network: net.NodeNetwork) -> list[str]:
    """The kubelet, its configuration, kubeconfig, root and certificates under
    ``kubelet_dir``, registered as :data:`NODE_NAME` at the bridge address."""
    return [
        str(kubelet),
        f"--config={kubelet_dir / 'config.yaml'}",
        f"--kubeconfig={kubelet_dir / 'kubeconfig'}",
        f"--root-dir={kubelet_dir / 'root'}",
        f"--cert-dir={kubelet_dir / 'pki'}",
        f"--hostname-override={NODE_NAME}",
        f"--node-ip={network.host_ip}",
        "--v=0",
    ]


def kube_proxy_args(
    kube_proxy: Path,
    admin_kubeconfig: Path,
    network: net.NodeNetwork,
    *,
    metrics_port: int,
    healthz_port: int,
) -> list[str]:
    """kube-proxy in iptables mode, its NodePorts on the bridge alone."""
    return [
        str(kube_proxy),
        f"--kubeconfig={admin_kubeconfig}",
        f"--hostname-override={NODE_NAME}",
        "--proxy-mode=iptables",
        f"--cluster-cidr={network.pod_cidr}",
        # NodePorts on the bridge address only: never the machine's own interfaces,
        # and not loopback (which would need route_localnet set machine-wide).
        f"--nodeport-addresses={network.pod_cidr}",
        "--iptables-localhost-nodeports=false",
        # 0: leave the machine's conntrack settings as they are.
        "--conntrack-max-per-core=0",
        "--conntrack-tcp-timeout-established=0",
        "--conntrack-tcp-timeout-close-wait=0",
        f"--metrics-bind-address=127.0.0.1:{metrics_port}",
        f"--healthz-bind-address=127.0.0.1:{healthz_port}",
        "--v=0",
    ]


def corefile(network: net.NodeNetwork, admin_kubeconfig: Path, *, ready_port: int) -> str:
    """CoreDNS on the bridge address: the Service names pods use (``kubernetes.default.svc``
    above all, which kopf's in-cluster login dials), and no forwarding of any other name."""
    return f""".:53 {{
    bind {network.host_ip}
    ready 127.0.0.1:{ready_port}
    errors
    kubernetes cluster.local in-addr.arpa ip6.arpa {{
        kubeconfig {admin_kubeconfig} {CONTEXT}
        pods insecure
    }}
}}
"""


def scheduler_args(kube_scheduler: Path, admin_kubeconfig: Path, *, port: int) -> list[str]:
    """kube-scheduler as the admin, alone (no leader election), on loopback."""
    return [
        str(kube_scheduler),
        f"--kubeconfig={admin_kubeconfig}",
        "--leader-elect=false",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        "--v=0",
    ]
