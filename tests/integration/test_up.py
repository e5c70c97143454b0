"""``tiny-harness up`` as a new user first runs it: a fresh configuration home is made with
private modes, the local cluster keeps its data under it, the demo model answers a message, and
Ctrl-C (SIGINT) stops everything with exit status 130."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.eventually import eventually

pytestmark = pytest.mark.controlplane

GATEWAY = "http://127.0.0.1:8080"

MESSAGE = """\
apiVersion: tiny-harness.madarauchiha-314.github.io/v1alpha1
kind: HarnessMessage
metadata:
  name: hello-harness-m1
spec:
  task: hello-harness
  messageId: m1
  sender: alice
  parts:
  - text: What do you do?
"""


def port_free(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def test_up_in_a_fresh_home_answers_with_the_demo_model_and_stops_on_ctrl_c(
    tmp_path: Path,
) -> None:
    assert port_free(8080), "the default configuration's gateway port 8080 is taken"
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env.pop("TINY_HARNESS_CONFIG", None)
    env["TINY_HARNESS_HOME"] = str(home)
    log = (tmp_path / "up.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tiny_harness.cli.main", "up"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    output = tmp_path / "up.log"
    try:

        def card() -> object:
            try:
                with urllib.request.urlopen(f"{GATEWAY}/.well-known/agent-card.json", timeout=2):
                    return True
            except OSError:
                assert proc.poll() is None, output.read_text()
                return None

        eventually(card, within=120, what="the gateway's agent card")
        assert stat.S_IMODE(os.stat(home).st_mode) == 0o700
        assert stat.S_IMODE(os.stat(home / "config.toml").st_mode) == 0o600
        kubeconfig = home / "cluster" / "kubeconfig"
        assert kubeconfig.exists()
        text = output.read_text()
        assert f"created default configuration {home / 'config.toml'}" in text
        assert "the demo model answers" in text
        assert f"The web UI: {GATEWAY}/ui/" in text
        with urllib.request.urlopen(f"{GATEWAY}/ui/", timeout=5) as page:
            assert '<div id="root">' in page.read().decode()

        kubectl = ["kubectl", f"--kubeconfig={kubeconfig}", "-n", "default"]
        repo = Path(__file__).resolve().parents[2]
        subprocess.run([*kubectl, "apply", "-f", str(repo / "examples/task.yaml")], check=True)
        subprocess.run([*kubectl, "apply", "-f", "-"], input=MESSAGE.encode(), check=True)

        def answered() -> object:
            got = subprocess.run(
                [*kubectl, "get", "harnessturns", "-o", "json"], capture_output=True, check=True
            )
            dumped = json.dumps(json.loads(got.stdout))
            return "demo model" in dumped or None

        eventually(answered, within=60, what="the demo model's reply in the turn journal")
    finally:
        proc.send_signal(signal.SIGINT)
        started = time.monotonic()
        try:
            code = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
        log.close()
    assert code == 130, output.read_text()[-3000:]
    assert time.monotonic() - started < 60
    assert "Traceback" not in output.read_text()
    assert port_free(8080)
