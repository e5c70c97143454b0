"""Faults injected into real operator processes: SIGKILL at every journal boundary of a turn
that calls a tool and spawns a child, SIGSTOP of a replica past its lease while another takes
the turn over, and the API server or etcd restarted mid-turn. Afterwards the turn completes,
no tool ran twice, no model call recorded in a journal was repeated, and no message was lost
or taken twice."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tests.conftest import ModelServer, OperatorProcess, operator_config
from tests.eventually import NotYet, eventually, eventually_async
from tests.integration.lifecycle_support import Tasks
from tiny_harness.devcluster import LocalCluster
from tiny_harness.kube.admission import local_policy
from tiny_harness.kube.client import connect
from tiny_harness.kube.crd import REPO_ROOT
from tiny_harness.kube.names import GROUP, MESSAGE_PLURAL, PLURAL, TURN_PLURAL, VERSION

pytestmark = pytest.mark.controlplane

Operator = Callable[..., OperatorProcess]
TOOLS = ["tests.integration.sidefx_tools:TOOLS"]


def inputs(request: Any) -> str:
    return json.dumps((request.body or {}).get("input", []))


def of_task(request: Any, task: str) -> bool:
    body = request.body or {}
    return str(body.get("instructions", "")).startswith(
        f"You are the agent working on task {task}."
    )


def first_calls(requests: list[Any], task: str) -> list[Any]:
    """The task's requests for model call 0 of its first turn: no tool output yet."""
    return [
        r
        for r in requests
        if of_task(r, task) and "function_call_output" not in inputs(r) and "Note:" not in inputs(r)
    ]


def died(op: OperatorProcess, within: float = 30.0) -> None:
    assert op.proc is not None
    eventually(
        lambda: op.proc is not None and op.proc.poll() is not None,
        within=within,
        what="the operator to hit its failpoint",
    )


def stopped(op: OperatorProcess, within: float = 30.0) -> None:
    assert op.proc is not None
    pid = op.proc.pid

    def state() -> bool:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("State:"):
                return "T" in line.split()[1]
        return False

    eventually(state, within=within, what="the operator to stop itself at its failpoint")


#: The parent's journal writes in its first turn: [drain, model-0 asking for two tools],
#: the `record` tool's result, the spawn's result, and the turn's end with the history.
BOUNDARIES = (1, 2, 3, 4)


@pytest.mark.parametrize("boundary", BOUNDARIES)
async def test_sigkill_at_every_journal_boundary_repeats_nothing(
    tasks: Tasks,
    operator: Operator,
    model_server: ModelServer,
    tmp_path: Path,
    boundary: int,
) -> None:
    ledger = tmp_path / "ledger"
    ledger.touch()
    await model_server.control.script(
        [
            {
                "type": "tool_calls",
                "calls": [
                    {"name": "record", "arguments": {"note": "once"}},
                    {"name": "spawn_subtask", "arguments": {"goal": "Count to three."}},
                ],
            },
        ]
    )
    env = {"TINY_HARNESS_TEST_SIDEFX": str(ledger)}
    doomed = operator(
        env={**env, "TINY_HARNESS_FAILPOINT": f"kill-after-write:{boundary}@boss"}, tools=TOOLS
    )
    await tasks.create("boss")
    await tasks.wait("boss", "TASK_STATE_INPUT_REQUIRED")
    await tasks.send("boss", "Record it and delegate the counting.")
    died(doomed)

    operator(env=env, tools=TOOLS)
    status = await tasks.wait("boss", "TASK_STATE_INPUT_REQUIRED", turn=1, within=40)

    assert status.get("subState") == "awaiting-next-message"
    assert ledger.read_text().count("once") == 1
    assert len(await tasks.children("boss")) == 1
    requests = await model_server.control.requests()
    assert len(first_calls(requests, "boss")) == 1
    said = [m.text for m in await tasks.transcript("boss") if m.role == "user"]
    assert said.count("Record it and delegate the counting.") == 1


async def test_a_replica_stopped_past_its_lease_writes_nothing_after_it_wakes(
    tasks: Tasks,
    operator: Operator,
    model_server: ModelServer,
    tmp_path: Path,
    api: Any,
    namespace: str,
) -> None:
    ledger = tmp_path / "ledger"
    ledger.touch()
    await model_server.control.script(
        [
            {
                "type": "tool_calls",
                "calls": [
                    {"name": "record", "arguments": {"note": "first"}},
                    {"name": "record", "arguments": {"note": "second"}},
                ],
            },
            {"type": "text", "text": "Both recorded."},
        ]
    )
    env = {"TINY_HARNESS_TEST_SIDEFX": str(ledger)}
    sleeper = operator(
        identity="operator-a",
        env={**env, "TINY_HARNESS_FAILPOINT": "stop-after-write:2@shared"},
        tools=TOOLS,
        lease_seconds=3,
    )
    await tasks.create("shared")
    await tasks.wait("shared", "TASK_STATE_INPUT_REQUIRED")
    await tasks.send("shared", "Record both.")
    # A stops itself right after checkpointing the first tool's result.
    stopped(sleeper)
    operator(identity="operator-b", env=env, tools=TOOLS, lease_seconds=3)
    status = await tasks.wait("shared", "TASK_STATE_INPUT_REQUIRED", turn=1, within=40)
    assert status["message"] == "Both recorded."

    before = await snapshot(tasks, "shared")
    assert sleeper.proc is not None
    sleeper.proc.send_signal(signal.SIGCONT)
    await asyncio.sleep(4)  # longer than A's lease: every timer it had has fired
    after = await snapshot(tasks, "shared")

    assert after == before, "the replica that lost the lease wrote after it woke"
    notes = [line.split()[-1] for line in ledger.read_text().splitlines()]
    assert sorted(notes) == ["first", "second"]
    requests = await model_server.control.requests()
    assert len(first_calls(requests, "shared")) == 1
    assert len(requests) == 2


async def test_a_replica_stopped_by_sigterm_mid_turn_leaves_the_turn_to_the_next(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    """SIGTERM while a turn waits on its model: the operator stops, the turn open in its
    journal (not closed as if a participant had cut it, which would lose the reply), and the
    next replica resumes it once the lease runs out and gives the reply."""
    await model_server.control.script(
        [
            {"type": "text", "text": "Too slow.", "delay_seconds": 60},
            {"type": "text", "text": "Here it is.", "when": "Answer me."},
        ]
    )
    first = operator(identity="operator-a", lease_seconds=3)
    await tasks.create("steady")
    await tasks.wait("steady", "TASK_STATE_INPUT_REQUIRED")
    await tasks.send("steady", "Answer me.")
    await tasks.wait("steady", "TASK_STATE_WORKING", running=True)
    await eventually_async(model_server.control.requests, within=30, what="a model call")

    first.stop(signal.SIGTERM)  # a process still there after 15 s is killed (-9)
    assert first.proc is not None
    assert first.proc.returncode == 143, first.log()[-2000:]

    records = await tasks.records_of("steady")
    assert not any(r.history is not None for r in records if r.turn == 1), records
    operator(identity="operator-b", lease_seconds=3)
    status = await tasks.wait("steady", "TASK_STATE_INPUT_REQUIRED", turn=1, within=40)
    assert status["message"] == "Here it is."


async def snapshot(tasks: Tasks, name: str) -> tuple[str, list[tuple[str, int]]]:
    """The task's status version and every turn record's name and entry count."""
    obj = await tasks.tasks.get(name)
    records = await tasks.records_of(name)
    return obj["metadata"]["resourceVersion"], [(r.name, len(r.entries)) for r in records]


# -- outages: a control plane of the test's own, so its restarts disturb no other test --------


OUTAGE_NAMESPACE = "outage"


@pytest.fixture
def own_cluster() -> Iterator[LocalCluster]:
    """A control plane of the test's own, with the namespace ``outage`` in it."""
    with LocalCluster(crds=REPO_ROOT / "crds", admission=local_policy()) as c:
        subprocess.run(
            ["kubectl", f"--kubeconfig={c.kubeconfig}", "create", "namespace", OUTAGE_NAMESPACE],
            check=True,
            capture_output=True,
        )
        yield c


@pytest.mark.parametrize("component", ["kube-apiserver", "etcd"])
async def test_a_turn_survives_a_control_plane_restart_mid_turn(
    own_cluster: LocalCluster, model_server: ModelServer, tmp_path: Path, component: str
) -> None:
    namespace = OUTAGE_NAMESPACE
    # A lease the outage cannot outlast: a turn cut for its lease is asked again too, and how
    # long a restart takes on a loaded machine is not this test's to bound.
    config = operator_config(tmp_path / "config.toml", model_server.url, lease_seconds=30)
    op = OperatorProcess(own_cluster.kubeconfig, namespace, tmp_path, config).start()
    api = await connect(own_cluster.kubeconfig)
    try:
        tasks = Tasks(api, namespace)
        await model_server.control.script(
            [{"type": "text", "text": "Survived.", "delay_seconds": 2}]
        )
        await tasks.create("steady")
        await tasks.wait("steady", "TASK_STATE_INPUT_REQUIRED")
        await tasks.send("steady", "Hold on.")
        await eventually_async(
            model_server.control.requests, within=20, what="the model call", interval=0.02
        )

        await asyncio.to_thread(own_cluster.restart, component, down_seconds=2)

        status = await tasks.wait("steady", "TASK_STATE_INPUT_REQUIRED", turn=1, within=60)
        said = [(m.role, m.text) for m in await tasks.transcript("steady")]
        assert said.count(("user", "Hold on.")) == 1
        assert [role for role, _ in said] == ["user", "agent"]
        assert status["message"] == said[-1][1]
        # The answer in flight during the outage may be asked for again, never more.
        assert 1 <= len(await model_server.control.requests()) <= 2
    finally:
        await api.close()
        op.stop()


async def test_a_task_whose_time_to_live_runs_out_during_an_outage_is_collected_after_it(
    own_cluster: LocalCluster, model_server: ModelServer, tmp_path: Path
) -> None:
    """The wake-up at the end of a finished task's time to live comes while kube-apiserver is
    down: the deletion waits the outage out instead of failing, and happens after it. The
    operator runs sharded, so its shard hold lapses during the outage too: the wake-up it
    dropped meanwhile is delivered when the hold is renewed."""
    namespace = OUTAGE_NAMESPACE
    config = operator_config(
        tmp_path / "config.toml", model_server.url, shards=4, lease_namespace=namespace
    )
    op = OperatorProcess(own_cluster.kubeconfig, namespace, tmp_path, config).start()
    api = await connect(own_cluster.kubeconfig)
    try:
        tasks = Tasks(api, namespace)
        await model_server.control.script([{"type": "text", "text": "Done."}])
        await tasks.create("brief", ttlSecondsAfterFinished=2)
        await tasks.send("brief", "Say done.")
        await tasks.wait("brief", "TASK_STATE_INPUT_REQUIRED", turn=1, within=60)
        await tasks.control("brief", "complete")
        await tasks.wait("brief", "TASK_STATE_COMPLETED", within=60)

        # Down from about 1 s after the end until well past the 2 s time to live, and past
        # the operator's shard hold (0.8 of its 6 s lease).
        await asyncio.sleep(1)
        await asyncio.to_thread(own_cluster.restart, "kube-apiserver", down_seconds=6)

        objects = client.CustomObjectsApi(api)

        async def collected() -> bool | NotYet:
            counts = {}
            for plural in (PLURAL, MESSAGE_PLURAL, TURN_PLURAL):
                listed = await objects.list_namespaced_custom_object(
                    GROUP, VERSION, namespace, plural
                )
                counts[plural] = len(listed["items"])
            return NotYet(counts) if any(counts.values()) else True

        await eventually_async(
            collected,
            within=60,
            what="the task and all it owns to be collected after the outage",
            interval=0.2,
            not_yet=(ApiException,),  # the API server just restarted: its caches warm up
        )
        # The hold lapsed in the outage, and the wake-up it dropped was delivered after it.
        assert "held again after a lapse" in op.log()
    finally:
        await api.close()
        op.stop()
