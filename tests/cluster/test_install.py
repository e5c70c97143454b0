"""The install a team makes, seen working: both Deployments Ready through their own probes, the
pods as the chart's securityContext says, then the README's walk against the in-cluster
operator and gateway (kubectl, ``kubectl harness``, an a2a-sdk client, the web UI, metrics)."""

from __future__ import annotations

import subprocess
import sys
import urllib.request

from tests.cluster.conftest import NAMESPACE, RELEASE, NodeModelServer, Release, wait_for_state
from tests.integration.gateway_support import A2AUser, said, states, task_id_of, text_message
from tiny_harness.kube.crd import REPO_ROOT
from tiny_harness.testing.model_script import TextTurn


def harness(release: Release, *args: str) -> str:
    """``kubectl harness`` as alice, as the README runs it."""
    proc = subprocess.run(
        [
            sys.executable, "-m", "tiny_harness.cli.kubectl_plugin", *args,
            f"--kubeconfig={release.kubeconfig}", "-n", NAMESPACE, "--as-participant", "alice",
        ],
        capture_output=True, text=True, timeout=120, cwd=REPO_ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def fetch(url: str) -> tuple[int, str, str]:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return resp.status, resp.headers.get("Content-Type", ""), resp.read().decode()


def test_both_deployments_become_ready_through_their_own_probes(release: Release) -> None:
    for component in ("operator", "gateway"):
        (pod,) = release.pods(component)
        (container,) = pod["spec"]["containers"]
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            assert container[probe]["httpGet"]["path"] == "/healthz", (component, probe)
        (status,) = pod["status"]["containerStatuses"]
        assert status["ready"], (component, status)
        assert status["started"], (component, status)
        assert status["image"].endswith(release.values["image.tag"])
        assert status["restartCount"] == 0, (component, status)


def test_the_pods_run_as_uid_10001_on_a_read_only_root(release: Release) -> None:
    for component in ("operator", "gateway"):
        deployment = f"deployment/{RELEASE}-{component}"
        ids = release.kubectl.run("exec", deployment, "--", "id", "-u").stdout.strip()
        assert ids == "10001", component
        root = release.kubectl.run("exec", deployment, "--", "touch", "/x", check=False)
        assert root.returncode != 0, component
        assert "Read-only file system" in root.stderr, component
        tmp = release.kubectl.run("exec", deployment, "--", "touch", "/tmp/x", check=False)
        assert tmp.returncode == 0, (component, tmp.stderr)
        settings = release.kubectl.run(
            "exec", deployment, "--", "cat", "/etc/tiny-harness/config.toml"
        ).stdout
        assert release.values["model.baseUrl"] in settings or component == "gateway"


async def test_the_readme_walk_is_answered_by_the_in_cluster_operator(
    release: Release, model: NodeModelServer
) -> None:
    await model.control.script([TextTurn(text="I run tasks as Kubernetes objects.")])
    applied = release.kubectl.run("apply", "-f", str(REPO_ROOT / "examples" / "task.yaml"))
    assert "hello-harness created" in applied.stdout
    wait_for_state(release.kubectl, "hello-harness", "TASK_STATE_INPUT_REQUIRED")

    reply = harness(release, "send", "hello-harness", "Summarise yourself", "--wait")
    assert "I run tasks as Kubernetes objects." in reply
    status = harness(release, "cmd", "hello-harness", "/status")
    assert "state: input-required (awaiting-next-message)" in status
    assert "1 model call" in status
    harness(release, "complete", "hello-harness")

    final = wait_for_state(release.kubectl, "hello-harness", "TASK_STATE_COMPLETED")
    assert final["message"] == "completed by alice"
    listed = release.kubectl.run("get", "ht", "hello-harness").stdout
    assert "TASK_STATE_COMPLETED" in listed
    assert len(await model.control.requests()) == 1


async def test_an_a2a_client_talks_to_a_task_through_the_gateway_service(
    release: Release, model: NodeModelServer
) -> None:
    _, _, card = fetch(f"{release.gateway_url}/.well-known/agent-card.json")
    assert f'"url":"{release.gateway_url}' in card.replace(" ", "")
    await model.control.script([TextTurn(text="Hello from the cluster.")])
    alice = await A2AUser.connect(release.gateway_url, "alice")
    try:
        events = await alice.stream(text_message("Hello, harness."))
        assert states(events)[-1] == "TASK_STATE_INPUT_REQUIRED"
        task = await alice.get(task_id_of(events))
        assert said(task) == [("user", "Hello, harness."), ("agent", "Hello from the cluster.")]
        ended = await alice.complete(task.id)
        assert states(ended)[-1] == "TASK_STATE_COMPLETED"
    finally:
        await alice.close()


def test_the_web_ui_first_page_comes_through_the_gateway_service(release: Release) -> None:
    status, content_type, page = fetch(f"{release.gateway_url}/ui/")
    assert status == 200
    assert content_type.startswith("text/html")
    assert "<title>" in page
    assert 'id="root"' in page
    script = page.split('src="', 1)[1].split('"', 1)[0]
    asset_status, asset_type, _ = fetch(f"{release.gateway_url}{script}")
    assert asset_status == 200
    assert "javascript" in asset_type


def test_metrics_are_scraped_from_both_pods(release: Release) -> None:
    _, _, gateway = fetch(f"{release.gateway_url}/metrics")
    assert "tiny_harness_gateway_requests_total" in gateway
    service = release.kubectl.get_json("service", f"{RELEASE}-operator-metrics")
    ip, port = service["spec"]["clusterIP"], service["spec"]["ports"][0]["port"]
    _, _, operator = fetch(f"http://{ip}:{port}/metrics")
    assert "tiny_harness_turns_started_total" in operator


def test_a_pod_reaches_the_api_server_and_no_outside_address(release: Release) -> None:
    """The node's network: the API server through the ``kubernetes`` Service, by its cluster
    DNS name too, and nothing past the bridge (203.0.113.1 is a documentation address)."""
    probe = """
import socket, ssl, urllib.error, urllib.request
ctx = ssl.create_default_context(cafile="/var/run/secrets/kubernetes.io/serviceaccount/ca.crt")
try:
    urllib.request.urlopen("https://kubernetes.default.svc/readyz", context=ctx, timeout=10)
    print("api answered")
except urllib.error.HTTPError as exc:
    print("api answered", exc.code)
s = socket.socket()
s.settimeout(3)
try:
    s.connect(("203.0.113.1", 80))
    print("outside reached")
except OSError as exc:
    print("outside refused:", type(exc).__name__)
"""
    out = release.kubectl.run(
        "exec", f"deployment/{RELEASE}-gateway", "--", "python", "-c", probe
    ).stdout
    assert "api answered" in out
    assert "outside refused" in out
