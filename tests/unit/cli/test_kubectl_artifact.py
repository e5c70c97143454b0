"""``kubectl harness artifact`` and the artifacts ``get`` lists: what is written for each kind
of part, the help, and the error for a name the task has no artifact of."""

from __future__ import annotations

import base64
import datetime as dt

import pytest

from tiny_harness.cli.kubectl_artifact import (
    ArtifactNotFoundError,
    BinaryArtifactError,
    content,
    for_terminal,
)
from tiny_harness.cli.kubectl_plugin import build_parser
from tiny_harness.cli.kubectl_render import describe
from tiny_harness.core.artifact_index import ArtifactFile, ArtifactPart, ArtifactRow, ChunkRef

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def test_text_is_written_as_text_a_file_as_its_bytes_and_data_as_json() -> None:
    raw = bytes(range(256))
    file = ArtifactFile(name="f.bin", data=base64.b64encode(raw).decode())
    assert content([ArtifactPart(file=file)]) == raw
    assert content([ArtifactPart(text="one "), ArtifactPart(text="two")]) == b"one two"
    assert content([ArtifactPart(text="rows:"), ArtifactPart(data={"n": 1})]) == (
        b'rows:\n{\n  "n": 1\n}\n'
    )


def test_an_unknown_name_says_which_artifacts_the_task_has() -> None:
    row = ArtifactRow(artifact_id="a", name="report", size=0)
    error = ArtifactNotFoundError("t1", "nope", [row])
    assert str(error) == (
        "task 't1' has no artifact named 'nope'; its artifacts: report "
        "(kubectl harness get t1 lists them)"
    )
    assert "its artifacts: none yet" in str(ArtifactNotFoundError("t1", "x", []))


def test_artifact_has_help_with_examples(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["artifact", "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "TASK NAME" in out
    assert "a file part as its raw bytes" in out
    assert "kubectl harness artifact hello-harness chart.png > chart.png" in out
    args = build_parser().parse_args(["artifact", "t1", "report"])
    assert (args.command, args.task, args.name) == ("artifact", "t1", "report")


def test_get_lists_the_artifacts_with_size_and_chunks() -> None:
    rows = [
        ArtifactRow(
            artifact_id="a",
            name="report",
            description="The report",
            chunks=(ChunkRef(turn=1, entry="e", size=3000), ChunkRef(turn=2, entry="f", size=72)),
            size=3072,
        )
    ]
    obj = {
        "metadata": {"name": "t1", "namespace": "ns", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"goal": "Write it"},
        "status": {
            "state": "TASK_STATE_COMPLETED",
            "artifacts": [r.model_dump(mode="json", by_alias=True) for r in rows],
        },
    }
    text = describe(obj, [], 0, NOW)
    assert "Artifacts (1; kubectl harness artifact TASK NAME):" in text
    line = next(x for x in text.splitlines() if "report" in x and "KiB" in x)
    assert line.split()[:3] == ["report", "3", "KiB"]
    assert " 2 " in line


def test_on_a_terminal_an_artifacts_text_is_shown_literally_and_bytes_are_refused() -> None:
    text = "summary \x1b[2J\x1b]52;c;cm0gLXJm\x07 done\u202e\nline two".encode()
    assert for_terminal(text, "t1", "report") == (
        "summary \\x1b[2J\\x1b]52;c;cm0gLXJm\\x07 done\\u202e\nline two"
    )
    with pytest.raises(BinaryArtifactError) as refused:
        for_terminal(b"\x89PNG\r\n\x1a\n\xff", "t1", "chart.png")
    assert str(refused.value) == (
        "artifact 'chart.png' of task 't1' is not text (9 bytes) and is not written to a "
        "terminal: redirect it to a file (kubectl harness artifact t1 chart.png > FILE)"
    )
