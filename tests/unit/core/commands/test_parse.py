"""Telling a command from an ordinary message."""

from __future__ import annotations

import pytest

from tiny_harness.core.commands.parse import CommandCall, parse_command
from tiny_harness.core.inbox import MessagePart, MessageSpec

from .support import message, registry

REGISTRY = registry()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/status", CommandCall("status", "")),
        ("/model", CommandCall("model", "")),
        ("/model gpt-5", CommandCall("model", "gpt-5")),
        ("/model   gpt-5", CommandCall("model", "gpt-5")),
        ("/effort\thigh", CommandCall("effort", "high")),
        ("/status\n", CommandCall("status", "")),
        ("/sub-task docs\nand tests", CommandCall("sub-task", "docs\nand tests")),
        ("/sub-task  keep   inner  spacing ", CommandCall("sub-task", "keep   inner  spacing ")),
    ],
)
def test_a_registered_slash_name_is_a_command_with_its_raw_arguments(
    text: str, expected: CommandCall
) -> None:
    assert parse_command(message(text), REGISTRY) == expected


@pytest.mark.parametrize(
    "text",
    [
        "/unknown hi",  # not registered
        "/Model gpt-5",  # names are lower case
        "/ model",  # no space after the slash
        "please /status",  # the slash must come first
        " /status",
        "/statusx",  # a different (unregistered) name
        "/status:now",  # no separator before the arguments
        "//status",
        "/",
        "status",
        "hello",
    ],
)
def test_anything_else_is_an_ordinary_message(text: str) -> None:
    assert parse_command(message(text), REGISTRY) is None


def test_a_command_must_be_the_only_part_of_its_message() -> None:
    two_parts = MessageSpec(
        task="t1",
        message_id="m-two",
        sender="alice",
        parts=(MessagePart(text="/status"), MessagePart(text="and more")),
    )
    with_data = MessageSpec(
        task="t1",
        message_id="m-data",
        sender="alice",
        parts=(MessagePart(text="/status"), MessagePart(data={"k": 1})),
    )
    assert parse_command(two_parts, REGISTRY) is None
    assert parse_command(with_data, REGISTRY) is None


def test_a_data_part_or_a_control_request_is_never_a_command() -> None:
    data_only = MessageSpec(
        task="t1", message_id="m-d", sender="alice", parts=(MessagePart(data={"text": "/status"}),)
    )
    control = MessageSpec(
        task="t1",
        message_id="m-c",
        sender="alice",
        parts=(MessagePart(text="/status"),),
        control="complete",
    )
    assert parse_command(data_only, REGISTRY) is None
    assert parse_command(control, REGISTRY) is None


def test_a_registry_without_built_ins_recognises_none_of_them() -> None:
    bare = registry(builtin_commands=False)
    assert parse_command(message("/status"), bare) is None
    assert parse_command(message("/model gpt-5"), bare) is None
