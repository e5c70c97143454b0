"""The names the model calls MCP tools by: <server>__<tool>, always a name providers accept,
stable, and distinct for distinct pairs."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tiny_harness.toolservers.names import MAX_LENGTH, exposed_name, is_valid


def test_a_plain_pair_reads_as_server_then_tool() -> None:
    assert exposed_name("search", "web_search") == "search__web_search"


@pytest.mark.parametrize(
    ("server", "tool"),
    [
        ("docs.example", "read"),  # a dot in the object name
        ("files", "fs/read.file"),  # MCP names may hold slashes and dots
        ("a" * 63, "b" * 60),  # too long together
    ],
)
def test_a_pair_that_does_not_fit_is_made_to(server: str, tool: str) -> None:
    name = exposed_name(server, tool)

    assert is_valid(name)
    assert "__" in name
    assert name == exposed_name(server, tool)  # the same across restarts and replicas


def test_pairs_that_read_alike_stay_apart() -> None:
    assert exposed_name("docs.example", "read") != exposed_name("docs_example", "read")
    assert exposed_name("files", "fs/read") != exposed_name("files", "fs.read")


names = st.text(min_size=1, max_size=120)


@given(names, names)
def test_every_pair_gets_a_valid_name(server: str, tool: str) -> None:
    name = exposed_name(server, tool)

    assert is_valid(name)
    assert len(name) <= MAX_LENGTH


@given(names, names, names, names)
def test_distinct_pairs_get_distinct_names(a: str, b: str, c: str, d: str) -> None:
    if (a, b) != (c, d):
        assert exposed_name(a, b) != exposed_name(c, d)
