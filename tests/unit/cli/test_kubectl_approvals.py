"""``kubectl harness`` and the calls that wait for approval, without a cluster: what
``approve`` and ``reject`` accept on the command line, how CALL is found among a task's calls,
and how ``get`` and ``list`` show the calls (pure functions over stored objects)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from tiny_harness.cli import kubectl_render as render
from tiny_harness.cli.kubectl_plugin import build_parser, main
from tiny_harness.cli.kubectl_session import (
    AmbiguousCallError,
    Said,
    call_named,
    with_decisions,
)
from tiny_harness.core.approval import (
    ApprovalDefaults,
    ApprovalPolicy,
    Decision,
    DecisionRequest,
    PendingApproval,
    Requirement,
    requirement_of,
    shown_arguments,
)
from tiny_harness.core.history import TranscriptMessage
from tiny_harness.core.inbox import MessagePart, MessageSpec
from tiny_harness.core.task import Role
from tiny_harness.kube.messages import StoredMessage

NOW = dt.datetime(2026, 12, 2, 6, 0, 0, tzinfo=dt.UTC)
DEFAULTS = ApprovalDefaults()
BY_DEFAULT = requirement_of([("HarnessToolServer weather", ApprovalPolicy())], DEFAULTS)
PEOPLE = [
    {"id": "alice", "role": "assignee"},
    {"id": "bob", "role": "watcher"},
    {"id": "carol", "role": "reporter"},
]


def pending(
    call_id: str = "call_w1",
    tool: str = "weather__weather",
    arguments: dict[str, Any] | None = None,
    requirement: Requirement | None = BY_DEFAULT,
    decision: Decision | None = None,
    expires_at: str = "2026-12-02T07:00:00Z",
) -> PendingApproval:
    assert requirement is not None
    return PendingApproval(
        call_id=call_id,
        tool=tool,
        arguments={"city": "Oslo"} if arguments is None else arguments,
        turn=1,
        requirement=requirement,
        expires_at=expires_at,
        decision=decision,
    )


def task(name: str, *calls: PendingApproval, parent: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"goal": f"Help with {name}.", "participants": PEOPLE}
    if parent is not None:
        spec["parent"] = {"taskId": parent}
    status: dict[str, Any] = {"state": "TASK_STATE_INPUT_REQUIRED", "turn": 1}
    if calls:
        status["subState"] = "awaiting-approval"
        status["approvals"] = [
            c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in calls
        ]
    return {
        "metadata": {
            "name": name,
            "namespace": "team",
            "creationTimestamp": "2026-12-02T05:59:00Z",
        },
        "spec": spec,
        "status": status,
    }


# -- the command line ------------------------------------------------------------------------


def test_approve_takes_a_reason_and_arguments_as_a_json_object() -> None:
    args = build_parser().parse_args(
        ["approve", "trip", "call_w1", "--reason", "Fine.", "--arguments", '{"city": "Bergen"}']
    )

    assert (args.command, args.task, args.call, args.reason) == (
        "approve",
        "trip",
        "call_w1",
        "Fine.",
    )
    assert args.arguments == {"city": "Bergen"}
    assert args.timeout == 30.0


def test_reject_takes_a_reason_and_no_arguments() -> None:
    args = build_parser().parse_args(["reject", "trip", "weather", "--reason", "No."])

    assert (args.command, args.call, args.reason, args.arguments) == (
        "reject",
        "weather",
        "No.",
        None,
    )


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("[1, 2]", "'[1, 2]' is an array, not an object"),
        ('"Bergen"', "'\"Bergen\"' is a string, not an object"),
        ("7", "'7' is a number, not an object"),
        ("null", "'null' is null, not an object"),
        ("{city: Bergen}", "'{city: Bergen}' is not JSON (Expecting property name"),
    ],
)
def test_arguments_that_are_not_a_json_object_are_a_usage_error_before_anything_is_sent(
    value: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # No kubeconfig is read and no server is asked: argparse exits first.
    with pytest.raises(SystemExit) as done:
        main(["approve", "trip", "call_w1", "--arguments", value, "--kubeconfig", "/nowhere"])

    assert done.value.code == 2
    err = capsys.readouterr().err
    assert "approve: error: argument --arguments: " + said in err
    assert 'write the arguments as a JSON object, such as \'{"city": "Bergen"}\'' in err


def test_arguments_nested_too_deep_are_a_usage_error_before_anything_is_sent(
    capsys: pytest.CaptureFixture[str],
) -> None:
    deep = '{"a":' * 5000 + "{}" + "}" * 5000

    with pytest.raises(SystemExit) as done:
        main(["approve", "trip", "call_w1", "--arguments", deep, "--kubeconfig", "/nowhere"])

    assert done.value.code == 2
    assert (
        "approve: error: argument --arguments: the JSON is nested more than 64 levels deep, "
        "and free-form data may nest at most 64 levels: flatten it, or send it as text"
    ) in capsys.readouterr().err


def test_a_rejection_with_arguments_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["reject", "trip", "call_w1", "--arguments", "{}"])

    assert done.value.code == 2
    assert "only an approval carries arguments" in capsys.readouterr().err


def test_a_reason_longer_than_a_decision_carries_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as done:
        main(["reject", "trip", "call_w1", "--reason", "x" * 5000])

    assert done.value.code == 2
    assert "the reason is 5000 characters long; it may be 4096 at most" in capsys.readouterr().err


@pytest.mark.parametrize("verb", ["approve", "reject"])
def test_approve_and_reject_have_help_with_examples(
    verb: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as done:
        main([verb, "--help"])

    assert done.value.code == 0
    out = capsys.readouterr().out
    assert f"kubectl harness {verb} trip-planner call_w1" in out
    assert "CALL is the call's id, or its tool's name" in out
    assert ("--arguments JSON" in out) is (verb == "approve")


# -- which call CALL names -------------------------------------------------------------------


def test_a_call_is_named_by_its_id() -> None:
    calls = [pending("call_a"), pending("call_b")]

    assert call_named(calls, "call_b") == "call_b"


def test_a_call_is_named_by_its_tool_with_or_without_the_server_when_one_waits() -> None:
    calls = [pending("call_a", tool="weather__weather"), pending("call_b", tool="mail__send")]

    assert call_named(calls, "weather__weather") == "call_a"
    assert call_named(calls, "send") == "call_b"


def test_a_tool_named_by_several_waiting_calls_is_ambiguous_and_the_error_lists_them() -> None:
    calls = [pending("call_a"), pending("call_b"), pending("call_c", tool="mail__send")]

    with pytest.raises(AmbiguousCallError) as raised:
        call_named(calls, "weather")

    assert str(raised.value) == (
        "weather names 2 calls that wait for approval: call_a (weather__weather), "
        "call_b (weather__weather); name one by its call id"
    )


def test_a_tool_names_the_one_call_still_undecided_among_several() -> None:
    done = Decision(verdict="approve", by="alice", at="2026-12-02T06:00:00Z")
    calls = [pending("call_a", decision=done), pending("call_b")]

    assert call_named(calls, "weather__weather") == "call_b"


def test_a_name_no_call_has_is_kept_for_the_operators_rule_to_refuse() -> None:
    assert call_named([pending("call_a")], "call_zz") == "call_zz"
    assert call_named([], "weather") == "weather"


# -- get -------------------------------------------------------------------------------------


def test_get_shows_a_pending_call_its_arguments_who_decides_and_until_when() -> None:
    obj = task("trip", pending(arguments={"city": "Oslo", "days": 3}))

    text = render.describe(obj, [], 0, NOW, participant="alice")

    section = text.split("Approvals (1 undecided):\n")[1].splitlines()
    assert section == [
        "  weather__weather (call call_w1, asked in turn 1)",
        "    Arguments:   {",
        '                   "city": "Oslo",',
        '                   "days": 3',
        "                 }",
        "    Decided by:  assignees or admins (you may decide)",
        "    Policy:      HarnessToolServer weather",
        "    Until:       2026-12-02T07:00:00Z (in 60m; rejected if no one decides)",
        "    Decision:    none yet",
        "  Decide with:   kubectl harness approve trip call_w1",
        "                 kubectl harness reject trip call_w1 --reason TEXT",
    ]


def test_get_tells_a_watcher_the_call_is_not_theirs_and_offers_no_command() -> None:
    text = render.describe(task("trip", pending()), [], 0, NOW, participant="bob")

    assert "    Decided by:  assignees or admins (not you)" in text
    assert "Decide with" not in text


def test_get_shows_a_decision_with_its_edited_arguments_and_who_named_the_decider() -> None:
    policy = ApprovalPolicy(participants=("carol",), allow_edit=True, on_timeout="approve")
    requirement = requirement_of([("the task's spec.approval[0]", policy)], DEFAULTS)
    decided = Decision(
        verdict="approve",
        by="carol",
        at="2026-12-02T06:01:00Z",
        reason="Bergen is nicer.",
        arguments={"city": "Bergen"},
    )
    waiting = pending("call_b", requirement=requirement)
    obj = task("trip", pending("call_a", requirement=requirement, decision=decided), waiting)

    text = render.describe(obj, [], 0, NOW, participant="carol")

    assert "Approvals (1 undecided, 1 decided):" in text
    assert "    Decided by:  carol (you may decide)" in text
    assert "    Edits:       allowed (approve --arguments JSON)" in text
    assert (
        "    Decision:    weather__weather was approved by carol with edited arguments: "
        "Bergen is nicer. (at 2026-12-02T06:01:00Z)"
    ) in text
    assert '    Edited to:   {\n                   "city": "Bergen"\n                 }' in text
    assert "(in 60m; approved if no one decides)" in text
    assert "  Decide with:   kubectl harness approve trip call_b" in text


def test_get_shows_a_call_whose_time_is_up_as_such() -> None:
    late = pending(expires_at="2026-12-02T05:59:00Z")

    text = render.describe(task("trip", late), [], 0, NOW)

    assert "    Until:       2026-12-02T05:59:00Z (its time is up; rejected if no one decides)" in (
        text
    )
    assert "    Decided by:  assignees or admins\n" in text


def test_several_policies_each_name_their_deciders() -> None:
    requirement = requirement_of(
        [
            ("HarnessToolServer weather", ApprovalPolicy()),
            ("the task's spec.approval[0]", ApprovalPolicy(roles=(Role.ADMIN,))),
        ],
        DEFAULTS,
    )
    assert requirement is not None

    assert render.deciders_text(requirement) == "(assignees or admins) and (admins)"


def test_a_tasks_without_calls_for_approval_has_no_approvals_section() -> None:
    assert "Approvals" not in render.describe(task("trip"), [], 0, NOW, participant="alice")


def test_long_arguments_are_shown_bounded() -> None:
    arguments = {f"key{i:02}": "v" * 150 for i in range(30)}

    lines = render.arguments_lines(arguments)

    assert len(lines) == render.ARGUMENT_LINES
    assert all(len(line) <= render.ARGUMENT_WIDTH for line in lines)
    assert lines[1].endswith("...")
    assert lines[-1] == f"... ({32 - render.ARGUMENT_LINES + 1} more lines)"


def test_arguments_the_operator_cut_are_shown_as_their_start_and_said_to_be_cut() -> None:
    shown, cut = shown_arguments('{"text": "' + "x" * 20000 + '"}')

    lines = render.arguments_lines(shown, cut=cut)

    assert lines[0].startswith('{"text": "xxx')
    assert lines[0].endswith("...")
    assert lines[-1] == "(cut: longer than 16 KiB of JSON; the call runs with them whole)"


# -- list ------------------------------------------------------------------------------------


def test_list_counts_the_waiting_calls_and_those_you_may_decide() -> None:
    carol_only = requirement_of([("rule", ApprovalPolicy(participants=("carol",)))], DEFAULTS)
    decided = Decision(verdict="reject", by="alice", at="2026-12-02T06:01:00Z")
    mixed = task("mixed", pending("a"), pending("b", requirement=carol_only))
    objs = [
        task("calm"),
        task("yours", pending("a"), pending("b", decision=decided)),
        mixed,
        task("theirs", pending("a", requirement=carol_only)),
    ]

    cells = {
        r.obj["metadata"]["name"]: render.approvals_cell(r.obj, "alice")
        for r in render.task_tree(objs)
    }

    assert cells == {"calm": "-", "yours": "1 for you", "mixed": "2 (1 for you)", "theirs": "1"}
    assert render.approvals_cell(mixed, "bob") == "2"


def test_list_shows_first_the_tasks_with_calls_you_may_decide_keeping_the_tree() -> None:
    objs = [
        task("alpha"),
        task("alpha-kid", parent="alpha"),
        task("beta"),
        task("beta-kid", parent="beta"),
        task("beta-other", parent="beta"),
        task("beta-waits", pending(), parent="beta"),
        task("gamma", pending()),
    ]

    listed = render.task_list(objs, "alice", NOW).splitlines()

    assert listed[0].split() == [
        "NAME",
        "STATE",
        "SUB-STATE",
        "LIFECYCLE",
        "ROLE",
        "APPROVALS",
        "AGE",
    ]
    names = [line.split("   ")[0].strip() for line in listed[1:]]
    assert names == [
        "beta",
        "├─ beta-waits",
        "├─ beta-kid",
        "└─ beta-other",
        "gamma",
        "alpha",
        "└─ alpha-kid",
    ]
    assert "1 for you" in listed[2]
    # For a watcher no call waits: the tree is by name.
    watched = [
        line.split("   ")[0].strip() for line in render.task_list(objs, "bob", NOW).splitlines()
    ]
    assert watched[1:] == [
        "alpha",
        "└─ alpha-kid",
        "beta",
        "├─ beta-kid",
        "├─ beta-other",
        "└─ beta-waits",
        "gamma",
    ]


# -- watch -----------------------------------------------------------------------------------


def test_watch_shows_a_waiting_call_on_one_line() -> None:
    call = pending(arguments={"city": "Oslo", "note": "n" * 80})

    line = render.waiting_call(call)

    assert line == (
        'weather__weather {"city": "Oslo", "note": "' + "n" * 21 + "... waits for approval "
        "(call call_w1, decided by assignees or admins)"
    )


# -- the conversation ------------------------------------------------------------------------


def stored(message_id: str, **spec: Any) -> StoredMessage:
    return StoredMessage(
        name=message_id,
        spec=MessageSpec(task="trip", message_id=message_id, sender="alice", **spec),
        created="2026-12-02T06:00:00Z",
        resource_version="1",
    )


def test_a_decisions_line_in_the_conversation_says_what_it_decided() -> None:
    approve = DecisionRequest(call_id="call_w1", verdict="approve", reason="Oslo is fine.")
    edit = DecisionRequest(call_id="call_w2", verdict="approve", arguments={"city": "Bergen"})
    reject = DecisionRequest(call_id="call_w3", verdict="reject")
    sent = [
        stored("m1", parts=(MessagePart(text="Hi"),)),
        stored("d1", decision=approve),
        stored("d2", decision=edit),
        stored("d3", decision=reject),
    ]
    said = [
        Said(TranscriptMessage(role="user", message_id=m, text=t, sender="alice"))
        for m, t in (("m1", "Hi"), ("d1", ""), ("d2", ""), ("d3", ""))
    ]
    said.append(Said(TranscriptMessage(role="agent", message_id="cmd-d1", text="approved")))

    texts = [s.message.text for s in with_decisions(said, sent)]

    assert texts == [
        "Hi",
        "approve call_w1: Oslo is fine.",
        "approve call_w2 with edited arguments",
        "reject call_w3",
        "approved",
    ]


# -- the whole call, as it is decided --------------------------------------------------------


def test_get_shows_a_calls_arguments_whole_however_long_and_the_park_it_waits_in() -> None:
    arguments = {f"key{i:02}": "v" * 150 for i in range(30)}
    call = pending(arguments=arguments).model_copy(update={"park": "1-ab12"})

    text = render.describe(task("trip", call), [], 0, NOW, participant="alice")

    assert "  weather__weather (call call_w1, asked in turn 1, park 1-ab12)" in text
    for key in arguments:
        assert f'"{key}": "{"v" * 150}"' in text  # every line, uncut
    assert "more lines" not in text


def test_get_shows_arguments_the_status_holds_cut_whole_from_the_journal() -> None:
    long = '{"text": "' + "x" * 20_000 + 'END"}'
    shown, cut = shown_arguments(long)
    call = pending(arguments=shown).model_copy(update={"arguments_cut": cut})
    obj = task("trip", call)

    whole = render.describe(obj, [], 0, NOW, participant="alice", whole={"call_w1": long})
    assert "x" * 20_000 + 'END"' in whole
    assert "(cut:" not in whole

    unread = render.describe(obj, [], 0, NOW, participant="alice")
    assert "could not be read: read them before you approve" in unread


def test_approve_shows_the_call_it_decides_whole_before_it_sends() -> None:
    arguments = {f"key{i:02}": "v" * 150 for i in range(30)}
    call = pending(arguments=arguments).model_copy(update={"park": "1-ab12"})

    said = render.deciding(call, "approve").splitlines()

    assert said[0] == "Approve weather__weather (call call_w1 in park 1-ab12) with:"
    assert len(said) == 1 + 32  # the braces and every key
    assert said[-2] == f'    "key29": "{"v" * 150}"'
