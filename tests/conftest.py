"""Shared fixtures: the real local control plane, a namespace per test, and helpers to wait.

Integration tests stand on a real etcd and kube-apiserver started once per session
(:class:`~tiny_harness.devcluster.LocalCluster`); each test works in a fresh namespace.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tiny_harness.devcluster import LocalCluster
from tiny_harness.kube.crd import REPO_ROOT

T = TypeVar("T")


def wait_for(probe: Callable[[], T | None], *, timeout: float = 20.0, what: str = "condition") -> T:
    """Poll ``probe`` until it returns something truthy, or fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")


@pytest.fixture(scope="session")
def cluster() -> Iterator[LocalCluster]:
    with LocalCluster(crds=REPO_ROOT / "crds") as c:
        yield c


@pytest.fixture(scope="session")
def kubeconfig(cluster: LocalCluster) -> Path:
    return cluster.kubeconfig


class Kubectl:
    """``kubectl`` against the local cluster, in one namespace."""

    def __init__(self, kubeconfig: Path, namespace: str) -> None:
        self.kubeconfig = kubeconfig
        self.namespace = namespace

    def run(
        self, *args: str, stdin: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            ["kubectl", f"--kubeconfig={self.kubeconfig}", "-n", self.namespace, *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {proc.stderr}")
        return proc

    def get_json(self, *args: str) -> Any:
        return json.loads(self.run("get", *args, "-o", "json").stdout)

    def apply(self, manifest: str) -> subprocess.CompletedProcess[str]:
        return self.run("apply", "-f", "-", stdin=manifest, check=False)


@pytest.fixture
def namespace(cluster: LocalCluster) -> str:
    name = f"t-{uuid.uuid4().hex[:10]}"
    subprocess.run(
        ["kubectl", f"--kubeconfig={cluster.kubeconfig}", "create", "namespace", name],
        check=True,
        capture_output=True,
    )
    return name


@pytest.fixture
def kubectl(cluster: LocalCluster, namespace: str) -> Kubectl:
    return Kubectl(cluster.kubeconfig, namespace)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class OperatorProcess:
    """``tiny-harness operator`` as a real subprocess, watching one namespace."""

    def __init__(self, kubeconfig: Path, namespace: str, log_dir: Path) -> None:
        self.kubeconfig = kubeconfig
        self.namespace = namespace
        self.log_path = log_dir / f"operator-{uuid.uuid4().hex[:6]}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> OperatorProcess:
        port = free_port()
        self.liveness = f"http://127.0.0.1:{port}/healthz"
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig)}
        self._log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tiny_harness.cli.main",
                "operator",
                "-n",
                self.namespace,
                "--liveness",
                self.liveness,
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        wait_for(self._alive, timeout=60, what="the operator's liveness endpoint")
        return self

    def _alive(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(f"the operator exited: {self.log_path.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(self.liveness, timeout=1) as resp:
                return bool(resp.status == 200)
        except OSError:
            return False

    def stop(self, sig: int = 15) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@pytest.fixture
def operator(
    kubeconfig: Path, namespace: str, tmp_path: Path
) -> Iterator[Callable[[], OperatorProcess]]:
    """Start operators on demand; all are stopped at the end of the test."""
    started: list[OperatorProcess] = []

    def start() -> OperatorProcess:
        op = OperatorProcess(kubeconfig, namespace, tmp_path).start()
        started.append(op)
        return op

    yield start
    for op in started:
        op.stop()


@pytest.fixture(scope="session")
async def api(cluster: LocalCluster) -> AsyncIterator[Any]:
    """An asynchronous Kubernetes API client as the cluster admin."""
    from tiny_harness.kube.client import connect

    client = await connect(cluster.kubeconfig)
    yield client
    await client.close()
