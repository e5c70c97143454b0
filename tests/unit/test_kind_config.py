"""``kind-config.yaml`` is read by kind, which this repository cannot run (it needs Docker), so
the file is checked against what kind's v1alpha4 API accepts and against the chart: the node's
Kubernetes minor is the control plane's, and the mapped port is one the chart's gateway can
take as its NodePort (the one the local node's tests use too)."""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

from tests.cluster.conftest import NODE_PORT
from tiny_harness.kube.crd import REPO_ROOT

#: The fields of kind's v1alpha4 Cluster, Node and PortMapping (sigs.k8s.io/kind
#: pkg/apis/config/v1alpha4/types.go); kind refuses a file with any other.
CLUSTER_FIELDS = {
    "kind", "apiVersion", "name", "featureGates", "runtimeConfig", "networking", "nodes",
    "kubeadmConfigPatches", "kubeadmConfigPatchesJSON6902", "containerdConfigPatches",
    "containerdConfigPatchesJSON6902",
}  # fmt: skip
NODE_FIELDS = {
    "role", "image", "labels", "extraMounts", "extraPortMappings", "kubeadmConfigPatches",
    "kubeadmConfigPatchesJSON6902",
}  # fmt: skip
PORT_MAPPING_FIELDS = {"containerPort", "hostPort", "listenAddress", "protocol"}


def kind_config() -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load((REPO_ROOT / "kind-config.yaml").read_text())
    return config


def test_kind_config_is_a_v1alpha4_cluster_kind_accepts() -> None:
    config = kind_config()
    assert config["kind"] == "Cluster"
    assert config["apiVersion"] == "kind.x-k8s.io/v1alpha4"
    assert set(config) <= CLUSTER_FIELDS
    for node in config["nodes"]:
        assert set(node) <= NODE_FIELDS
        assert node["role"] in {"control-plane", "worker"}
        for mapping in node.get("extraPortMappings", []):
            assert set(mapping) <= PORT_MAPPING_FIELDS
            assert mapping.get("protocol", "TCP") in {"TCP", "UDP", "SCTP"}


def test_kind_nodes_run_the_control_planes_kubernetes_minor() -> None:
    go_mod = (REPO_ROOT / "hack" / "controlplane" / "go.mod").read_text()
    pinned = re.search(r"^require k8s\.io/kubernetes v1\.(\d+)\.", go_mod, re.M)
    assert pinned is not None
    for node in kind_config()["nodes"]:
        image = re.fullmatch(r"kindest/node:v1\.(\d+)\.\d+", node["image"])
        assert image is not None, node["image"]
        assert image.group(1) == pinned.group(1)


def test_kind_maps_the_gateways_node_port_to_loopback() -> None:
    (control_plane,) = [n for n in kind_config()["nodes"] if n["role"] == "control-plane"]
    (mapping,) = control_plane["extraPortMappings"]
    schema = json.loads((REPO_ROOT / "charts/tiny-harness/values.schema.json").read_text())
    node_port = schema["properties"]["gateway"]["properties"]["service"]["properties"]["nodePort"]
    allowed = next(s for s in node_port["anyOf"] if s.get("type") == "integer")
    assert allowed["minimum"] <= mapping["containerPort"] <= allowed["maximum"]
    assert mapping["containerPort"] == NODE_PORT
    assert mapping["listenAddress"] == "127.0.0.1"
    values = (REPO_ROOT / "charts/tiny-harness/values.yaml").read_text()
    assert f"node port {mapping['containerPort']} to the host's {mapping['hostPort']}" in values
