"""The one clock (core/clock.py): every time the harness writes is UTC with a ``Z``, cut to the
precision its reader needs, and every one of them reads back; what is not a time reads as None."""

from __future__ import annotations

import datetime as dt

import pytest

from tiny_harness.core.clock import now, parse, rfc3339, rfc3339_nanos

MOMENT = dt.datetime(2026, 11, 30, 16, 0, 1, 234567, tzinfo=dt.UTC)


def test_now_is_in_utc() -> None:
    assert now().tzinfo is dt.UTC


@pytest.mark.parametrize(
    ("digits", "written"),
    [
        (0, "2026-11-30T16:00:01Z"),
        (3, "2026-11-30T16:00:01.234Z"),
        (6, "2026-11-30T16:00:01.234567Z"),
    ],
)
def test_a_time_is_written_in_utc_to_the_digits_asked(digits: int, written: str) -> None:
    assert rfc3339(MOMENT, digits=digits) == written  # type: ignore[arg-type]


def test_a_time_in_another_zone_or_none_is_written_as_utc() -> None:
    oslo = MOMENT.astimezone(dt.timezone(dt.timedelta(hours=1)))
    assert rfc3339(oslo) == "2026-11-30T16:00:01.234Z"
    assert rfc3339(MOMENT.replace(tzinfo=None)) == "2026-11-30T16:00:01.234Z"
    assert rfc3339().endswith("Z")


def test_nanoseconds_keep_all_nine_digits() -> None:
    ns = int(MOMENT.timestamp()) * 1_000_000_000 + 234_567_891
    assert rfc3339_nanos(ns) == "2026-11-30T16:00:01.234567891Z"
    assert rfc3339_nanos(0) == "1970-01-01T00:00:00.000000000Z"


@pytest.mark.parametrize(
    "text",
    [
        "2026-11-30T16:00:01.234567Z",
        "2026-11-30T16:00:01.234567891Z",
        "2026-11-30T17:00:01.234567+01:00",
        "2026-11-30T16:00:01.234567",
    ],
)
def test_every_written_form_reads_back_to_the_microsecond(text: str) -> None:
    assert parse(text) == MOMENT


def test_what_it_writes_it_reads() -> None:
    for digits in (0, 3, 6):
        written = rfc3339(MOMENT, digits=digits)  # type: ignore[arg-type]
        assert rfc3339(parse(written), digits=digits) == written  # type: ignore[arg-type]
    assert parse("2026-11-30T16:00:01Z") == MOMENT.replace(microsecond=0)


@pytest.mark.parametrize("value", [None, "", "yesterday", "2026-13-01T00:00:00Z", 1700000000])
def test_what_is_not_a_time_is_none(value: object) -> None:
    assert parse(value) is None
