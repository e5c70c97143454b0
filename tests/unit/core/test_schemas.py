"""The published extension schemas: committed files match the models, and real data validates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from google.protobuf.json_format import MessageToDict

from tiny_harness.core import schemas
from tiny_harness.core.a2a_task import task_to_a2a
from tiny_harness.core.command_spec import (
    CommandsExtensionParams,
    CommandSpec,
    commands_from_params,
    commands_params,
)
from tiny_harness.core.errors import InvalidExtensionError
from tiny_harness.core.extensions import (
    COMMANDS_EXT_URI,
    STATUS_EXT_KEY,
    STATUS_EXT_URI,
    TASK_EXT_KEY,
    TASK_EXT_URI,
)
from tiny_harness.core.plan import Plan, PlanStep
from tiny_harness.core.states import SubState, TaskState
from tiny_harness.core.task import (
    Lifecycle,
    Participant,
    Role,
    SubTaskRow,
    TaskExtension,
    TaskLink,
    TaskSpec,
    TaskStatus,
)

REPO_ROOT = Path(__file__).resolve().parents[3]
EXT_DIR = REPO_ROOT / "docs" / "a2a" / "ext"

BUILTINS = (
    CommandSpec(name="model", description="Show or set the model", argument_hint="[<model>]"),
    CommandSpec(name="effort", description="Show or set the effort", argument_hint="[low|high]"),
    CommandSpec(name="sub-task", description="Start a sub-task", argument_hint="<description>"),
    CommandSpec(name="status", description="Show the task's status"),
)


def committed(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((EXT_DIR / name).read_text(encoding="utf-8"))
    return loaded


def validator(name: str) -> jsonschema.protocols.Validator:
    schema = committed(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


# --- the committed files cannot drift --------------------------------------------------------


@pytest.mark.parametrize("name", ["task.json", "status.json", "commands.json"])
def test_the_committed_schema_is_exactly_what_the_models_generate(name: str) -> None:
    text = (EXT_DIR / name).read_text(encoding="utf-8")

    assert text == schemas.generated_files()[name], (
        f"docs/a2a/ext/{name} is stale: run python -m tiny_harness.core.schemas --write"
    )


def test_no_committed_schema_is_stale() -> None:
    assert schemas.stale_files(EXT_DIR) == []


@pytest.mark.parametrize(
    ("name", "uri"),
    [
        ("task.json", TASK_EXT_URI),
        ("status.json", STATUS_EXT_URI),
        ("commands.json", COMMANDS_EXT_URI),
    ],
)
def test_each_schema_names_its_dialect_extension_title_and_purpose(name: str, uri: str) -> None:
    schema = committed(name)

    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == f"{uri}.json"
    assert schema["title"].startswith("tiny-harness ")
    assert schema["description"]
    jsonschema.Draft202012Validator.check_schema(schema)


def test_the_task_schema_uses_the_wire_spelling_and_no_kubernetes_rules() -> None:
    schema = committed("task.json")
    text = json.dumps(schema)

    assert "acceptance_criteria" in schema["properties"]
    assert "sub_tasks" in schema["properties"]
    assert "acceptanceCriteria" not in text
    assert "x-kubernetes" not in text


def test_the_sub_state_is_a_documented_free_string_not_a_closed_enum() -> None:
    sub_state = committed("status.json")["properties"]["sub_state"]

    assert sub_state["type"] == "string"
    assert "enum" not in sub_state
    for value in SubState:
        assert value.value in sub_state["description"]
    validator("status.json").validate({"sub_state": "awaiting-a-later-thing"})


# --- the generator's command line ------------------------------------------------------------


def test_check_reports_missing_and_edited_files_and_exits_1(tmp_path: Path) -> None:
    (tmp_path / "task.json").write_text("{}\n", encoding="utf-8")
    said: list[str] = []

    code = schemas.main(["--check", "--dir", str(tmp_path)], out=said.append)

    assert code == 1
    assert sorted(line.split(str(tmp_path) + "/")[-1].split(" ")[0] for line in said) == [
        "approval/v1.json",
        "commands.json",
        "status.json",
        "task.json",
    ]
    assert all("--write" in line for line in said)


def test_write_regenerates_the_files_and_then_check_passes(tmp_path: Path) -> None:
    said: list[str] = []

    assert schemas.main(["--write", "--dir", str(tmp_path)], out=said.append) == 0
    assert len(said) == 4
    assert schemas.main(["--check", "--dir", str(tmp_path)], out=said.append) == 0
    assert schemas.main(["--write", "--dir", str(tmp_path)], out=said.append) == 0
    assert len(said) == 4, "an up-to-date file is not rewritten"


def test_the_command_line_needs_write_or_check() -> None:
    with pytest.raises(SystemExit):
        schemas.main([])


# --- real instances validate -----------------------------------------------------------------


def busy_task() -> tuple[TaskSpec, TaskStatus]:
    plan = Plan.create([PlanStep(name="look"), PlanStep(name="fix", dependencies=("look",))])
    spec = TaskSpec(
        name="fix-login",
        type="bug",
        goal="Users can log in again",
        acceptance_criteria=("login works",),
        participants=(
            Participant(id="agent", role=Role.ASSIGNEE),
            Participant(id="alice", role=Role.REPORTER),
        ),
        parent=TaskLink(task_id="triage", agent="https://agents.example"),
        plan=plan,
    )
    status = TaskStatus(
        state=TaskState.INPUT_REQUIRED,
        sub_state=SubState.AWAITING_ANSWER,
        lifecycle=Lifecycle.DELEGATED,
        model="gpt-5",
        reasoning_effort="medium",
        plan=plan.complete_step("look", output="found").link_task("fix", "fix-login.1"),
        sub_tasks=(SubTaskRow(task_id="fix-login.1", goal="patch", result_unread=True),),
    )
    return spec, status


def test_a_rendered_tasks_metadata_validates_against_the_task_and_status_schemas() -> None:
    spec, status = busy_task()
    metadata = MessageToDict(task_to_a2a("fix-login", "c", spec, status).metadata)

    validator("task.json").validate(metadata[TASK_EXT_KEY])
    validator("status.json").validate(metadata[STATUS_EXT_KEY])


def test_a_minimal_extension_validates() -> None:
    validator("task.json").validate(TaskExtension(goal="g").model_dump(mode="json"))


def test_a_task_envelope_validates_against_the_task_schema() -> None:
    validator("task.json").validate({"goal": "g", "participants": [{"id": "a", "role": "admin"}]})


@pytest.mark.parametrize(
    "instance",
    [
        {"goal": ""},
        {"description": "no goal"},
        {"goal": "g", "acceptanceCriteria": ["camelCase is not the wire spelling"]},
        {"goal": "g", "participants": [{"id": "a", "role": "owner"}]},
        {"goal": "g", "lifecycle": "forever"},
        {"goal": "g", "reasoning_effort": "maximum"},
    ],
)
def test_the_task_schema_refuses_what_the_model_refuses(instance: dict[str, Any]) -> None:
    with pytest.raises(jsonschema.ValidationError):
        validator("task.json").validate(instance)


@pytest.mark.parametrize("instance", [{}, {"sub_state": ""}, {"sub_state": 3}])
def test_the_status_schema_refuses_a_missing_or_empty_sub_state(instance: dict[str, Any]) -> None:
    with pytest.raises(jsonschema.ValidationError):
        validator("status.json").validate(instance)


def test_the_card_params_for_the_builtin_commands_validate() -> None:
    params = commands_params(BUILTINS)

    validator("commands.json").validate(params)
    assert params["commands"][0] == {
        "name": "model",
        "description": "Show or set the model",
        "argument_hint": "[<model>]",
    }


@pytest.mark.parametrize(
    "entry",
    [
        {"name": "Model", "description": "upper case"},
        {"name": "1st", "description": "starts with a digit"},
        {"name": "do_it", "description": "underscore"},
        {"name": "ok", "description": "extra", "hook": "h"},
        {"name": "ok"},
    ],
)
def test_the_commands_schema_refuses_a_malformed_command(entry: dict[str, Any]) -> None:
    with pytest.raises(jsonschema.ValidationError):
        validator("commands.json").validate({"commands": [entry]})


# --- the commands extension shape ------------------------------------------------------------


def test_card_params_read_back_as_the_same_commands() -> None:
    assert commands_from_params(commands_params(BUILTINS)) == BUILTINS


def test_a_command_without_arguments_has_an_empty_hint() -> None:
    assert CommandSpec(name="status", description="Show status").argument_hint == ""


@pytest.mark.parametrize("name", ["Model", "-x", "a b", "", "x" * 65])
def test_a_command_name_outside_the_pattern_is_refused(name: str) -> None:
    with pytest.raises(ValueError, match="name"):
        CommandSpec(name=name, description="d")


def test_card_params_listing_a_command_twice_are_refused_naming_it() -> None:
    params = {"commands": [{"name": "model", "description": "a"}] * 2}

    with pytest.raises(InvalidExtensionError, match="command /model is listed twice"):
        commands_from_params(params)


def test_malformed_card_params_are_refused_naming_the_entry() -> None:
    params = {"commands": [{"name": "ok", "description": "d"}, {"name": "Bad", "description": "d"}]}

    with pytest.raises(InvalidExtensionError) as refused:
        commands_from_params(params)

    assert refused.value.field == f"{COMMANDS_EXT_URI} params.commands.1.name"


def test_the_params_model_is_the_one_the_schema_is_cut_from() -> None:
    entry = next(e for e in schemas.EXTENSION_SCHEMAS if e.filename == "commands.json")

    assert entry.model is CommandsExtensionParams


# --- the prose docs name the wire contract exactly -------------------------------------------


@pytest.mark.parametrize(
    ("doc", "names"),
    [
        ("task.md", (TASK_EXT_URI, TASK_EXT_KEY, "task.json")),
        ("status.md", (STATUS_EXT_URI, STATUS_EXT_KEY, "status.json")),
        ("commands.md", (COMMANDS_EXT_URI, "commands.json")),
    ],
)
def test_each_extension_doc_spells_its_uri_key_and_schema(doc: str, names: tuple[str, ...]) -> None:
    text = (EXT_DIR / doc).read_text(encoding="utf-8")

    for name in names:
        assert f"`{name}`" in text or f"({name})" in text, f"{doc} does not name {name}"
