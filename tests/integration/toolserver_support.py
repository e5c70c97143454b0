"""Helpers for the tool server tests: declare a HarnessToolServer with kubectl, wait for what
the operator writes into its status, and read what the scripted model was sent."""

from __future__ import annotations

import json
from typing import Any

from tests.conftest import Kubectl
from tests.eventually import eventually
from tiny_harness.kube.names import API_VERSION, TOOL_SERVER_KIND


def declare(kubectl: Kubectl, name: str, url: str, **spec: Any) -> None:
    """``kubectl apply`` a HarnessToolServer (``spec``: more of its spec, camelCase)."""
    manifest = {
        "apiVersion": API_VERSION,
        "kind": TOOL_SERVER_KIND,
        "metadata": {"name": name},
        "spec": {"url": url, **spec},
    }
    applied = kubectl.apply(json.dumps(manifest))
    assert applied.returncode == 0, applied.stderr


def ready_condition(kubectl: Kubectl, name: str) -> dict[str, Any] | None:
    status = kubectl.get_json("htool", name).get("status") or {}
    return next((c for c in status.get("conditions") or [] if c["type"] == "Ready"), None)


def wait_ready(kubectl: Kubectl, name: str, status: str = "True", within: float = 30) -> Any:
    """The server's status once its Ready condition is ``status``."""

    def probe() -> dict[str, Any] | None:
        condition = ready_condition(kubectl, name)
        if condition is not None and condition["status"] == status:
            return dict(kubectl.get_json("htool", name)["status"])
        return None

    return eventually(probe, within=within, what=f"tool server {name} Ready={status}")


def inputs(request: Any) -> list[dict[str, Any]]:
    return list((request.body or {}).get("input") or [])


def tool_outputs(request: Any) -> list[str]:
    """The tool results a Responses request carries, in order."""
    return [str(i["output"]) for i in inputs(request) if i.get("type") == "function_call_output"]


def tool_names(request: Any) -> list[str]:
    return [str(t["name"]) for t in (request.body or {}).get("tools") or []]


def instructions(request: Any) -> str:
    return str((request.body or {}).get("instructions") or "")


def task_condition(status: dict[str, Any], kind: str = "ToolServersReady") -> dict[str, Any]:
    found = [c for c in status.get("conditions") or [] if c["type"] == kind]
    assert found, f"no {kind} condition in {status.get('conditions')}"
    return dict(found[0])
