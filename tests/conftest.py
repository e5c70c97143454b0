"""Shared fixtures: the real local control plane, a namespace per test, and its processes.

Integration tests stand on a real etcd and kube-apiserver started once per session
(:class:`~tiny_harness.devcluster.LocalCluster`); each test works in a fresh namespace.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import pytest
from hypothesis import HealthCheck, settings
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.eventually import eventually
from tests.integration.lifecycle_support import Tasks
from tiny_harness.devcluster import LocalCluster
from tiny_harness.kube.admission import local_policy
from tiny_harness.kube.crd import REPO_ROOT
from tiny_harness.testing.mcp_server import McpServerThread
from tiny_harness.testing.model_script import ModelServerControl

# Property tests assert what holds for every input, not how fast inputs are made: on a shared
# 2-core machine under load, example generation and a single example can each take longer than
# hypothesis's timing checks allow, which failed tests that were right. Their time is measured
# by the benchmarks, never asserted.
settings.register_profile(
    "tiny-harness", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("tiny-harness")

if TYPE_CHECKING:  # it imports this module: a fixture below imports it when it runs
    from tests.integration.remote_support import RemoteHarness


@pytest.fixture(scope="session")
def cluster() -> Iterator[LocalCluster]:
    with LocalCluster(crds=REPO_ROOT / "crds", admission=local_policy()) as c:
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


class ModelServer:
    """The scripted model server as a subprocess: any process (an operator) can call it, and
    tests script it and read what it received over HTTP."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tiny_harness.testing.model_server", "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        assert self.url.startswith("http://127.0.0.1:"), self.url
        self.control = ModelServerControl(self.url)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


@pytest.fixture(scope="session")
def model_server_process() -> Iterator[ModelServer]:
    server = ModelServer()
    yield server
    server.stop()


@pytest.fixture
async def model_server(model_server_process: ModelServer) -> ModelServer:
    """The session's scripted model server, reset for this test."""
    await model_server_process.control.reset()
    return model_server_process


#: What the tests' operators may connect to for tool servers, agents and cards: every test
#: server listens on 127.0.0.1, which the destination policy refuses unless it is listed.
LOOPBACK_DESTINATIONS: Final = {"allowed_cidrs": ["127.0.0.0/8", "::1/128"]}


#: The provider settings for each wire format the scripted model server speaks.
WIRES: Final = {
    "responses": ('provider = "openai"', "[openai]", "/v1", 'api = "responses"'),
    "chat": ('provider = "openai"', "[openai]", "/v1", 'api = "chat"'),
    "messages": ('provider = "anthropic"', "[anthropic]", "", None),
}


def operator_config(
    path: Path,
    model_url: str,
    *,
    destinations: Mapping[str, Any] = LOOPBACK_DESTINATIONS,
    wire: str = "responses",
    **operator: Any,
) -> Path:
    """A settings file pointing the operator at the scripted model server in ``wire``'s format
    (OpenAI ``responses`` or ``chat``, Anthropic ``messages``), allowed to reach servers on
    loopback unless ``destinations`` (``[operator.destinations]``) says otherwise (``{}``: the
    defaults, which refuse loopback)."""
    provider, section, prefix, api = WIRES[wire]
    lines = [
        provider,
        section,
        'model = "scripted-model"',
        'models = ["scripted-model", "scripted-large"]',
        f'base_url = "{model_url}{prefix}"',
        'api_key_env = "TINY_HARNESS_TEST_MODEL_KEY"',
        "max_retries = 1",
        "retry_backoff_seconds = 0.01",
        *([api] if api else []),
        "[operator]",
    ]
    operator.setdefault("lease_seconds", 6)
    lines += [f"{key} = {json.dumps(value)}" for key, value in operator.items()]
    lines.append("[operator.destinations]")
    lines += [f"{key} = {json.dumps(value)}" for key, value in destinations.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


class OperatorProcess:
    """``tiny-harness operator`` as a real subprocess, watching one namespace."""

    def __init__(
        self,
        kubeconfig: Path,
        namespace: str,
        log_dir: Path,
        config: Path,
        identity: str = "operator-a",
        env: dict[str, str] | None = None,
    ) -> None:
        self.kubeconfig = kubeconfig
        self.namespace = namespace
        self.config = config
        self.identity = identity
        self.extra_env = env or {}
        self.log_path = log_dir / f"operator-{uuid.uuid4().hex[:6]}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> OperatorProcess:
        port = free_port()
        self.liveness = f"http://127.0.0.1:{port}/healthz"
        env = {
            **os.environ,
            "KUBECONFIG": str(self.kubeconfig),
            "TINY_HARNESS_TEST_MODEL_KEY": "test-key",
            **self.extra_env,
        }
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
                "--config",
                str(self.config),
                "--identity",
                self.identity,
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        eventually(self._alive, within=60, what="the operator's liveness endpoint")
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
    kubeconfig: Path, namespace: str, tmp_path: Path, model_server: ModelServer
) -> Iterator[Callable[..., OperatorProcess]]:
    """Start operators on demand (against the scripted model server); all are stopped at the
    end of the test. Keyword arguments go to the [operator] settings, plus ``identity`` and
    ``env`` for the process."""
    started: list[OperatorProcess] = []

    def start(
        identity: str = "operator-a",
        env: dict[str, str] | None = None,
        wire: str = "responses",
        **settings: Any,
    ) -> OperatorProcess:
        config = operator_config(
            tmp_path / f"config-{len(started)}.toml", model_server.url, wire=wire, **settings
        )
        op = OperatorProcess(
            kubeconfig, namespace, tmp_path, config, identity=identity, env=env
        ).start()
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


@pytest.fixture
def tasks(api: Any, namespace: str) -> Tasks:
    """The test namespace's tasks as a participant drives them (create, send, wait, read)."""
    return Tasks(api, namespace)


@pytest.fixture(scope="session")
def _span_exporter() -> InMemorySpanExporter:
    # The process's tracer provider can be set once: one SDK provider for the session, with an
    # in-memory exporter the `spans` fixture empties around each test that reads it.
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return exporter


@pytest.fixture
def spans(_span_exporter: InMemorySpanExporter) -> Iterator[InMemorySpanExporter]:
    """The spans this test's code ends (tracing on, in this process, exported to memory)."""
    _span_exporter.clear()
    yield _span_exporter
    _span_exporter.clear()


@pytest.fixture
def mcp() -> Iterator[McpServerThread]:
    """The test MCP server (built with the ``mcp`` SDK, on 127.0.0.1), on a thread of its own
    so a test blocked in a synchronous wait never stalls it."""
    server = McpServerThread().start()
    yield server
    server.stop()


@pytest.fixture
def remote(kubeconfig: Path, tmp_path: Path, model_server: ModelServer) -> Iterator[RemoteHarness]:
    """A second tiny-harness (its own namespace, operator and gateway) on the same control
    plane, as a remote agent for the harness under test."""
    from tests.integration.remote_support import RemoteHarness

    harness = RemoteHarness(kubeconfig, tmp_path / "remote", model_server.url)
    yield harness
    harness.stop()


#: Test files that use the default configuration's fixed gateway port (127.0.0.1:8080): they
#: run on one worker, one after the other.
_DEFAULT_PORT_FILES = frozenset({"test_up.py", "test_tui_terminal.py"})

#: Fixtures that build a pinned tool on first use, within the first test's time: helm
#: (``build_helm``: two to three minutes cold, bounded at 30). ``make pytest`` builds it
#: first; a test file run alone on a fresh machine may build it here.
_BUILT_ON_FIRST_USE: Final = {"helm": 1800}


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook reads the marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """With pytest-xdist (``make test`` runs two workers, ``--dist loadgroup``), each test file
    runs on one worker, so its module fixtures are set up once, and the files that need the
    default gateway port share one. A test whose fixtures build a pinned tool on first use gets
    that build's time on top of the per-test timeout (pyproject.toml)."""
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        builds = [seconds for name, seconds in _BUILT_ON_FIRST_USE.items() if name in fixtures]
        if builds and item.get_closest_marker("timeout") is None:
            timeout = float(item.config.getini("timeout") or 0)
            item.add_marker(pytest.mark.timeout(timeout + max(builds)))
        if item.get_closest_marker("xdist_group") is not None:
            continue
        name = item.path.name
        group = "default-gateway-port" if name in _DEFAULT_PORT_FILES else str(item.path)
        item.add_marker(pytest.mark.xdist_group(group))
