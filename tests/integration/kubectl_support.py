"""``kubectl harness`` as a subprocess, as a user runs it, for the tests that drive it."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tiny_harness.kube.crd import REPO_ROOT

PLUGIN = [sys.executable, "-m", "tiny_harness.cli.kubectl_plugin"]


class Harness:
    """``kubectl harness`` against the local cluster, in the test's namespace."""

    def __init__(self, kubeconfig: Path, namespace: str) -> None:
        self.kubeconfig = kubeconfig
        self.namespace = namespace

    def argv(
        self, *args: str, participant: str | None = "alice", namespaced: bool = True
    ) -> list[str]:
        argv = [*PLUGIN, *args, f"--kubeconfig={self.kubeconfig}"]
        if namespaced:
            argv += ["-n", self.namespace]
        if participant is not None:
            argv += ["--as-participant", participant]
        return argv

    async def run(
        self, *args: str, participant: str | None = "alice", namespaced: bool = True, **kw: Any
    ) -> subprocess.CompletedProcess[str]:
        argv = self.argv(*args, participant=participant, namespaced=namespaced)
        return await asyncio.to_thread(run_plugin, argv, **kw)


def run_plugin(
    argv: list[str], stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
        cwd=REPO_ROOT,
    )
