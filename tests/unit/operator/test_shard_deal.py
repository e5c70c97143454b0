"""The deal of shards to replicas (operator/shard_deal.py): even, the same for every replica that
sees the same members, and moving few shards when a replica joins or leaves."""

from __future__ import annotations

import uuid
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tiny_harness.kube.names import SHARD_LABEL
from tiny_harness.operator.shard_deal import (
    deal,
    labelled,
    mine,
    selector,
    shard_named,
    shard_of,
    unlabelled,
)

names = st.lists(st.text("abcdefghij-0123", min_size=1, max_size=12), min_size=1, max_size=9)


@given(members=names, shards=st.integers(1, 128))
def test_every_shard_has_one_replica_and_no_replica_has_two_more_than_another(
    members: list[str], shards: int
) -> None:
    dealt = deal(members, shards)
    assert sorted(dealt) == list(range(shards))
    held = Counter(dealt.values())
    counts = [held.get(m, 0) for m in set(members)]
    assert max(counts) - min(counts) <= 1


@given(members=names, shards=st.integers(1, 64))
def test_the_deal_does_not_depend_on_who_computes_it_or_in_what_order(
    members: list[str], shards: int
) -> None:
    dealt = deal(members, shards)
    assert deal(list(reversed(members)), shards) == dealt
    for member in set(members):
        assert mine(member, members, shards) == {s for s, m in dealt.items() if m == member}


@pytest.mark.parametrize("replicas", [2, 3, 4, 5])
def test_a_replica_joining_moves_little_more_than_its_share(replicas: int) -> None:
    shards = 32
    before = deal([f"op-{i}" for i in range(replicas)], shards)
    after = deal([f"op-{i}" for i in range(replicas + 1)], shards)
    moved = sum(1 for s in range(shards) if before[s] != after[s])
    share = shards / (replicas + 1)
    assert moved <= 2 * share + 1


def test_tasks_split_evenly_over_two_and_four_replicas() -> None:
    uids = [str(uuid.UUID(int=i * 7919 + 1)) for i in range(4000)]
    for replicas in (2, 4):
        dealt = deal([f"op-{i}" for i in range(replicas)], 16)
        per = Counter(dealt[shard_of(uid, 16)] for uid in uids)
        fair = len(uids) / replicas
        assert all(abs(n - fair) / fair < 0.10 for n in per.values()), per


def test_a_tasks_shard_is_the_same_wherever_it_is_computed() -> None:
    uid = "0b5a4a36-3c71-4f0b-a9a1-8e7f1c5d2e10"
    assert shard_of(uid, 16) == shard_of(uid, 16)
    assert 0 <= shard_of(uid, 16) < 16
    assert deal([], 8) == {}


# -- the shard label and the selectors built on it ----------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [("0", 0), ("15", 15), ("16", None), ("-1", None), ("x", None), ("", None), (None, None)],
)
def test_a_shard_label_names_a_shard_only_within_the_count(
    value: str | None, expected: int | None
) -> None:
    assert shard_named(value, 16) is expected
    labels = {} if value is None else {SHARD_LABEL: value}
    assert labelled(labels, 16) is expected


def test_the_selector_names_the_held_shards_and_nothing_for_none() -> None:
    assert selector({3, 1}) == f"{SHARD_LABEL} in (1,3)"
    # A set-based selector has no empty set: "none" is a value no object carries.
    assert selector(set()) == f"{SHARD_LABEL} in (none)"


def test_the_unlabelled_selector_catches_missing_and_out_of_range_labels() -> None:
    assert unlabelled(3) == f"{SHARD_LABEL} notin (0,1,2)"
