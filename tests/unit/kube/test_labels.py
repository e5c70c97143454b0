"""Label values for names and participant ids: a value that is a label already is kept as it
is (so a selector by a task's name reads as the name), any other becomes a stable hash that is
a valid label value."""

from __future__ import annotations

import re

import pytest

from tiny_harness.kube.labels import label_value

#: The API server's rule for a label value.
VALID = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


@pytest.mark.parametrize("value", ["alice", "bbbe9997-b925-530c-a514-110002b2128f", "a.b_c-d", ""])
def test_a_value_that_is_a_label_value_is_kept(value: str) -> None:
    assert label_value(value) == value


@pytest.mark.parametrize(
    "value",
    [
        "system:serviceaccount:team:alice",
        "alice@example.com",
        "task:parent",
        "-leading",
        "trailing.",
        "a" * 64,
        "ünïcode",
    ],
)
def test_any_other_value_becomes_a_stable_hash_that_is_a_label_value(value: str) -> None:
    hashed = label_value(value)

    assert hashed.startswith("h-")
    assert len(hashed) == 63
    assert VALID.match(hashed)
    assert label_value(value) == hashed
    assert label_value(value + "x") != hashed
