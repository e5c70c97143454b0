"""A name in a field selector is escaped as the API server reads selector values, so a name
no object can have (the gateway's fuzz test sent a task id of one backslash) matches nothing
instead of being refused as a malformed selector."""

from __future__ import annotations

from tiny_harness.kube.watching import name_selector


def test_a_plain_name_is_as_written() -> None:
    assert name_selector("release-docs") == "metadata.name=release-docs"


def test_backslash_comma_and_equals_are_escaped() -> None:
    assert name_selector("\\") == "metadata.name=\\\\"
    assert name_selector("a,b=c") == "metadata.name=a\\,b\\=c"
