"""The Event the operator posts on a task: what ``kubectl describe`` and ``get events`` show."""

from __future__ import annotations

from tiny_harness.kube.events import COMPONENT, event_body


def test_an_event_names_the_task_and_says_what_happened() -> None:
    task = {"metadata": {"name": "trip", "namespace": "team", "uid": "u-1"}}
    body = event_body(task, "Initialised", "accepted as a conversation task", warning=False,
                      instance="replica-a")  # fmt: skip
    assert body["involvedObject"]["kind"] == "HarnessTask"
    assert body["involvedObject"]["name"] == "trip"
    assert body["involvedObject"]["uid"] == "u-1"
    assert body["metadata"]["namespace"] == "team"
    assert body["metadata"]["name"].startswith("trip.")
    assert (body["reason"], body["type"]) == ("Initialised", "Normal")
    assert body["source"] == {"component": COMPONENT}
    assert body["reportingInstance"] == "replica-a"


def test_two_events_of_one_task_have_names_of_their_own_and_a_warning_says_so() -> None:
    task = {"metadata": {"name": "trip", "namespace": "team"}}
    one = event_body(task, "Rejected", "x" * 5000, warning=True, instance="r")
    two = event_body(task, "Rejected", "again", warning=True, instance="r")
    assert one["metadata"]["name"] != two["metadata"]["name"]
    assert one["type"] == "Warning"
    assert len(one["message"]) == 1024


async def test_an_api_server_that_cannot_be_reached_costs_the_worker_nothing_but_a_log() -> None:
    from kubernetes_asyncio import client

    from tiny_harness.kube.events import post_event

    config = client.Configuration(host="http://127.0.0.1:9")  # the discard port: refused
    async with client.ApiClient(config) as api:
        await post_event(api, {"metadata": {"name": "trip", "namespace": "team"}}, "Completed", "x")
