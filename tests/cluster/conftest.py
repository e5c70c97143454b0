"""The chart installed on a real one-node cluster, as a team would install it.

One session: the image built without Docker (``hack/image/build.sh``), the local cluster with
its node (:class:`~tiny_harness.devcluster.LocalCluster` with ``node=``), the image loaded into
the node's containerd, the scripted model served on the node's bridge address (where the pods
reach it), and ``helm install`` of ``charts/tiny-harness`` with the values a user would set.
Every test then works against the pods, the Services and the release, never against a process
the test started itself.

These tests need root, containerd, runc, the CNI plugins, buildah and debootstrap (``.ci/run``
installs them), so they are collected only when ``TINY_HARNESS_NODE_TESTS=1`` (``make
cluster-test``); they run in one process, in file order, since they share one release.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest

from tests.conftest import Kubectl
from tests.eventually import eventually
from tests.integration.chart_support import CHART, Helm, build_helm
from tiny_harness.devcluster import LocalCluster
from tiny_harness.devcluster.network import NodeNetwork
from tiny_harness.kube.crd import REPO_ROOT
from tiny_harness.testing.model_script import ModelServerControl

if os.environ.get("TINY_HARNESS_NODE_TESTS") != "1":
    collect_ignore_glob = ["test_*.py"]

#: The order the modules run in: the install is seen working before anything disturbs it, and
#: the release is uninstalled last.
MODULE_ORDER: Final = ("test_install", "test_disruption", "test_uninstall")

IMAGE_BUILD: Final = REPO_ROOT / "hack" / "image" / "build.sh"
RELEASE: Final = "tiny-harness"
NAMESPACE: Final = "tiny-harness"
NODE_PORT: Final = 30080
MODEL_SECRET: Final = "tiny-harness-model"


@dataclass(frozen=True)
class Image:
    archive: Path
    repository: str
    tag: str


@dataclass
class Release:
    """The installed chart: where its gateway is, how to reach its namespace, its values."""

    helm: Helm
    kubeconfig: Path
    kubectl: Kubectl
    gateway_url: str
    values: dict[str, Any]

    def upgrade(self, **changes: Any) -> None:
        """``helm upgrade`` with the install's values and ``changes``; waits for the rollout."""
        self.values = {**self.values, **changes}
        self.helm.run(
            "upgrade", RELEASE, str(CHART), "-n", NAMESPACE, *_set(self.values),
            kubeconfig=self.kubeconfig,
        )  # fmt: skip
        rolled_out(self.kubectl)

    def pods(self, component: str) -> list[dict[str, Any]]:
        selector = f"app.kubernetes.io/component={component}"
        items: list[dict[str, Any]] = self.kubectl.get_json("pods", "-l", selector)["items"]
        return [p for p in items if not p["metadata"].get("deletionTimestamp")]


class NodeModelServer:
    """The scripted model server on the node's bridge address, as a subprocess."""

    def __init__(self, host: str, log: Path) -> None:
        self._log = log.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tiny_harness.testing.model_server", "--host", host],
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
        )
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        assert self.url.startswith(f"http://{host}:"), self.url
        self.control = ModelServerControl(self.url)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)
        self._log.close()


#: Each test's bound (pytest-timeout), above the suite's: the first one takes the session's
#: setup (the image build, bounded at 30 minutes, the node, ``helm install``), and the others
#: wait for rollouts of a real release.
TEST_TIMEOUT: Final = 2700


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        module = item.path.stem
        return MODULE_ORDER.index(module) if module in MODULE_ORDER else -1

    mine = [i for i in items if i.path.parent == Path(__file__).parent]
    for item in mine:
        item.add_marker(pytest.mark.timeout(TEST_TIMEOUT), append=False)
    if mine:
        others = [i for i in items if i not in mine]
        items[:] = others + sorted(mine, key=rank)


def _set(values: dict[str, Any]) -> list[str]:
    return [a for k, v in values.items() for a in ("--set-json", f"{k}={json.dumps(v)}")]


def rolled_out(kubectl: Kubectl, timeout: float = 180.0) -> None:
    """Both Deployments rolled out: every replica updated, Ready by its probes, the old gone."""
    for name in (f"{RELEASE}-operator", f"{RELEASE}-gateway"):
        kubectl.run("rollout", "status", f"deployment/{name}", f"--timeout={timeout:.0f}s")


@pytest.fixture(scope="session")
def image() -> Image:
    started = time.monotonic()
    proc = subprocess.run(["bash", str(IMAGE_BUILD)], capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise AssertionError(f"building the image failed:\n{proc.stderr[-4000:]}")
    archive = Path(proc.stdout.strip().splitlines()[-1])
    sys.stderr.write(f"image built in {time.monotonic() - started:.0f}s: {archive}\n")
    tag = archive.name.removeprefix("tiny-harness-").removesuffix(".oci.tar")
    return Image(archive, "localhost/tiny-harness", tag)


@pytest.fixture(scope="session")
def cluster(image: Image) -> Iterator[LocalCluster]:
    """The session's cluster, with a node; it stands in for the root conftest's control plane,
    so the shared fixtures (namespaces, kubectl) work on it too."""
    started = time.monotonic()
    with LocalCluster(node=NodeNetwork()) as c:
        assert c.node is not None
        names = c.node.load_image(image.archive)
        assert f"{image.repository}:{image.tag}" in names, names
        sys.stderr.write(f"node up, image loaded in {time.monotonic() - started:.0f}s\n")
        yield c


@pytest.fixture(scope="session")
def node_model(
    cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[NodeModelServer]:
    assert cluster.node is not None
    server = NodeModelServer(
        cluster.node.network.host_ip, tmp_path_factory.mktemp("model") / "model.log"
    )
    yield server
    server.stop()


@pytest.fixture
async def model(node_model: NodeModelServer) -> NodeModelServer:
    """The session's scripted model, reset for this test."""
    await node_model.control.reset()
    return node_model


@pytest.fixture(scope="session")
def release(
    cluster: LocalCluster,
    image: Image,
    node_model: NodeModelServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> Release:
    """``helm install`` as the README and the chart's NOTES say: a namespace, the model's key
    in a Secret, the image, the model's endpoint, and the gateway on a NodePort whose address
    the agent card advertises."""
    assert cluster.node is not None
    kubectl = Kubectl(cluster.kubeconfig, NAMESPACE)
    kubectl.run("create", "namespace", NAMESPACE)
    # The scripted model takes any key; this one is not a credential.
    kubectl.run("create", "secret", "generic", MODEL_SECRET, "--from-literal=api-key=scripted")
    host = cluster.node.network.host_ip
    gateway_url = f"http://{host}:{NODE_PORT}"
    values: dict[str, Any] = {
        "image.repository": image.repository,
        "image.tag": image.tag,
        # Nothing is ever pulled: the image is on the node already.
        "image.pullPolicy": "Never",
        "model.baseUrl": f"{node_model.url}/v1",
        "model.existingSecret": MODEL_SECRET,
        "gateway.service.type": "NodePort",
        "gateway.service.nodePort": NODE_PORT,
        "gateway.baseUrl": gateway_url,
        # The tests speak to the gateway as alice by header, on a node only they reach; the
        # install's notes say that this is forgeable.
        "gateway.participantIdentity": "header",
    }
    helm = Helm(build_helm(), tmp_path_factory.mktemp("helm"))
    started = time.monotonic()
    helm.run(
        "install", RELEASE, str(CHART), "-n", NAMESPACE, *_set(values),
        kubeconfig=cluster.kubeconfig,
    )  # fmt: skip
    rolled_out(kubectl)
    sys.stderr.write(f"chart installed and Ready in {time.monotonic() - started:.0f}s\n")
    return Release(helm, cluster.kubeconfig, kubectl, gateway_url, values)


def task_status(kubectl: Kubectl, name: str) -> dict[str, Any]:
    status: dict[str, Any] = kubectl.get_json("harnesstask", name).get("status") or {}
    return status


def wait_for_state(
    kubectl: Kubectl, name: str, state: str, *, turn: int | None = None, within: float = 60
) -> dict[str, Any]:
    """The task's status once it shows ``state`` (after turn ``turn``, when given)."""

    def probe() -> dict[str, Any] | None:
        status = task_status(kubectl, name)
        if status.get("state") != state:
            return None
        if turn is not None and int(status.get("turn", 0)) < turn:
            return None
        return status

    result: dict[str, Any] = eventually(probe, within=within, what=f"{name} to be {state}")
    return result
