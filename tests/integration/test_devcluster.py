"""The local control plane launcher: it starts real servers and leaves nothing behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.eventually import eventually
from tiny_harness.devcluster import LocalCluster
from tiny_harness.kube.crd import REPO_ROOT


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def kubectl(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["kubectl", f"--kubeconfig={kubeconfig}", *args], capture_output=True, text=True, timeout=60
    )


def test_stopping_the_cluster_leaves_no_process_and_no_files(tmp_path: Path) -> None:
    cluster = LocalCluster().start()
    pids = cluster.pids
    data_dir = cluster.data_dir
    assert kubectl(cluster.kubeconfig, "get", "ns").returncode == 0

    cluster.stop()

    assert len(pids) == 3  # etcd, kube-apiserver, kube-controller-manager
    assert not any(alive(pid) for pid in pids)
    assert not data_dir.exists()


def test_a_killed_launcher_takes_its_servers_with_it() -> None:
    script = (
        "import sys, time\n"
        "from tiny_harness.devcluster import LocalCluster\n"
        "c = LocalCluster().start()\n"
        "print(*c.pids, flush=True)\n"
        "time.sleep(600)\n"
    )
    launcher = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    assert launcher.stdout is not None
    pids = [int(p) for p in launcher.stdout.readline().split()]
    assert len(pids) == 3
    assert all(alive(p) for p in pids)

    os.kill(launcher.pid, signal.SIGKILL)
    launcher.wait()

    eventually(
        lambda: not any(alive(p) for p in pids),
        within=20,
        what="the control plane's processes to exit",
    )


def test_a_persistent_cluster_keeps_its_tasks_across_restarts(tmp_path: Path) -> None:
    data_dir = tmp_path / "cluster"
    with LocalCluster(data_dir, crds=REPO_ROOT / "crds") as cluster:
        applied = kubectl(cluster.kubeconfig, "apply", "-f", str(REPO_ROOT / "examples/task.yaml"))
        assert applied.returncode == 0, applied.stderr

    with LocalCluster(data_dir, crds=REPO_ROOT / "crds") as cluster:
        got = kubectl(cluster.kubeconfig, "get", "ht", "hello-harness", "-o", "name")

    assert got.returncode == 0, got.stderr
    assert got.stdout.strip().endswith("/hello-harness")


def test_owner_references_cascade_and_a_deleted_namespace_is_emptied(tmp_path: Path) -> None:
    """The garbage collector and the namespace controller run, as on a real cluster."""
    with LocalCluster(crds=REPO_ROOT / "crds") as cluster:
        config = cluster.kubeconfig
        assert kubectl(config, "create", "namespace", "work").returncode == 0
        made = kubectl(config, "-n", "work", "create", "configmap", "owner")
        assert made.returncode == 0, made.stderr
        uid = kubectl(config, "-n", "work", "get", "cm", "owner", "-o", "jsonpath={.metadata.uid}")
        dependent = (
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dependent\n"
            "  ownerReferences:\n  - {apiVersion: v1, kind: ConfigMap, name: owner, "
            f"uid: {uid.stdout}}}\n"
        )
        applied = subprocess.run(
            ["kubectl", f"--kubeconfig={config}", "-n", "work", "apply", "-f", "-"],
            input=dependent, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert applied.returncode == 0, applied.stderr

        assert kubectl(config, "-n", "work", "delete", "cm", "owner").returncode == 0
        eventually(
            lambda: kubectl(config, "-n", "work", "get", "cm", "dependent").returncode != 0,
            within=60,
            what="the garbage collector to delete the dependent",
        )
        assert kubectl(config, "delete", "namespace", "work", "--wait=false").returncode == 0
        eventually(
            lambda: kubectl(config, "get", "namespace", "work").returncode != 0,
            within=60,
            what="the namespace controller to empty and remove the namespace",
        )
