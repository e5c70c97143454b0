"""The reason codes a client switches on (``core/reason_codes.py``): one list, the same in the
task extension's document, in the web UI and here, and read from an error however a client's
SDK wraps it."""

from __future__ import annotations

import re
from pathlib import Path

from a2a.client.errors import A2AClientError
from a2a.utils.error_handlers import build_error_details
from a2a.utils.errors import UnsupportedOperationError

from tiny_harness.core.reason_codes import (
    REASON_KEY,
    ReasonCode,
    coded,
    error_info,
    reason_in,
    reason_of,
)

REPO_ROOT = Path(__file__).resolve().parents[3]
CODES = {code.value for code in ReasonCode}


def test_the_extension_documents_every_code_and_no_other() -> None:
    doc = (REPO_ROOT / "docs/a2a/ext/task.md").read_text()
    section = doc.split("## Refusals and stream ends", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", section, re.M))

    assert documented == CODES


def test_the_web_ui_knows_every_code_and_no_other() -> None:
    source = (REPO_ROOT / "web/src/reasons.ts").read_text()
    listed = re.search(r"export const REASON_CODES = \[(.*?)\] as const;", source, re.S)

    assert listed is not None
    assert set(re.findall(r'"([a-z_]+)"', listed.group(1))) == CODES
    assert f'export const REASON_KEY = "{REASON_KEY}";' in source


def test_a_code_travels_in_the_errors_details_as_the_sdk_sends_them() -> None:
    error = coded(UnsupportedOperationError, ReasonCode.STREAM_BEHIND, "x", last_event_id="41")
    (info,) = build_error_details(error)  # what the SDK puts in JSON-RPC data and REST details

    assert info["reason"] == "UNSUPPORTED_OPERATION"  # A2A's own reason, refined by ours
    assert info["metadata"] == {"reason": "stream_behind", "last_event_id": "41"}


def test_a_refusal_before_any_method_carries_its_code_where_an_a2a_error_does() -> None:
    assert error_info(ReasonCode.RATE_LIMITED) == {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": "RATE_LIMITED",
        "domain": "tiny-harness.madarauchiha-314.github.io",
        "metadata": {"reason": "rate_limited"},
    }


def test_a_code_is_read_from_the_error_or_the_one_it_was_raised_from() -> None:
    refused = coded(UnsupportedOperationError, ReasonCode.TOO_MANY_STREAMS, "x")
    wrapped = A2AClientError("the stream broke")
    wrapped.__cause__ = refused

    assert reason_of(refused) is ReasonCode.TOO_MANY_STREAMS
    assert reason_of(wrapped) is ReasonCode.TOO_MANY_STREAMS
    assert reason_of(UnsupportedOperationError("too_many_streams")) is None  # words are no code
    assert reason_of(None) is None
    assert reason_in({REASON_KEY: "a_code_from_a_later_gateway"}) is None
    assert reason_in(None) is None
