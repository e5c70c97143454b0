"""``kubectl harness list`` and ``get`` with ``-o json|yaml|wide|name`` and ``--no-headers``,
without a cluster: the objects as kubectl prints them (parsed back to what was stored, and
showing a terminal nothing it would obey), the wide and headless tables, and the refusal of a
format kubectl has no printer for."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
import yaml

from tiny_harness.cli import kubectl_output as output
from tiny_harness.cli import kubectl_render as render
from tiny_harness.cli.kubectl_parser import build_parser
from tiny_harness.core.literal import literal
from tiny_harness.kube.names import API_VERSION, GROUP, KIND

NOW = dt.datetime(2026, 12, 2, 6, 0, 0, tzinfo=dt.UTC)
#: What someone else may have written into a task: an escape sequence, a right-to-left
#: override, and a line break.
HOSTILE = "clear \x1b[2J then txt.\u202eexe\nsecond line"


def task(name: str, namespace: str = "team", **status: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "creationTimestamp": "2026-12-02T05:59:00Z",
            "managedFields": [{"manager": "kubectl", "operation": "Update"}],
        },
        "spec": {
            "goal": f"Help with {name}.",
            "participants": [{"id": "alice", "role": "assignee"}],
        },
        "status": {"state": "TASK_STATE_INPUT_REQUIRED", "turn": 1, **status},
    }


def test_json_is_a_list_as_kubectl_prints_it_without_managed_fields() -> None:
    text = output.printed([task("b"), task("a"), task("c", "other")], "json", one=False)

    printed = json.loads(text)
    assert (printed["apiVersion"], printed["kind"]) == ("v1", "List")
    assert printed["metadata"] == {"resourceVersion": ""}
    assert [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in printed["items"]] == [
        ("other", "c"),
        ("team", "a"),
        ("team", "b"),
    ]
    first = printed["items"][0]
    assert (first["apiVersion"], first["kind"]) == (API_VERSION, KIND)
    assert "managedFields" not in first["metadata"]
    assert text.startswith('{\n    "apiVersion": "v1",\n    "items": [')


def test_an_empty_listing_is_an_empty_list() -> None:
    assert json.loads(output.printed([], "json", one=False))["items"] == []
    assert yaml.safe_load(output.printed([], "yaml", one=False))["items"] == []


def test_get_prints_the_one_object_in_yaml_block_style() -> None:
    text = output.printed([task("a", message="line one\nline two")], "yaml", one=True)

    printed = yaml.safe_load(text)
    assert (printed["kind"], printed["metadata"]["name"]) == (KIND, "a")
    assert printed["status"]["message"] == "line one\nline two"
    assert text.startswith(f"apiVersion: {API_VERSION}\nkind: {KIND}\nmetadata:\n")
    assert "message: |-\n    line one\n    line two" in text
    assert "participants:\n  - id: alice\n    role: assignee" in text


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_someone_elses_text_reads_back_as_written_and_shows_a_terminal_nothing(fmt: str) -> None:
    stored = task("a", message=HOSTILE)
    stored["spec"]["goal"] = HOSTILE

    text = output.printed([stored], fmt, one=True)

    assert literal(text) == text  # nothing a terminal would obey is left as it is
    assert "\x1b" not in text
    assert "\u202e" not in text
    printed = json.loads(text) if fmt == "json" else yaml.safe_load(text)
    assert printed["status"]["message"] == HOSTILE
    assert printed["spec"]["goal"] == HOSTILE


def test_name_is_kind_dot_group_slash_name_one_a_line() -> None:
    assert output.printed([task("b"), task("a")], "name", one=False) == (
        f"harnesstask.{GROUP}/a\nharnesstask.{GROUP}/b"
    )


def test_wide_adds_model_turn_runner_and_goal() -> None:
    running = task("a", model="gpt-5", turn=3, runner={"holder": "op-1", "renewTime": "x"})

    lines = render.task_list([running, task("b")], "alice", NOW, wide=True).splitlines()

    assert lines[0].split()[-4:] == ["MODEL", "TURN", "RUNNER", "GOAL"]
    assert lines[1].split()[7:] == ["gpt-5", "3", "op-1", "Help", "with", "a."]
    assert lines[2].split()[7:] == ["-", "1", "-", "Help", "with", "b."]


def test_no_headers_prints_the_rows_alone() -> None:
    headed = render.task_list([task("a")], "alice", NOW).splitlines()
    headless = render.task_list([task("a")], "alice", NOW, headers=False).splitlines()

    assert headed[0].startswith("NAME")
    assert [line.split() for line in headless] == [headed[1].split()]
    # Columns are as wide as their widest cell, the header no longer counted (as kubectl).
    assert headless[0].startswith("a   INPUT_REQUIRED")


def test_an_unknown_output_format_is_refused_naming_the_allowed_ones(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["list", "-o", "table"])

    assert exit_.value.code == 2
    assert (
        'unable to match a printer suitable for the output format "table", allowed formats '
        "are: json,name,wide,yaml"
    ) in capsys.readouterr().err
    args = build_parser().parse_args(["get", "t", "-o", "yaml", "--no-headers"])
    assert (args.output, args.no_headers) == ("yaml", True)


def test_list_and_get_help_name_the_output_formats(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("list", "get"):
        with pytest.raises(SystemExit):
            build_parser().parse_args([command, "--help"])
        text = capsys.readouterr().out
        assert "-o FORMAT, --output FORMAT" in text, command
        assert "--no-headers" in text, command
        assert "-o yaml" in text, command
