"""A participant's open streams (``a2a_gateway/stream_limits.py``): refused past the limit with
a 429 that says how many are open, counted per participant, freed when a stream ends."""

from __future__ import annotations

import contextlib

import pytest

from tiny_harness.a2a_gateway.quotas import Refused
from tiny_harness.a2a_gateway.stream_limits import TOO_MANY_STREAMS, StreamLimits


def test_past_the_limit_a_stream_is_refused_and_others_are_not() -> None:
    limits = StreamLimits(per_participant=2)
    with contextlib.ExitStack() as open_streams:
        open_streams.enter_context(limits.slot("alice"))
        open_streams.enter_context(limits.slot("alice"))
        with pytest.raises(Refused) as refused:
            open_streams.enter_context(limits.slot("alice"))
        assert refused.value.status == 429
        assert refused.value.outcome == TOO_MANY_STREAMS
        assert "alice has 2 streams open" in refused.value.error.message
        open_streams.enter_context(limits.slot("bob"))
    assert limits.open == {}


def test_a_stream_that_ends_frees_its_place_even_on_an_error() -> None:
    limits = StreamLimits(per_participant=1)
    with pytest.raises(RuntimeError), limits.slot("alice"):
        raise RuntimeError("the client went away")
    with limits.slot("alice"):
        assert limits.open["alice"] == 1
