"""The admission policy's rules for changing a task's spec, generated from the authority table.

:mod:`tiny_harness.core.authority` says who may change what; this module writes that table as
CEL, one validation per row (``object.spec.X == oldObject.spec.X || the writer's role, as the
task stood before the change, is one the row names``) and two more for participants (no one
gives a role above their own; others are taken off or lowered only by a reporter or an admin,
for roles up to their own). Each message is the table's own refusal, built in CEL from the
same pieces, so a writer refused here reads the sentence a command's refusal gives.

The rules join the identity policy in :mod:`tiny_harness.kube.admission`; a property test
patches random specs as random participants on the real API server and checks that the
policy accepts exactly what :func:`~tiny_harness.core.authority.update_refusal` accepts.
"""

from __future__ import annotations

import string
from typing import Final

from pydantic.alias_generators import to_camel

from tiny_harness.core.authority import (
    GRANT_REFUSAL,
    PARTICIPANTS,
    RANKS,
    REMOVAL_REFUSAL,
    SPEC_ROWS,
    TAKERS,
    Authority,
    role_phrase,
    row_template,
)
from tiny_harness.core.vocabulary import Role
from tiny_harness.kube.names import PLURAL

_USER: Final = "request.userInfo.username"
#: Only an update of a task is judged here: its creator names its spec (CREATOR_RULE).
_ONLY_UPDATES: Final = f"request.resource.resource != '{PLURAL}' || request.operation != 'UPDATE'"
_OLD: Final = "oldObject.spec.participants"
_NEW: Final = "object.spec.participants"
_RANK: Final = "{" + ", ".join(f"'{r.value}': {i}" for i, r in enumerate(RANKS)) + "}"
_PHRASES: Final = "{" + ", ".join(f"'{r.value}': '{role_phrase(r)}'" for r in RANKS) + "}"
_ON_TASK: Final = f"(has({_OLD}) && {_OLD}.exists(p, p.id == {_USER}))"
_HELD: Final = f"{_OLD}.filter(p, p.id == {_USER})[0].role"
#: The writer's role phrase, as :func:`~tiny_harness.core.authority.role_phrase` writes it.
_WRITER_PHRASE: Final = f"({_ON_TASK} ? {_PHRASES}[{_HELD}] : '{role_phrase(None)}')"
_WRITER_ROLE: Final = f"({_ON_TASK} ? {_HELD} : 'none')"


def _quoted(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


#: What each placeholder of the table's refusal texts is in CEL.
_FILLS: Final = {
    "writer": _USER,
    "task": "object.metadata.name",
    "phrase": _WRITER_PHRASE,
    "held": _WRITER_ROLE,
}


def message(template: str) -> str:
    """CEL writing the table's refusal ``template`` with the request's writer, task name and
    the writer's role as the task stood before (see :data:`_FILLS`)."""
    pieces: list[str] = []
    for literal, field, _, _ in string.Formatter().parse(template):
        if literal:
            pieces.append(_quoted(literal))
        if field is not None:
            pieces.append(_FILLS[field])
    return " + ".join(pieces)


def _roles(roles: frozenset[Role]) -> str:
    return "[" + ", ".join(f"'{r.value}'" for r in RANKS if r in roles) + "]"


def _unchanged(field: str) -> str:
    f = to_camel(field)
    return (
        f"(has(object.spec.{f}) ? (has(oldObject.spec.{f}) && "
        f"object.spec.{f} == oldObject.spec.{f}) : !has(oldObject.spec.{f}))"
    )


def unchanged(row: Authority) -> str:
    """CEL: none of the row's fields changed (absent before and after counts as unchanged)."""
    return " && ".join(_unchanged(f) for f in row.fields)


def row_rule(row: Authority) -> tuple[str, str]:
    """The validation of one row and its message."""
    rule = (
        f"{_ONLY_UPDATES} || ({unchanged(row)}) || (has({_OLD}) && "
        f"{_OLD}.exists(p, p.id == {_USER} && p.role in {_roles(row.roles)}))"
    )
    return rule, message(row_template(row))


_TAKERS: Final = _roles(TAKERS)

#: No one gives a role above their own: each participant added, or given a new role, holds a
#: role ranked no higher than the writer's.
GRANT_RULE: Final = (
    f"{_ONLY_UPDATES} || {unchanged(PARTICIPANTS)} || (has({_OLD}) && "
    f"{_OLD}.exists(w, w.id == {_USER} && (!has({_NEW}) || {_NEW}.all(p, "
    f"{_OLD}.exists(q, q.id == p.id && q.role == p.role) || "
    f"{_RANK}[p.role] <= {_RANK}[w.role]))))"
)
#: Others are taken off, or lowered, only by a reporter or an admin, for roles up to their own.
REMOVAL_RULE: Final = (
    f"{_ONLY_UPDATES} || {unchanged(PARTICIPANTS)} || (has({_OLD}) && "
    f"{_OLD}.exists(w, w.id == {_USER} && {_OLD}.all(p, "
    f"(has({_NEW}) && {_NEW}.exists(q, q.id == p.id && q.role == p.role)) || "
    f"p.id == {_USER} || "
    f"(w.role in {_TAKERS} && {_RANK}[p.role] <= {_RANK}[w.role]))))"
)


def spec_rules() -> tuple[tuple[str, str], ...]:
    """Every spec row's validation and message, in the table's order, each participants rule
    right after the participants row."""
    rules: list[tuple[str, str]] = []
    for row in SPEC_ROWS:
        rules.append(row_rule(row))
        if row is PARTICIPANTS:
            rules.append((GRANT_RULE, message(GRANT_REFUSAL)))
            rules.append((REMOVAL_RULE, message(REMOVAL_REFUSAL)))
    return tuple(rules)


#: The rules the identity policy carries for spec changes.
SPEC_RULES: Final = spec_rules()
