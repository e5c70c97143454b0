"""A real local Kubernetes control plane: etcd and kube-apiserver on 127.0.0.1.

Tests, benchmarks and ``make run`` all stand on it, so that nothing in tiny-harness is ever
checked against a mock of the Kubernetes API. The binaries are built once from the pinned Go
modules under ``hack/controlplane`` and cached per pin.
"""

from tiny_harness.devcluster.cluster import LocalCluster
from tiny_harness.devcluster.failures import ClusterError

__all__ = ["ClusterError", "LocalCluster"]
