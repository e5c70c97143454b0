"""The quota decision as a pure function: a write is refused when it would pass a quota, never
at the limit itself; only what a write adds is asked about; a participant's quota before the
namespace's; a refusal names the quota, its setting and the count, and is a 429 unless one
message could never fit (413). And the size every message is held to, refused before any quota.
"""

from __future__ import annotations

import pytest
from a2a.utils.errors import InvalidParamsError, UnsupportedOperationError

from tiny_harness.a2a_gateway.quotas import (
    Demand,
    Quota,
    Refused,
    Usage,
    quotas,
    refusal,
    too_large,
)
from tiny_harness.core.inbox import MessagePart, MessageSpec
from tiny_harness.core.settings import GatewaySettings
from tiny_harness.core.sizes import MESSAGE_BYTES

KIB = 1024
SMALL = quotas(
    GatewaySettings(
        namespace="team",
        max_messages_per_participant=3,
        max_message_bytes_per_participant=100 * KIB,
        max_live_tasks_per_participant=2,
        max_messages_per_namespace=10,
        max_message_bytes_per_namespace=1024 * KIB,
        max_live_tasks_per_namespace=5,
    )
)


def decide(demand: Demand, mine: Usage, everyone: Usage | None = None) -> Quota | None:
    refused = refusal(
        SMALL,
        demand,
        participant="alice",
        namespace="team",
        mine=mine,
        everyone=everyone or mine,
    )
    return None if refused is None else refused.quota


def test_the_defaults_keep_a_participant_to_a_part_of_the_namespace() -> None:
    limits = {q.setting: q.limit for q in quotas(GatewaySettings())}

    assert limits == {
        "gateway.max_live_tasks_per_participant": 100,
        "gateway.max_live_tasks_per_namespace": 1_000,
        "gateway.max_messages_per_participant": 10_000,
        "gateway.max_messages_per_namespace": 100_000,
        "gateway.max_message_bytes_per_participant": 32 * 1024 * KIB,
        "gateway.max_message_bytes_per_namespace": 128 * 1024 * KIB,
    }


@pytest.mark.parametrize(("stored", "refused"), [(0, False), (2, False), (3, True), (7, True)])
def test_a_message_is_taken_up_to_the_limit_and_refused_past_it(stored: int, refused: bool) -> None:
    quota = decide(Demand((10,)), Usage(messages=stored))

    assert (quota is not None) == refused
    if quota is not None:
        assert quota.setting == "gateway.max_messages_per_participant"


def test_only_what_a_write_adds_is_asked_about() -> None:
    """Past the live-task quota (an overrun between replicas), a message to a task passes;
    a new task does not."""
    over = Usage(messages=1, live_tasks=4)

    assert decide(Demand((10,)), over) is None
    assert decide(Demand((10,), tasks=1), over) == Quota("live_tasks", "participant", 2)
    assert decide(Demand(), Usage(messages=99, message_bytes=10**9, live_tasks=99)) is None


def test_a_new_task_is_asked_about_its_task_before_its_message() -> None:
    full = Usage(messages=3, live_tasks=2)

    assert decide(Demand((10,), tasks=1), full) == Quota("live_tasks", "participant", 2)


def test_a_participant_with_room_is_refused_when_the_namespace_has_none() -> None:
    mine = Usage(messages=1, message_bytes=10, live_tasks=1)

    assert decide(Demand((10,)), mine, Usage(messages=10)) == Quota("messages", "namespace", 10)
    assert decide(Demand((10,), tasks=1), mine, Usage(live_tasks=5)) == Quota(
        "live_tasks", "namespace", 5
    )
    assert decide(Demand((10,)), mine, Usage(message_bytes=1024 * KIB)) == Quota(
        "message_bytes", "namespace", 1024 * KIB
    )


def test_the_bytes_of_every_message_of_a_write_are_counted_together() -> None:
    mine = Usage(messages=0, message_bytes=40 * KIB)

    assert decide(Demand((30 * KIB,)), mine) is None
    assert decide(Demand((30 * KIB, 31 * KIB)), mine) == Quota(
        "message_bytes", "participant", 100 * KIB
    )


def test_a_refusal_names_the_quota_its_setting_and_the_count_and_says_what_to_do() -> None:
    messages = refusal(
        SMALL,
        Demand((10,)),
        participant="alice",
        namespace="team",
        mine=Usage(messages=3),
        everyone=Usage(messages=3),
    )
    namespace = refusal(
        SMALL,
        Demand((10,), tasks=1),
        participant="alice",
        namespace="team",
        mine=Usage(),
        everyone=Usage(live_tasks=5),
    )
    size = refusal(
        SMALL,
        Demand((30 * KIB,)),
        participant="alice",
        namespace="team",
        mine=Usage(message_bytes=90 * KIB),
        everyone=Usage(message_bytes=90 * KIB),
    )

    assert messages is not None
    assert namespace is not None
    assert size is not None
    assert messages.message == (
        "quota exceeded: alice keeps 3 messages stored, the most a participant may keep "
        "(gateway.max_messages_per_participant = 3); a task's messages are deleted with it, "
        "when it has ended and its time to live has passed: end the tasks you are done with "
        "(complete or cancel them), and send again once they are deleted"
    )
    assert messages.status == 429
    assert messages.data == {
        "reason": "over_quota",
        "quota": "gateway.max_messages_per_participant",
        "limit": "3",
        "count": "3",
        "adding": "1",
        "scope": "participant",
    }
    assert namespace.message == (
        "quota exceeded: namespace team has 5 live tasks, the most a namespace may have "
        "(gateway.max_live_tasks_per_namespace = 5); ask an administrator to delete ended tasks "
        "or to raise the quota"
    )
    assert size.message.startswith(
        "quota exceeded: the messages alice keeps stored carry 90 KiB and this send 30 KiB, "
        "more than a participant's messages may carry "
        "(gateway.max_message_bytes_per_participant = 100 KiB); "
    )
    assert size.status == 429


def test_a_message_bigger_than_a_whole_bytes_quota_is_a_413_since_no_room_can_be_made() -> None:
    refused = refusal(
        SMALL,
        Demand((120 * KIB,)),
        participant="alice",
        namespace="team",
        mine=Usage(),
        everyone=Usage(),
    )

    assert refused is not None
    assert refused.status == 413
    assert refused.message == (
        "refused: the message carries 120 KiB, more than all of a participant's messages may "
        "carry (gateway.max_message_bytes_per_participant = 100 KiB): split it into several "
        "messages, or send a link to it"
    )


def test_a_quota_refusal_is_an_unsupported_operation_with_its_data() -> None:
    refused = refusal(
        SMALL,
        Demand((10,)),
        participant="alice",
        namespace="team",
        mine=Usage(messages=3),
        everyone=Usage(messages=3),
    )
    assert refused is not None

    raised = Refused.by_quota(refused)

    assert isinstance(raised.error, UnsupportedOperationError)
    assert (raised.status, raised.outcome) == (429, "over_quota")
    assert raised.error.message == refused.message
    assert raised.error.data == refused.data


def spec(*texts: str, data: dict[str, object] | None = None) -> MessageSpec:
    parts = [MessagePart(text=t) for t in texts]
    if data is not None:
        parts.append(MessagePart(data=data))
    return MessageSpec(task="t", message_id="m", sender="alice", parts=tuple(parts))


def test_a_message_over_the_size_of_a_message_is_an_invalid_params_413_saying_the_limit() -> None:
    half = "a" * (MESSAGE_BYTES // 2)

    fits = too_large(spec(half, half))
    over = too_large(spec(half, half, "b" * 4 * KIB))
    by_data = too_large(spec(half, data={"log": half}))

    assert fits is None
    assert over is not None
    assert by_data is not None
    assert isinstance(over.error, InvalidParamsError)
    assert (over.status, over.outcome) == (413, "too_large")
    assert over.error.message == (
        "refused: the message carries 260 KiB, and a message may carry at most 256 KiB: "
        "split it into several messages, or send a link to it"
    )
