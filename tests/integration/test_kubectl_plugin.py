"""``kubectl harness`` as a user runs it: the plugin as a subprocess against the real control
plane, with a real operator answering through the scripted model server."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import shlex
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import Kubectl, ModelServer, OperatorProcess
from tests.eventually import eventually, eventually_async
from tests.integration.kubectl_support import PLUGIN, Harness, run_plugin
from tests.integration.lifecycle_support import Tasks
from tests.integration.toolserver_support import declare, tool_outputs, wait_ready
from tiny_harness.core.sizes import FILE_BYTES
from tiny_harness.kube.crd import REPO_ROOT
from tiny_harness.testing.mcp_server import McpServerThread

pytestmark = pytest.mark.controlplane

#: The local cluster's admin, as the API server names it (its client certificate's CN).
ADMIN = "tiny-harness-admin"


class Follower:
    """A ``kubectl harness watch`` running in the background, its output collected by line."""

    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO_ROOT
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def saw(self, text: str) -> bool:
        if any(text in line for line in self.lines):
            return True
        if self.proc.poll() is not None:
            self._reader.join(timeout=5)
            if not any(text in line for line in self.lines):
                assert self.proc.stderr is not None
                raise AssertionError(
                    f"watch exited ({self.proc.returncode}) without printing {text!r}: "
                    f"{self.lines} {self.proc.stderr.read()}"
                )
        return any(text in line for line in self.lines)

    def said(self) -> list[str]:
        """What it printed, without the time stamps."""
        self._reader.join(timeout=5)
        return [line.split("  ", 1)[1] for line in self.lines]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
        self.proc.wait(timeout=15)


@pytest.fixture
def followers() -> Iterator[list[Follower]]:
    started: list[Follower] = []
    yield started
    for follower in started:
        follower.stop()


def not_found(name: str) -> str:
    return f'Error from server (NotFound): harnesstasks "{name}" not found'


def kubeconfig_in(namespace: str, source: Path, target: Path) -> Path:
    """A copy of the kubeconfig ``source`` whose contexts default to ``namespace``."""
    config = yaml.safe_load(source.read_text())
    for context in config["contexts"]:
        context["context"]["namespace"] = namespace
    target.write_text(yaml.safe_dump(config))
    return target


async def test_list_shows_sub_tasks_under_their_parent_with_state_and_sub_state(
    harness: Harness, tasks: Tasks, operator: Any
) -> None:
    await tasks.create("parent")
    await tasks.create("other")
    await tasks.create_child("parent", "parent-a", "Do a.")
    await tasks.create_child("parent", "parent-b", "Do b.")
    await tasks.create_child("parent-a", "parent-a-1", "Do a.1.")
    # The operator starts once the tree is whole: a delegated parent-a that ran its turn before
    # parent-a-1 existed would complete, and its late child be cancelled ("its parent task
    # parent-a has ended"), which is right, but not the tree this test lists.
    operator()
    for name in ("parent-a", "parent-b", "parent-a-1"):
        await tasks.wait(name, "TASK_STATE_COMPLETED", within=60)
    await tasks.wait_children_read("parent", count=2)
    await tasks.wait("other", "TASK_STATE_INPUT_REQUIRED")

    listed = await harness.run("list")

    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].split() == [
        "NAME",
        "STATE",
        "SUB-STATE",
        "LIFECYCLE",
        "ROLE",
        "APPROVALS",
        "AGE",
    ]
    rows = [line.split()[:5] for line in lines[1:]]
    assert rows == [
        ["other", "INPUT_REQUIRED", "awaiting-next-message", "conversation", "assignee"],
        ["parent", "INPUT_REQUIRED", "awaiting-next-message", "conversation", "assignee"],
        ["├─", "parent-a", "COMPLETED", "-", "delegated"],
        ["│", "└─", "parent-a-1", "COMPLETED", "-"],
        ["└─", "parent-b", "COMPLETED", "-", "delegated"],
    ]


async def test_kubectl_finds_the_plugin_on_path(
    harness: Harness, tasks: Tasks, tmp_path: Path
) -> None:
    await tasks.create("found")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "kubectl-harness"
    wrapper.write_text(f'#!/bin/sh\nexec {shlex.join(PLUGIN)} "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}

    found = await asyncio.to_thread(
        run_plugin,
        [
            "kubectl",
            "harness",
            "list",
            f"--kubeconfig={harness.kubeconfig}",
            "-n",
            harness.namespace,
            "--as-participant",
            "alice",
        ],
        env=env,
    )

    assert found.returncode == 0, found.stderr
    assert found.stdout.splitlines()[1].split()[:2] == ["found", "SUBMITTED"]


async def test_list_and_get_print_the_tasks_as_kubectl_get_does_with_o_json_yaml_and_name(
    harness: Harness, tasks: Tasks, kubectl: Kubectl
) -> None:
    await tasks.create("alpha")
    await tasks.create("beta")
    await tasks.create("strangers", participants=[{"id": "carol", "role": "assignee"}])

    as_json = await harness.run("list", "-o", "json")
    as_yaml = await harness.run("list", "-o", "yaml")
    as_names = await harness.run("list", "-o", "name")
    one = await harness.run("get", "alpha", "-o", "json")

    for done in (as_json, as_yaml, as_names, one):
        assert done.returncode == 0, done.stderr
    # What kubectl prints, less the task alice is not on.
    theirs = kubectl.get_json("harnesstasks")
    theirs["items"] = [i for i in theirs["items"] if i["metadata"]["name"] != "strangers"]
    assert json.loads(as_json.stdout) == theirs
    assert yaml.safe_load(as_yaml.stdout) == theirs
    assert json.loads(one.stdout) == kubectl.get_json("harnesstask", "alpha")
    group = "tiny-harness.madarauchiha-314.github.io"
    assert as_names.stdout.splitlines() == [
        f"harnesstask.{group}/alpha",
        f"harnesstask.{group}/beta",
    ]
    # The names are what kubectl takes back.
    got = kubectl.run("get", *as_names.stdout.split(), "-o", "name").stdout
    assert got.splitlines() == as_names.stdout.splitlines()


async def test_list_wide_adds_columns_and_no_headers_leaves_the_header_out(
    harness: Harness, tasks: Tasks
) -> None:
    await tasks.create("wide-one", goal="Summarise the report.")

    wide = await harness.run("list", "-o", "wide")
    headless = await harness.run("list", "--no-headers")
    one = await harness.run("get", "wide-one", "-o", "wide", "--no-headers")

    assert wide.returncode == 0, wide.stderr
    header, row = wide.stdout.splitlines()
    assert header.split()[-4:] == ["MODEL", "TURN", "RUNNER", "GOAL"]
    assert row.split()[:2] == ["wide-one", "SUBMITTED"]
    assert row.split()[-3:] == ["Summarise", "the", "report."]
    assert headless.stdout.split()[:2] == ["wide-one", "SUBMITTED"]
    [one_row] = one.stdout.splitlines()
    assert one_row.split()[:6] == row.split()[:6]  # the same row (its AGE may have grown)
    assert one_row.split()[7:] == row.split()[7:]


async def test_an_unknown_output_format_is_a_usage_error_naming_the_formats(
    harness: Harness,
) -> None:
    refused = await harness.run("list", "-o", "jsonpath={.items}")

    assert refused.returncode == 2
    assert (
        'unable to match a printer suitable for the output format "jsonpath={.items}", '
        "allowed formats are: json,name,wide,yaml"
    ) in refused.stderr
    assert refused.stdout == ""


async def test_kubectl_completes_the_plugins_commands_and_flags_through_kubectl_complete_harness(
    tmp_path: Path,
) -> None:
    """kubectl (1.26 and later) asks ``kubectl_complete-harness`` on PATH what completes
    ``kubectl harness ...``; ``kubectl __complete`` is what its shell scripts run on TAB."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for program, module in (
        ("kubectl-harness", "tiny_harness.cli.kubectl_plugin"),
        ("kubectl_complete-harness", "tiny_harness.cli.kubectl_complete"),
    ):
        wrapper = bin_dir / program
        wrapper.write_text(f'#!/bin/sh\nexec {shlex.join([sys.executable, "-m", module])} "$@"\n')
        wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}

    commands = await asyncio.to_thread(
        run_plugin, ["kubectl", "__complete", "harness", "ap"], env=env
    )
    formats = await asyncio.to_thread(
        run_plugin, ["kubectl", "__complete", "harness", "list", "-o", ""], env=env
    )

    assert commands.stdout.splitlines() == [
        "approve\tapprove a tool call that waits for approval",
        ":4",
    ]
    assert formats.stdout.splitlines() == ["json", "yaml", "wide", "name", ":4"]


async def test_send_prints_the_message_id_and_with_wait_the_operators_reply(
    harness: Harness, tasks: Tasks, operator: Any, model_server: ModelServer
) -> None:
    await model_server.control.script([{"type": "text", "text": "Hello Alice."}])
    operator()
    await tasks.create("chat")
    await tasks.wait("chat", "TASK_STATE_INPUT_REQUIRED")

    sent = await harness.run("send", "chat", "Hi", "there!", "--wait")

    assert sent.returncode == 0, sent.stderr
    message_id, reply = sent.stdout.splitlines()
    assert reply == "Hello Alice."
    [said, answered] = await tasks.transcript("chat")
    assert (said.role, said.message_id, said.sender, said.text) == (
        "user",
        message_id,
        "alice",
        "Hi there!",
    )
    assert (answered.role, answered.text) == ("agent", "Hello Alice.")


async def test_send_reads_a_message_of_several_lines_from_stdin(
    harness: Harness, tasks: Tasks
) -> None:
    await tasks.create("piped")

    sent = await harness.run("send", "piped", "-", stdin="First line.\nSecond line.\n")

    assert sent.returncode == 0, sent.stderr
    [message] = await tasks.messages_of("piped")
    assert message.spec.message_id == sent.stdout.strip()
    assert message.spec.text == "First line.\nSecond line.\n"


async def test_get_shows_the_task_its_plan_sub_tasks_and_last_messages(
    harness: Harness, tasks: Tasks, operator: Any, model_server: ModelServer
) -> None:
    operator()
    plan = {"steps": [{"name": "draft"}, {"name": "review", "dependencies": ["draft"]}]}
    await tasks.create("described", goal="Write the summary.", plan=plan)
    await tasks.create_child("described", "described-kid", "Help.")
    turn = (await tasks.wait_children_read("described"))["turn"]
    await model_server.control.script(
        [{"type": "text", "text": "One."}, {"type": "text", "text": "Two."}]
    )
    await tasks.send("described", "First.")
    await tasks.wait("described", "TASK_STATE_INPUT_REQUIRED", turn=turn + 1)
    await tasks.send("described", "Second.")
    await tasks.wait("described", "TASK_STATE_INPUT_REQUIRED", turn=turn + 2)

    got = await harness.run("get", "described", "--history", "3")

    assert got.returncode == 0, got.stderr
    text = got.stdout
    assert "Goal:" in text
    assert "Write the summary." in text
    assert "alice (assignee), bob (watcher)" in text
    assert "INPUT_REQUIRED (awaiting-next-message)" in text
    assert "scripted-model" in text
    assert "Plan: 0/2 steps done, current step: draft" in text
    assert "[>] draft" in text
    assert "[ ] review (after draft)" in text
    assert "Sub-tasks:" in text
    assert "described-kid" in text.split("Sub-tasks:")[1]
    assert "Transcript (last 3 of " in text
    transcript = text.split("Transcript (last 3 of ")[1].splitlines()[1:]
    assert [line.strip() for line in transcript] == ["agent: One.", "alice: Second.", "agent: Two."]


async def test_complete_ends_the_task(harness: Harness, tasks: Tasks, operator: Any) -> None:
    operator()
    await tasks.create("finish")
    await tasks.wait("finish", "TASK_STATE_INPUT_REQUIRED")

    done = await harness.run("complete", "finish")

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "harnesstask/finish completed"
    status = await tasks.status("finish")
    assert (status["state"], status["message"]) == ("TASK_STATE_COMPLETED", "completed by alice")


async def test_cancel_ends_the_task(harness: Harness, tasks: Tasks, operator: Any) -> None:
    operator()
    await tasks.create("drop")
    await tasks.wait("drop", "TASK_STATE_INPUT_REQUIRED")

    dropped = await harness.run("cancel", "drop")

    assert dropped.returncode == 0, dropped.stderr
    assert dropped.stdout.strip() == "harnesstask/drop cancelled"
    status = await tasks.status("drop")
    assert (status["state"], status["message"]) == ("TASK_STATE_CANCELED", "cancelled by alice")


async def test_a_watchers_complete_is_refused_and_nothing_is_sent(
    harness: Harness, tasks: Tasks, kubectl: Kubectl
) -> None:
    await tasks.create("followed")

    refused = await harness.run("complete", "followed", participant="bob")

    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        "Error: refused: bob is a watcher and may not complete the task; "
        "ask its assignee or reporter"
    )
    assert kubectl.get_json("harnessmessages")["items"] == []


async def test_a_non_member_is_told_the_task_does_not_exist(
    harness: Harness, tasks: Tasks, kubectl: Kubectl
) -> None:
    await tasks.create("private")

    for args in (("get", "private"), ("send", "private", "Let me in."), ("watch", "private")):
        refused = await harness.run(*args, participant="mallory")
        assert refused.returncode == 1, args
        assert refused.stderr.strip() == not_found("private"), args
    missing = await harness.run("get", "no-such-task", participant="mallory")
    assert missing.stderr.strip() == not_found("no-such-task")
    assert kubectl.get_json("harnessmessages")["items"] == []


async def test_a_terminal_task_refuses_a_message_naming_its_state(
    harness: Harness, tasks: Tasks, operator: Any, kubectl: Kubectl
) -> None:
    operator()
    await tasks.create("over")
    await tasks.wait("over", "TASK_STATE_INPUT_REQUIRED")
    await tasks.control("over", "complete")
    await tasks.wait("over", "TASK_STATE_COMPLETED")
    before = len(kubectl.get_json("harnessmessages")["items"])

    refused = await harness.run("send", "over", "Anyone there?")

    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        "Error: the task is in a terminal state (TASK_STATE_COMPLETED)"
    )
    assert len(kubectl.get_json("harnessmessages")["items"]) == before


async def test_the_kubeconfig_contexts_namespace_is_used_without_n(
    harness: Harness, tasks: Tasks, kubeconfig: Path, tmp_path: Path
) -> None:
    await tasks.create("here")
    elsewhere = Harness(
        kubeconfig_in(harness.namespace, kubeconfig, tmp_path / "kubeconfig"), harness.namespace
    )

    listed = await elsewhere.run("list", namespaced=False)
    in_default = await elsewhere.run("list", "-n", "default", namespaced=False)

    assert listed.returncode == 0, listed.stderr
    assert [line.split()[0] for line in listed.stdout.splitlines()] == ["NAME", "here"]
    assert in_default.returncode == 0, in_default.stderr
    assert in_default.stdout == ""
    assert "No tasks found for participant alice in the default namespace" in in_default.stderr


async def test_the_kubernetes_user_is_the_participant_unless_as_participant_is_given(
    harness: Harness, tasks: Tasks
) -> None:
    await tasks.create(
        "admins",
        participants=[{"id": ADMIN, "role": "assignee"}, {"id": "alice", "role": "watcher"}],
    )
    await tasks.create("alices")

    sent = await harness.run("send", "admins", "From the admin.", participant=None)
    hidden = await harness.run("get", "alices", participant=None)
    as_alice = await harness.run("get", "alices", "--history", "0", participant="alice")

    assert sent.returncode == 0, sent.stderr
    [message] = await tasks.messages_of("admins")
    assert (message.spec.message_id, message.spec.sender) == (sent.stdout.strip(), ADMIN)
    assert hidden.returncode == 1
    assert hidden.stderr.strip() == not_found("alices")
    assert as_alice.returncode == 0, as_alice.stderr


def needs_commands() -> None:
    if not (REPO_ROOT / "tiny_harness" / "core" / "commands").exists():
        pytest.skip("needs the command registry (tiny_harness/core/commands), not yet merged")


async def test_cmd_status_prints_the_operators_reply(
    harness: Harness, tasks: Tasks, operator: Any
) -> None:
    needs_commands()
    operator()
    await tasks.create("asked")
    await tasks.wait("asked", "TASK_STATE_INPUT_REQUIRED")

    answered = await harness.run("cmd", "asked", "/status")

    assert answered.returncode == 0, answered.stderr
    replies = [m for m in await tasks.transcript("asked") if m.metadata.get("command") == "status"]
    assert [r.text.strip() for r in replies] == [answered.stdout.strip()]
    assert "asked" in answered.stdout


async def test_a_refused_command_is_an_error(
    harness: Harness, tasks: Tasks, operator: Any, model_server: ModelServer
) -> None:
    needs_commands()
    operator()
    await tasks.create("guarded")
    await tasks.wait("guarded", "TASK_STATE_INPUT_REQUIRED")

    refused = await harness.run("cmd", "guarded", "/model", "scripted-large", participant="bob")

    assert refused.returncode == 1
    assert refused.stderr.startswith("Error: refused: ")
    assert (await tasks.status("guarded"))["model"] == "scripted-model"
    assert await model_server.control.requests() == []


async def test_an_unregistered_command_is_reported_as_reaching_the_model(
    harness: Harness, tasks: Tasks, operator: Any
) -> None:
    needs_commands()
    operator()
    await tasks.create("typo")
    await tasks.wait("typo", "TASK_STATE_INPUT_REQUIRED")

    unknown = await harness.run("cmd", "typo", "/stauts")

    assert unknown.returncode == 1
    assert unknown.stderr.startswith(
        "Error: /stauts is not a command the operator runs: it reached the model"
    )


async def test_commands_lists_the_built_in_commands(harness: Harness) -> None:
    listed = await harness.run("commands", participant=None, namespaced=False)

    assert listed.returncode == 0, listed.stderr
    names = [line.split()[0] for line in listed.stdout.splitlines()[1:]]
    assert {"/model", "/effort", "/sub-task", "/status"} <= set(names)


async def test_usage_errors_exit_with_2(harness: Harness) -> None:
    no_slash = await harness.run("cmd", "t", "status")
    no_task = await harness.run("send")

    assert no_slash.returncode == 2
    assert "'status' is not a command" in no_slash.stderr
    assert no_task.returncode == 2


async def test_watch_prints_state_changes_and_replies_and_exits_when_the_task_completes(
    harness: Harness,
    tasks: Tasks,
    operator: Any,
    model_server: ModelServer,
    followers: list[Follower],
) -> None:
    await model_server.control.script([{"type": "text", "text": "Watching you."}])
    op: OperatorProcess = operator()
    await tasks.create("watched")
    await tasks.wait("watched", "TASK_STATE_INPUT_REQUIRED")
    follower = Follower(harness.argv("watch", "watched"))
    followers.append(follower)
    eventually(
        lambda: follower.saw("watched: INPUT_REQUIRED (awaiting-next-message)"),
        within=60,
        what="watch to print the current state",
    )

    await tasks.send("watched", "Are you there?")
    eventually(lambda: follower.saw("agent: Watching you."), within=60, what="the reply")
    completed = await harness.run("complete", "watched")

    assert completed.returncode == 0, completed.stderr + op.log()[-2000:]
    assert follower.proc.wait(timeout=60) == 0
    said = follower.said()
    assert said[0] == "watched: INPUT_REQUIRED (awaiting-next-message)"
    assert "alice: Are you there?" in said
    assert "watched: WORKING" in said
    assert said.index("alice: Are you there?") < said.index("agent: Watching you.")
    assert said[-1] == "watched: COMPLETED - completed by alice"


# -- approvals -------------------------------------------------------------------------------

#: What the model asks for in the approval tests: the test MCP server's weather tool.
WEATHER_CALL = {
    "type": "tool_calls",
    "calls": [{"name": "weather__weather", "arguments": {"city": "Oslo"}, "id": "call_w1"}],
}


async def parked(
    tasks: Tasks,
    kubectl: Kubectl,
    model_server: ModelServer,
    mcp: McpServerThread,
    name: str,
    then: str = "Pack light.",
    participants: list[dict[str, str]] | None = None,
    **approval: Any,
) -> dict[str, Any]:
    """The test MCP server declared as tool server ``weather`` whose ``weather`` tool needs
    approval (``approval``: more of its policy), and a task whose model called it, parked
    awaiting approval; the model says ``then`` once it has the call's result. The operator is
    running."""
    declare(kubectl, "weather", mcp.url, approval={"tools": ["weather"], **approval})
    wait_ready(kubectl, "weather")
    await model_server.control.script([WEATHER_CALL, {"type": "text", "text": then}])
    people = {"participants": participants} if participants else {}
    await tasks.create(name, toolServers=["weather"], **people)
    await tasks.wait(name, "TASK_STATE_INPUT_REQUIRED")
    await tasks.send(name, "I am off to Oslo. What should I pack?")
    return await tasks.wait(
        name, "TASK_STATE_INPUT_REQUIRED", sub_state="awaiting-approval", turn=1, within=60
    )


async def test_approve_runs_the_waiting_call_once_and_the_model_reads_its_result(
    harness: Harness,
    tasks: Tasks,
    operator: Any,
    kubectl: Kubectl,
    model_server: ModelServer,
    mcp: McpServerThread,
) -> None:
    operator()
    await parked(tasks, kubectl, model_server, mcp, "trip")

    approved = await harness.run("approve", "trip", "weather__weather", "--reason", "Go ahead.")

    assert approved.returncode == 0, approved.stderr
    assert approved.stdout.strip() == "weather__weather was approved by alice: Go ahead."
    status = await tasks.wait("trip", "TASK_STATE_INPUT_REQUIRED", turn=2, within=60)
    assert (status["subState"], status["message"]) == ("awaiting-next-message", "Pack light.")
    assert [c.arguments for c in mcp.served("weather")] == [{"city": "Oslo"}]
    assert tool_outputs((await model_server.control.requests())[-1]) == ["Sunny in Oslo."]
    got = await harness.run("get", "trip", "--history", "4")
    assert "Approvals" not in got.stdout
    assert [line.strip() for line in got.stdout.split("Transcript (")[1].splitlines()[1:]] == [
        "alice: I am off to Oslo. What should I pack?",
        "alice: approve call_w1: Go ahead.",
        "agent: weather__weather was approved by alice: Go ahead.",
        "agent: Pack light.",
    ]

    again = await harness.run("approve", "trip", "call_w1")

    assert again.returncode == 1
    assert again.stderr.strip() == (
        "Error: refused: no call 'call_w1' waits for a decision on this task (none waits)"
    )
    assert len(mcp.served("weather")) == 1


async def test_reject_gives_the_model_the_rejection_and_the_tool_never_runs(
    harness: Harness,
    tasks: Tasks,
    operator: Any,
    kubectl: Kubectl,
    model_server: ModelServer,
    mcp: McpServerThread,
) -> None:
    operator()
    await parked(tasks, kubectl, model_server, mcp, "trip", then="Then I cannot tell.")

    rejected = await harness.run("reject", "trip", "call_w1", "--reason", "Not today.")

    assert rejected.returncode == 0, rejected.stderr
    assert rejected.stdout.strip() == "weather__weather was rejected by alice: Not today."
    status = await tasks.wait("trip", "TASK_STATE_INPUT_REQUIRED", turn=2, within=60)
    assert status["message"] == "Then I cannot tell."
    assert mcp.served("weather") == []
    [output] = tool_outputs((await model_server.control.requests())[-1])
    assert "rejected by alice" in output
    assert "Not today." in output


async def test_an_approval_with_edited_arguments_runs_the_call_with_them(
    harness: Harness,
    tasks: Tasks,
    operator: Any,
    kubectl: Kubectl,
    model_server: ModelServer,
    mcp: McpServerThread,
) -> None:
    operator()
    await parked(tasks, kubectl, model_server, mcp, "trip", allowEdit=True)

    approved = await harness.run("approve", "trip", "weather", "--arguments", '{"city": "Bergen"}')

    assert approved.returncode == 0, approved.stderr
    assert approved.stdout.strip() == "weather__weather was approved by alice with edited arguments"
    await tasks.wait("trip", "TASK_STATE_INPUT_REQUIRED", turn=2, within=60)
    assert [c.arguments for c in mcp.served("weather")] == [{"city": "Bergen"}]


async def test_decisions_the_policy_does_not_allow_are_refused_and_nothing_is_sent(
    harness: Harness,
    tasks: Tasks,
    operator: Any,
    kubectl: Kubectl,
    model_server: ModelServer,
    mcp: McpServerThread,
) -> None:
    operator()
    people = [
        {"id": "alice", "role": "assignee"},
        {"id": "bob", "role": "watcher"},
        {"id": "carol", "role": "reporter"},
    ]
    await parked(tasks, kubectl, model_server, mcp, "trip", participants=people)
    sent = len(kubectl.get_json("harnessmessages")["items"])

    by_watcher = await harness.run("approve", "trip", "call_w1", participant="bob")
    by_reporter = await harness.run("reject", "trip", "call_w1", participant="carol")
    by_stranger = await harness.run("approve", "trip", "call_w1", participant="mallory")
    no_such_call = await harness.run("approve", "trip", "call_nope")
    edited = await harness.run("approve", "trip", "call_w1", "--arguments", '{"city": "Rome"}')

    assert by_watcher.returncode == 1
    assert by_watcher.stderr.strip() == (
        "Error: refused: bob is a watcher and may not decide call 'call_w1'"
    )
    assert by_reporter.returncode == 1
    assert by_reporter.stderr.strip() == (
        "Error: refused: carol may not decide call 'call_w1' (weather__weather); it is decided "
        "by assignees or admins"
    )
    assert by_stranger.stderr.strip() == not_found("trip")
    assert no_such_call.returncode == 1
    assert no_such_call.stderr.strip() == (
        "Error: refused: no call 'call_nope' waits for a decision on this task (waiting: call_w1)"
    )
    assert edited.returncode == 1
    assert edited.stderr.strip() == (
        "Error: refused: the policy of call 'call_w1' does not allow edited arguments"
    )
    assert len(kubectl.get_json("harnessmessages")["items"]) == sent
    [waiting] = (await tasks.status("trip"))["approvals"]
    assert "decision" not in waiting
    assert mcp.served("weather") == []


async def test_a_decision_the_operator_refuses_is_an_error_with_its_reason(
    harness: Harness,
    tasks: Tasks,
    operator: Any,
    kubectl: Kubectl,
    model_server: ModelServer,
    mcp: McpServerThread,
) -> None:
    # Two decisions sent while the operator is away both pass the plugin's own check; the
    # operator takes them in the order they were sent, and refuses the second.
    op: OperatorProcess = operator()
    status = await parked(tasks, kubectl, model_server, mcp, "trip")
    park = status["approvals"][0]["park"]
    op.stop()

    async def sent(count: int) -> bool:
        return len(await tasks.messages_of("trip")) == count

    before = len(await tasks.messages_of("trip"))
    approving = asyncio.create_task(harness.run("approve", "trip", "call_w1", "--timeout", "120"))
    await eventually_async(lambda: sent(before + 1), within=30, what="the approval to be sent")
    rejecting = asyncio.create_task(harness.run("reject", "trip", "call_w1", "--timeout", "120"))
    await eventually_async(lambda: sent(before + 2), within=30, what="the rejection to be sent")
    operator()
    approved, refused = await asyncio.gather(approving, rejecting)

    assert approved.returncode == 0, approved.stderr
    assert approved.stdout.strip() == "weather__weather was approved by alice"
    assert refused.returncode == 1
    # The call is shown whole before it is decided, then the operator's refusal.
    shown, *_, error = refused.stderr.strip().splitlines()
    assert shown == f"Reject weather__weather (call call_w1 in park {park}) with:"
    assert '    "city": "Oslo"' in refused.stderr
    assert error.startswith("Error: refused: call 'call_w1' was already approved by alice at ")
    await tasks.wait("trip", "TASK_STATE_INPUT_REQUIRED", turn=2, within=60)
    assert len(mcp.served("weather")) == 1


async def test_get_list_and_kubectl_get_show_a_call_that_waits_for_approval(
    harness: Harness,
    tasks: Tasks,
    operator: Any,
    kubectl: Kubectl,
    model_server: ModelServer,
    mcp: McpServerThread,
) -> None:
    operator()
    await tasks.create("calm")
    status = await parked(tasks, kubectl, model_server, mcp, "trip")
    [waiting] = status["approvals"]

    got = await harness.run("get", "trip")
    watching = await harness.run("get", "trip", participant="bob")
    listed = await harness.run("list")
    wide = kubectl.run("get", "ht", "-o", "wide")

    assert got.returncode == 0, got.stderr
    assert "State:          INPUT_REQUIRED (awaiting-approval)" in got.stdout
    # How long is left of the default hour depends on when it is read: only its form is checked.
    until = got.stdout.split(waiting["expiresAt"] + " (in ")[1].split(";")[0]
    assert re.fullmatch(r"[0-9]+[hms][0-9ms]*", until), until
    section = got.stdout.split("Approvals (1 undecided):\n")[1].split("Transcript")[0]
    assert section.splitlines() == [
        f"  weather__weather (call call_w1, asked in turn 1, park {waiting['park']})",
        "    Arguments:   {",
        '                   "city": "Oslo"',
        "                 }",
        "    Decided by:  assignees or admins (you may decide)",
        "    Policy:      HarnessToolServer weather",
        f"    Until:       {waiting['expiresAt']} (in {until}; rejected if no one decides)",
        "    Decision:    none yet",
        "  Decide with:   kubectl harness approve trip call_w1",
        "                 kubectl harness reject trip call_w1 --reason TEXT",
    ]
    assert "    Decided by:  assignees or admins (not you)" in watching.stdout
    assert "Decide with" not in watching.stdout
    assert listed.returncode == 0, listed.stderr
    rows = [line.split("   ") for line in listed.stdout.splitlines()]
    header = listed.stdout.splitlines()[0].split()
    assert header == ["NAME", "STATE", "SUB-STATE", "LIFECYCLE", "ROLE", "APPROVALS", "AGE"]
    cells = [[c.strip() for c in row if c.strip()] for row in rows[1:]]
    assert [c[:6] for c in cells] == [
        ["trip", "INPUT_REQUIRED", "awaiting-approval", "conversation", "assignee", "1 for you"],
        ["calm", "INPUT_REQUIRED", "awaiting-next-message", "conversation", "assignee", "-"],
    ]
    assert wide.returncode == 0, wide.stderr
    lines = wide.stdout.splitlines()
    assert "APPROVAL-TOOL" in lines[0].split()
    [trip] = [line for line in lines if line.startswith("trip ")]
    assert "awaiting-approval" in trip.split()
    assert "weather__weather" in trip.split()


async def test_send_with_files_hands_them_to_the_model_and_a_too_large_one_is_refused(
    harness: Harness,
    tasks: Tasks,
    operator: Any,
    model_server: ModelServer,
    kubectl: Kubectl,
    tmp_path: Path,
) -> None:
    await model_server.control.script([{"type": "text", "text": "A chart and its notes."}])
    operator()
    await tasks.create("files")
    await tasks.wait("files", "TASK_STATE_INPUT_REQUIRED")
    chart = tmp_path / "chart.png"
    chart.write_bytes(b"\x89PNG\r\n\x1a\n chart")
    notes = tmp_path / "notes.txt"
    notes.write_text("up and to the right\n")

    sent = await harness.run(
        "send", "files", "What is this?", "--file", str(chart), "--file", str(notes), "--wait"
    )

    assert sent.returncode == 0, sent.stderr
    assert sent.stdout.splitlines()[1:] == ["A chart and its notes."]
    body = (await model_server.control.requests())[-1].body
    content = next(i for i in body["input"] if i.get("role") == "user")["content"]
    png = base64.b64encode(chart.read_bytes()).decode()
    assert content[1:] == [
        {"type": "input_image", "image_url": f"data:image/png;base64,{png}", "detail": "auto"},
        {
            "type": "input_text",
            "text": "Contents of notes.txt (text/plain):\nup and to the right\n",
        },
    ]

    big = tmp_path / "big.log"
    big.write_bytes(b"x" * (FILE_BYTES + 1))
    before = len(kubectl.get_json("harnessmessages")["items"])
    refused = await harness.run("send", "files", "and this", "--file", str(big))
    missing = await harness.run("send", "files", "and this", "--file", str(tmp_path / "nope.pdf"))

    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        f"Error: refused: {big} is 192 KiB, and a message may carry a file of at most 192 KiB "
        "(this installation has no file store)"
    )
    assert missing.returncode == 1
    assert (
        missing.stderr.strip()
        == f"Error: cannot read {tmp_path / 'nope.pdf'}: No such file or directory"
    )
    assert len(kubectl.get_json("harnessmessages")["items"]) == before


# -- untrusted text is shown, never obeyed ---------------------------------------------------

#: A cleared screen, a clipboard write (OSC 52), a red "notice", a right-to-left override.
HOSTILE = "\x1b[2J\x1b]52;c;cm0gLXJmIH4=\x07\x1b[31mSECURITY NOTICE\x1b[0m report\u202efdp.exe"
HOSTILE_SHOWN = (
    "\\x1b[2J\\x1b]52;c;cm0gLXJmIH4=\\x07\\x1b[31mSECURITY NOTICE\\x1b[0m report\\u202efdp.exe"
)


def obeyable(text: str) -> list[str]:
    """The characters of ``text`` a terminal would act on (newline aside)."""
    return [c for c in text if c in "\x1b\x07\x9b\r" or 0x202A <= ord(c) <= 0x202E]


async def test_get_and_watch_show_escape_sequences_in_participant_and_model_text_literally(
    harness: Harness,
    tasks: Tasks,
    operator: Any,
    model_server: ModelServer,
    followers: list[Follower],
) -> None:
    await model_server.control.script([{"type": "text", "text": f"agent says {HOSTILE}"}])
    operator()
    await tasks.create("hostile", goal=f"Goal {HOSTILE}")
    await tasks.wait("hostile", "TASK_STATE_INPUT_REQUIRED")
    await tasks.send("hostile", f"alice says {HOSTILE}")
    await tasks.wait("hostile", "TASK_STATE_INPUT_REQUIRED", turn=1)

    got = await harness.run("get", "hostile", "--history", "5")

    assert got.returncode == 0, got.stderr
    assert obeyable(got.stdout) == []
    assert f"Goal {HOSTILE_SHOWN}" in got.stdout
    assert f"alice: alice says {HOSTILE_SHOWN}" in got.stdout
    assert f"agent: agent says {HOSTILE_SHOWN}" in got.stdout

    follower = Follower(harness.argv("watch", "hostile", "--history", "5"))
    followers.append(follower)
    eventually(
        lambda: follower.saw(f"agent: agent says {HOSTILE_SHOWN}"),
        within=60,
        what="watch to print the agent's reply, literally",
    )
    follower.stop()
    assert f"alice: alice says {HOSTILE_SHOWN}" in follower.said()
    assert all(obeyable(line) == [] for line in follower.lines)
