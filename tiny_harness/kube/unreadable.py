"""Stored objects the models cannot read: every reader skips one, and flags it.

A ``HarnessMessage`` or ``HarnessTurn`` may be stored in a form its model refuses: written
before the CRD held a rule the model enforces, under a looser CRD an administrator installed,
or by another version of the harness. Raising on it would make every read of its task fail
(GetTask for every participant, ``kubectl harness get``, the operator's passes), for the sake
of one object no one can use anyway. So each reader of these objects parses through
:func:`parsed`, the one place that decides: an object it cannot parse is left out, a warning
names it (namespace/name) and says why (the fields and what is wrong with them, never the
object's content: a message is someone's words), and the component's metrics, when it has
any, count it through the :data:`Skipped` it gave the reader.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar

from pydantic import ValidationError

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Told the kind (``HarnessMessage``, ``HarnessTurn``) of each object a reader skipped.
Skipped = Callable[[str], None]

#: What parsing a stored object raises when the object, not the code, is wrong (a pydantic
#: ValidationError is a ValueError).
UNREADABLE: Final = (ValueError, TypeError, KeyError)
#: The problems a warning lists at most: a record of thousands of bad entries says so in a line.
REASONS_SHOWN: Final = 3


def uncounted(kind: str) -> None:
    """The :data:`Skipped` of a component without metrics (the CLI): the warning alone."""


def parsed(
    obj: Mapping[str, Any],
    parse: Callable[[Any], T],
    *,
    kind: str,
    skipped: Skipped = uncounted,
) -> T | None:
    """``parse(obj)``, or None when the stored object cannot be parsed: then it is flagged, a
    warning naming it and the reason, and ``skipped(kind)`` for the component's metrics."""
    try:
        return parse(obj)
    except UNREADABLE as exc:
        meta = obj.get("metadata") or {}
        log.warning(
            "%s %s/%s cannot be read, skipped: %s",
            kind,
            meta.get("namespace", ""),
            meta.get("name", ""),
            reason_of(exc),
        )
        skipped(kind)
        return None


def reason_of(exc: Exception) -> str:
    """Why an object could not be parsed, without any of its values: the fields at fault and
    pydantic's message for each (``include_input=False``), or the missing key, or the error's
    type (a plain ValueError's text may quote the value)."""
    if isinstance(exc, ValidationError):
        errors = exc.errors(include_url=False, include_context=False, include_input=False)
        shown = [_problem(e["loc"], e["msg"]) for e in errors[:REASONS_SHOWN]]
        more = len(errors) - len(shown)
        return "; ".join(shown) + (f"; and {more} more" if more else "")
    if isinstance(exc, KeyError):
        return f"{exc.args[0] if exc.args else '?'}: missing"
    return type(exc).__name__


def _problem(loc: tuple[int | str, ...], msg: str) -> str:
    where = ".".join(str(part) for part in loc)
    return f"{where}: {msg}" if where else msg
