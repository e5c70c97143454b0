"""Which replica works which task: tasks hash to shards, shards are dealt to live replicas.

Pure functions, so every replica that sees the same live replicas computes the same deal,
and the tests can check the deal's balance and its moves without a cluster. The leases that
make a deal real are :mod:`tiny_harness.operator.shard_leases`'s.

- A task tree's shard is a hash of its root task's ``uid`` (not its name: a task deleted and
  created again under the same name is a new task, and may land elsewhere). Stable across
  replicas and restarts. It is written on every object of the tree as the shard label
  (:data:`~tiny_harness.kube.names.SHARD_LABEL`): children, messages and turn records copy it
  from their task, so a replica can ask the API server for its shards' objects only
  (:func:`selector`), and a parent and its children are always worked by the same replica.
- Shards are dealt by rendezvous hashing with a bound: each shard ranks the replicas by
  ``hash(shard, replica)`` and goes to the first in its ranking that still has room below a
  fair share. So the deal is even (no replica holds more than one shard above another), and a
  replica joining or leaving moves few shards besides its own share, because most shards'
  first choice does not change.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping

from tiny_harness.kube.names import SHARD_LABEL


def _hash(*parts: str) -> int:
    digest = hashlib.blake2b("\x00".join(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def shard_of(uid: str, shards: int) -> int:
    """The shard a root task (and its tree) belongs to, from the root's uid."""
    return _hash(uid) % shards


def shard_named(value: str | None, shards: int) -> int | None:
    """The shard a shard label's value names, if it names one of the ``shards``."""
    if value is None or not value.isdigit() or int(value) >= shards:
        return None
    return int(value)


def labelled(labels: Mapping[str, str] | None, shards: int) -> int | None:
    """The shard an object's labels name, if one of the ``shards``."""
    return shard_named((labels or {}).get(SHARD_LABEL), shards)


def selector(held: Collection[int]) -> str:
    """The label selector for the objects of these shards (none at all for no shards: a
    selector has no empty set, so it names a value no object carries)."""
    values = ",".join(str(s) for s in sorted(held)) or "none"
    return f"{SHARD_LABEL} in ({values})"


def unlabelled(shards: int) -> str:
    """The label selector for objects with no shard label, or one naming no shard of
    ``shards`` (``notin`` also matches objects without the label)."""
    return f"{SHARD_LABEL} notin ({','.join(str(s) for s in range(shards))})"


def _ranking(shard: int, members: list[str]) -> list[str]:
    return sorted(members, key=lambda m: _hash(str(shard), m), reverse=True)


def deal(replicas: Collection[str], shards: int) -> dict[int, str]:
    """Each shard's replica. Every replica computing it from the same set gets the same
    answer; an empty set owns nothing."""
    members = sorted(set(replicas))
    if not members:
        return {}
    ranked = {shard: _ranking(shard, members) for shard in range(shards)}
    # Shards in the order of their best score, so no shard's first choice is taken merely
    # because its number is low.
    order = sorted(range(shards), key=lambda s: _hash(str(s), ranked[s][0]), reverse=True)
    held = dict.fromkeys(members, 0)
    out: dict[int, str] = {}
    # Everyone up to the floor of a fair share first, then the remainder one each: no
    # replica ends with more than one shard above another.
    floor = shards // len(members)
    for cap in (floor, floor + 1):
        for shard in order:
            if shard in out:
                continue
            owner = next((m for m in ranked[shard] if held[m] < cap), None)
            if owner is not None:
                held[owner] += 1
                out[shard] = owner
    return out


def mine(identity: str, replicas: Collection[str], shards: int) -> frozenset[int]:
    """The shards ``identity`` should hold among these live replicas (itself included)."""
    dealt = deal({*replicas, identity}, shards)
    return frozenset(s for s, owner in dealt.items() if owner == identity)
