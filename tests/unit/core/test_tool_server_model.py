"""The HarnessToolServer model and its CRD: a URL and Secret references only, sensible
limits, an operator-only status, and columns kubectl shows; tasks name servers, not URLs."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tiny_harness.core.task import TaskSpec
from tiny_harness.core.tool_server import (
    DEFAULT_MAX_RESULT_BYTES,
    DEFAULT_TIMEOUT_SECONDS,
    ToolServerSpec,
)
from tiny_harness.kube.crd import crd_manifests


def test_a_minimal_server_gets_the_default_limits() -> None:
    spec = ToolServerSpec.model_validate({"url": "http://search:8000/mcp"})

    assert spec.timeout_seconds == DEFAULT_TIMEOUT_SECONDS == 30
    assert spec.max_result_bytes == DEFAULT_MAX_RESULT_BYTES == 65536
    assert spec.tools is None
    assert spec.default is False


@pytest.mark.parametrize(
    "spec",
    [
        {"url": "file:///etc/passwd"},
        {"url": "http://s/mcp", "headers": [{"name": "Authorization", "value": "Bearer x"}]},
        {"url": "http://s/mcp", "timeoutSeconds": 0},
        {"url": "http://s/mcp", "maxResultBytes": 10**9},
        {"url": "http://s/mcp", "headers": [{"name": "Bad Header", "valueFrom": {}}]},
    ],
)
def test_a_server_spec_without_a_url_or_with_an_inline_value_is_refused(
    spec: dict[str, object],
) -> None:
    with pytest.raises(ValidationError):
        ToolServerSpec.model_validate(spec)


def test_a_header_names_a_secret_key() -> None:
    spec = ToolServerSpec.model_validate(
        {
            "url": "https://search.example/mcp",
            "headers": [
                {"name": "Authorization", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}
            ],
        }
    )

    assert spec.headers[0].value_from.secret_key_ref.name == "s"


@pytest.mark.parametrize("name", ["http://evil.example/mcp", "Search", "a/b", ""])
def test_a_task_names_servers_and_never_addresses(name: str) -> None:
    with pytest.raises(ValidationError):
        TaskSpec(goal="g", tool_servers=(name,))


def test_the_crd_has_a_status_subresource_columns_and_a_short_name() -> None:
    crd = crd_manifests()["harnesstoolservers.yaml"]
    version = crd["spec"]["versions"][0]
    schema = version["schema"]["openAPIV3Schema"]["properties"]

    assert crd["spec"]["names"]["shortNames"] == ["htool"]
    assert version["subresources"] == {"status": {}}
    assert [c["name"] for c in version["additionalPrinterColumns"]][:5] == [
        "URL",
        "Ready",
        "Tools",
        "Default",
        "Age",
    ]
    header = schema["spec"]["properties"]["headers"]["items"]
    assert set(header["properties"]) == {"name", "valueFrom"}  # no inline value
    assert "lowerAscii" in header["x-kubernetes-validations"][0]["rule"]
    assert schema["status"]["properties"]["tools"]["items"]["properties"]["inputSchema"][
        "x-kubernetes-preserve-unknown-fields"
    ]
