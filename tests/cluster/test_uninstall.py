"""``helm uninstall`` takes the harness away and leaves the work: the CRDs and every task stay
(docs/design/install.md says so), and a new install finds them."""

from __future__ import annotations

from tests.cluster.conftest import NAMESPACE, RELEASE, Release
from tests.eventually import eventually

CRDS = ("harnesstasks", "harnessmessages", "harnessturns", "harnesstoolservers", "harnessagents")


def test_helm_uninstall_keeps_the_crds_and_the_tasks(release: Release) -> None:
    before = {t["metadata"]["name"] for t in release.kubectl.get_json("harnesstasks")["items"]}
    assert "hello-harness" in before

    release.helm.run("uninstall", RELEASE, "-n", NAMESPACE, "--wait", kubeconfig=release.kubeconfig)

    def no_pods() -> bool:
        return not release.kubectl.get_json("pods")["items"]

    eventually(no_pods, within=120, what="the release's pods to go")
    crds = release.kubectl.run("get", "crd", "-o", "name").stdout
    for plural in CRDS:
        assert f"{plural}.tiny-harness.madarauchiha-314.github.io" in crds
    after = {t["metadata"]["name"] for t in release.kubectl.get_json("harnesstasks")["items"]}
    assert after == before
    deployments = release.kubectl.get_json("deployments")["items"]
    assert deployments == []
