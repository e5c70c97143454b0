"""What a cluster does to the install: pods deleted mid-turn and mid-stream, replicas killed,
the release upgraded under traffic. Afterwards every message is answered once, a model call
the journal holds is not made again, and a client that reconnects sees the task as it is."""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.request
from typing import Any

from a2a.client import ClientCallContext
from a2a.types import StreamResponse, SubscribeToTaskRequest

from tests.cluster.conftest import NodeModelServer, Release, rolled_out, wait_for_state
from tests.cluster.test_install import harness
from tests.eventually import eventually, eventually_async
from tests.integration.gateway_support import A2AUser, states, task_id_of, text_message
from tiny_harness.a2a_gateway.rendering import version_of
from tiny_harness.testing.model_script import ScriptedToolCall, TextTurn, ToolCallsTurn


def create_task(release: Release, name: str) -> None:
    manifest = {
        "apiVersion": "tiny-harness.madarauchiha-314.github.io/v1alpha1",
        "kind": "HarnessTask",
        "metadata": {"name": name},
        "spec": {
            "goal": f"Help with {name}.",
            "participants": [{"id": "alice", "role": "assignee"}],
        },
    }
    applied = release.kubectl.apply(json.dumps(manifest))
    assert applied.returncode == 0, applied.stderr
    wait_for_state(release.kubectl, name, "TASK_STATE_INPUT_REQUIRED")


def transcript(release: Release, name: str) -> list[str]:
    """The transcript lines ``kubectl harness get`` prints (``alice: ...``, ``agent: ...``)."""
    out = harness(release, "get", name)
    lines = out.split("\nTranscript", 1)[1].splitlines()[1:]
    said: list[str] = []
    for line in lines:
        if not line.startswith(" "):
            break
        said.append(line.strip())
    return said


def of_task(request: Any, task: str) -> bool:
    instructions = str((request.body or {}).get("instructions", ""))
    return instructions.startswith(f"You are the agent working on task {task}.")


def gateway_answers(release: Release) -> bool:
    try:
        with urllib.request.urlopen(f"{release.gateway_url}/healthz", timeout=2) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


def delete_pod(release: Release, pod: dict[str, Any], *force: str) -> None:
    release.kubectl.run("delete", "pod", pod["metadata"]["name"], "--wait=false", *force)


async def test_the_operator_pod_deleted_mid_turn_leaves_the_turn_to_its_replacement(
    release: Release, model: NodeModelServer
) -> None:
    name = "mid-turn"
    create_task(release, name)
    plan = {"steps": [{"name": "greet", "description": "Say hello."}]}
    await model.control.script(
        [
            ToolCallsTurn(calls=[ScriptedToolCall(name="create_plan", arguments=plan)]),
            # The turn's second call is still waiting for its answer when the pod goes.
            TextTurn(text="Too late.", delay_seconds=60),
            TextTurn(text="Planned, and hello."),
        ]
    )
    harness(release, "send", name, "Plan it, then say hello.")

    async def second_call_in_flight() -> bool:
        return len([r for r in await model.control.requests() if of_task(r, name)]) >= 2

    await eventually_async(second_call_in_flight, within=60, what="the turn's second model call")
    (doomed,) = release.pods("operator")
    delete_pod(release, doomed)

    status = wait_for_state(release.kubectl, name, "TASK_STATE_INPUT_REQUIRED", turn=1, within=180)
    assert [step["name"] for step in status["plan"]["steps"]] == ["greet"]
    calls = [r for r in await model.control.requests() if of_task(r, name)]
    first = [r for r in calls if "function_call_output" not in json.dumps(r.body["input"])]
    assert len(first) == 1, "the journaled first call was made again"
    assert transcript(release, name) == [
        "alice: Plan it, then say hello.",
        "agent: Planned, and hello.",
    ]
    (replacement,) = release.pods("operator")
    assert replacement["metadata"]["name"] != doomed["metadata"]["name"]


async def test_the_gateway_pod_deleted_while_a_stream_is_open_the_client_resumes(
    release: Release, model: NodeModelServer
) -> None:
    """The client reconnects with the id of the last event it read (``Last-Event-ID``) and is
    sent what happened while no gateway served: the turn it missed, then the live changes."""
    alice = await A2AUser.connect(release.gateway_url, "alice")
    try:
        task_id = task_id_of(await alice.stream(text_message("Stay with me.")))
        stream = alice.subscribe(task_id)
        first = await anext(stream)
        assert first.HasField("task")
        last_read = version_of(first.task)
        assert last_read is not None

        (doomed,) = release.pods("gateway")
        delete_pod(release, doomed)
        # The open stream ends (or breaks) when its pod goes; nothing arrives on it after.
        async with asyncio.timeout(90):
            try:
                async for _ in stream:
                    pass
            except Exception:
                pass
        # While no gateway serves, the task moves on through kubectl.
        await model.control.script([TextTurn(text="Still here.")])
        harness(release, "send", task_id, "Are you there?", "--wait")
        rolled_out(release.kubectl)
        # Ready is not yet routed: the Service's endpoints and kube-proxy's rules follow.
        eventually(lambda: gateway_answers(release), within=60, what="the new gateway pod")

        task = await alice.get(task_id)
        texts = ["".join(p.text for p in m.parts) for m in task.history]
        assert texts[-2:] == ["Are you there?", "Still here."]
        again = alice.client.subscribe(
            SubscribeToTaskRequest(id=task_id),
            context=ClientCallContext(service_parameters={"Last-Event-ID": str(last_read)}),
        )
        missed: list[StreamResponse] = []
        async with asyncio.timeout(90):
            async for event in again:
                missed.append(event)
                if event.HasField("status_update") and said_of(event) == "Still here.":
                    break
        # What it missed, in order, each once: the turn started (and its progress), then its
        # answer.
        seen_states = states(missed)
        assert seen_states[0] == "TASK_STATE_WORKING"
        assert seen_states[-1] == "TASK_STATE_INPUT_REQUIRED"
        assert set(seen_states[:-1]) == {"TASK_STATE_WORKING"}
        versions = [version_of(e.status_update) for e in missed]
        assert all(v is not None and v > last_read for v in versions)
        assert versions == sorted(set(versions))
        await model.control.script([TextTurn(text="Back on the stream.")])
        harness(release, "send", task_id, "Good.")
        seen: list[str] = []
        async with asyncio.timeout(90):
            async for event in again:
                seen += states([event])
                if event.HasField("message") or seen[-2:] == [
                    "TASK_STATE_WORKING",
                    "TASK_STATE_INPUT_REQUIRED",
                ]:
                    break
        assert "TASK_STATE_WORKING" in seen
    finally:
        await alice.close()


def test_helm_upgrade_under_traffic_loses_no_message_and_repeats_no_turn(
    release: Release,
) -> None:
    name = "upgraded"
    create_task(release, name)
    harness(release, "send", name, "one", "--wait")
    upgrade = threading.Thread(target=release.upgrade, kwargs={"operator.maxModelCalls": 20})
    upgrade.start()
    harness(release, "send", name, "two")
    upgrade.join(timeout=300)
    assert not upgrade.is_alive()
    # The message sent during the rollout is answered by its own turn; only then the next, so
    # that the two are never taken together.
    wait_for_state(release.kubectl, name, "TASK_STATE_INPUT_REQUIRED", turn=2, within=180)
    harness(release, "send", name, "three")

    status = wait_for_state(release.kubectl, name, "TASK_STATE_INPUT_REQUIRED", turn=3, within=180)
    assert status["turn"] == 3
    assert transcript(release, name) == [
        "alice: one",
        "agent: Done.",
        "alice: two",
        "agent: Done.",
        "alice: three",
        "agent: Done.",
    ]
    settings = release.kubectl.get_json("configmap", "tiny-harness-settings")["data"]
    assert "max_model_calls = 20" in settings["config.toml"]


def test_two_sharded_operator_replicas_one_killed_every_task_is_still_answered(
    release: Release,
) -> None:
    release.upgrade(**{"operator.replicas": 2})
    names = [f"shard-{i}" for i in range(4)]
    for name in names:
        create_task(release, name)

    def shards_split() -> set[str] | None:
        """The shard leases' holders, once both replicas hold some (the deal takes a lease
        period or two after the second replica joins)."""
        leases = release.kubectl.get_json("leases")["items"]
        holders = {
            str(lease["spec"].get("holderIdentity"))
            for lease in leases
            if "-shard-" in lease["metadata"]["name"]
        }
        return holders if len(holders - {"None"}) == 2 else None

    eventually(shards_split, within=120, what="the shards split between the two replicas")

    doomed, _ = release.pods("operator")
    delete_pod(release, doomed, "--grace-period=0", "--force")
    for name in names:
        harness(release, "send", name, "after the kill")
    for name in names:
        wait_for_state(release.kubectl, name, "TASK_STATE_INPUT_REQUIRED", turn=1, within=180)
        assert transcript(release, name) == ["alice: after the kill", "agent: Done."]
    release.upgrade(**{"operator.replicas": 1})

    def one_pod() -> bool:
        return len(release.pods("operator")) == 1

    eventually(one_pod, within=120, what="the operator back to one replica")


def said_of(event: StreamResponse) -> str:
    return "".join(p.text for p in event.status_update.status.message.parts)
