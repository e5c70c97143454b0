"""Who may change what on a task: the one table, asked by every door a change comes through.

A change reaches a task through three doors: a write of the ``HarnessTask`` spec (``kubectl
apply``/``patch``, judged by the identity admission policy, whose rules are generated from
this table by :mod:`tiny_harness.kube.authority_rules`), a command (``/budget``, ``/model``,
``/effort``, ``/sub-task``, judged by the command role check and the fixed rules of
:func:`~tiny_harness.core.commands.run.run_command`), and the gateway (which changes no spec
after a task is created, and attaches a sub-task for a caller this table lets start one).
What a participant may change through one door they may change through every door, and no
more, because each asks :func:`may_change` of the same :data:`TABLE`, and each refusal is the
same sentence (:func:`refusal`).

Two ideas shape the table:

- **A rule that gates someone is changed only by someone above them.** The assignee works the
  task; its budget, deadlines, approval rules, what it may reach and what it asks for bound
  that work, so only a reporter (who asked for it) or an admin changes them, never the
  assignee they bound.
- **Nobody raises their own role.** Roles rank admin, reporter, assignee, watcher (highest
  first). A participant is given a role only by someone who holds that role or a higher one,
  so no one makes themselves (or a second identity of theirs) a role that would decide their
  own calls; others are taken off a task, or lowered, only by a reporter or an admin, for
  roles up to their own; anyone may leave a task or step down.

Pure data and functions: no I/O, used by the commands, the gateway, the admission rules'
generator and the tests that check they agree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pydantic.alias_generators import to_camel

from tiny_harness.core.vocabulary import Role

#: The roles from the lowest to the highest: a role is given by one who holds it or a higher one.
RANKS: Final[tuple[Role, ...]] = (Role.WATCHER, Role.ASSIGNEE, Role.REPORTER, Role.ADMIN)

_WORKERS: Final = frozenset({Role.ASSIGNEE, Role.REPORTER, Role.ADMIN})
_ABOVE: Final = frozenset({Role.REPORTER, Role.ADMIN})
#: Who takes others off a task, or lowers their roles (for roles up to their own).
TAKERS: Final = _ABOVE


def rank(role: Role) -> int:
    """The role's place in :data:`RANKS` (watcher 0 ... admin 3)."""
    return RANKS.index(role)


@dataclass(frozen=True)
class Authority:
    """One row of the table: a change, the spec fields it touches (none for a change made
    only by a command), and the roles that may make it."""

    name: str
    #: What the writer was trying to do, with ``{task}`` where the task's name goes.
    action: str
    #: The ``TaskSpec`` fields (by Python name) the change is made in.
    fields: tuple[str, ...]
    roles: frozenset[Role]

    @property
    def paths(self) -> tuple[str, ...]:
        """The fields as a writer of the resource sees them: ``spec.activeDeadlineSeconds``."""
        return tuple(f"spec.{to_camel(f)}" for f in self.fields)

    def doing(self, task: str) -> str:
        """The action on ``task``, with the spec paths it touches."""
        paths = f" ({', '.join(self.paths)})" if self.fields else ""
        return self.action.format(task=task) + paths


PARTICIPANTS: Final = Authority(
    "participants", "change who is on task {task}", ("participants",), _WORKERS
)
WORK: Final = Authority(
    "work", "change the name, type or plan of task {task}", ("name", "type", "plan"), _WORKERS
)
ASK: Final = Authority(
    "ask",
    "change what task {task} asks for",
    ("goal", "description", "acceptance_criteria"),
    _ABOVE,
)
APPROVAL: Final = Authority(
    "approval", "change the approval rules of task {task}", ("approval",), _ABOVE
)
BUDGET: Final = Authority("budget", "change the budget of task {task}", ("budget",), _ABOVE)
DEADLINES: Final = Authority(
    "deadlines",
    "change the deadlines of task {task}",
    (
        "active_deadline_seconds",
        "input_timeout_seconds",
        "on_timeout",
        "idle_timeout_seconds",
        "on_idle",
        "ttl_seconds_after_finished",
    ),
    _ABOVE,
)
#: What the task may reach: tool servers, a remote agent, and the people its model may ask
#: (``core/reach.py``); each bounds the assignee's work, so it is changed from above.
REACH: Final = Authority(
    "reach",
    "change what task {task} may reach (tool servers, agent, people)",
    ("tool_servers", "agent", "reach"),
    _ABOVE,
)
MODEL: Final = Authority("model", "change the model of task {task}", (), _WORKERS)
EFFORT: Final = Authority("effort", "change the reasoning effort of task {task}", (), _WORKERS)
SUB_TASKS: Final = Authority("sub-tasks", "start a sub-task of task {task}", (), _WORKERS)

#: Every change a participant may ask for, in the order the admission policy checks them.
TABLE: Final[tuple[Authority, ...]] = (
    PARTICIPANTS,
    WORK,
    ASK,
    APPROVAL,
    BUDGET,
    DEADLINES,
    REACH,
    MODEL,
    EFFORT,
    SUB_TASKS,
)
#: Spec fields no participant changes: the harness links a task to its parent.
HARNESS_FIELDS: Final = frozenset({"parent"})
#: The rows that are spec fields, which the admission policy enforces.
SPEC_ROWS: Final = tuple(row for row in TABLE if row.fields)


def may_change(role: Role | None, row: Authority) -> bool:
    """Whether a participant in ``role`` (None: not on the task) may make the change ``row``."""
    return role is not None and role in row.roles


def role_phrase(role: Role | None) -> str:
    """``a watcher``, ``an assignee``, ... or ``not a participant``."""
    if role is None:
        return "not a participant"
    return f"{'an' if role.value[0] in 'aeiou' else 'a'} {role.value}"


def roles_phrase(roles: frozenset[Role]) -> str:
    """``assignee, reporter or admin``, from the lowest rank."""
    names = [r.value for r in RANKS if r in roles]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


#: The refusal of a row's change; ``{doing}`` is :meth:`Authority.doing`.
ROW_REFUSAL: Final = (
    "{writer} is {phrase} and may not {doing}: only its {allowed} may; ask one of them"
)
#: The refusal of a participant given a role above the writer's own (``{held}``).
GRANT_REFUSAL: Final = (
    "{writer} is {phrase} and may not give anyone a role above {held} on task {task} "
    "(spec.participants): roles rank admin, reporter, assignee, watcher, and one is given only "
    "by someone who holds it or a higher one, so no one raises their own; ask someone who does"
)
#: The refusal of another participant taken off the task, or lowered, by one not entitled to.
REMOVAL_REFUSAL: Final = (
    "{writer} is {phrase} and may not take others off task {task} or lower their roles "
    "(spec.participants): only its reporter or admin may, for roles up to their own, and "
    "anyone may leave or step down; ask one of them"
)


def row_template(row: Authority) -> str:
    """The row's refusal with ``{writer}``, ``{phrase}`` and ``{task}`` left to fill (the
    admission rules fill them in CEL)."""
    return ROW_REFUSAL.format(
        writer="{writer}",
        phrase="{phrase}",
        doing=row.doing("{task}"),
        allowed=roles_phrase(row.roles),
    )


def refusal_text(row: Authority, writer: str, role: Role | None, task: str) -> str:
    """What a writer the table refuses ``row`` is told, whichever door they came through."""
    return row_template(row).format(writer=writer, phrase=role_phrase(role), task=task)


def refusal(row: Authority, writer: str, role: Role | None, task: str) -> str | None:
    """Why ``writer`` (in ``role``) may not make the change ``row`` on ``task``, or None."""
    return None if may_change(role, row) else refusal_text(row, writer, role, task)


# -- participants ---------------------------------------------------------------------------------


def grant_refusal_text(writer: str, role: Role, task: str) -> str:
    """What a writer is told who gives someone (themselves included) a role above their own."""
    return GRANT_REFUSAL.format(writer=writer, phrase=role_phrase(role), held=role.value, task=task)


def removal_refusal_text(writer: str, role: Role, task: str) -> str:
    """What a writer is told who takes someone else off a task, or lowers them, unentitled."""
    return REMOVAL_REFUSAL.format(writer=writer, phrase=role_phrase(role), task=task)


Pair = tuple[str, Role]


def participants_refusal(
    writer: str, task: str, old: Sequence[Pair], new: Sequence[Pair]
) -> str | None:
    """Why ``writer`` may not change the participants ``old`` to ``new`` (``(id, role)``
    pairs; called for a change, a new order included), or None. Checked in the order of the
    admission policy's rules: who may change participants at all, then what they give (no role
    above their own), then what they take (others' places, only as a reporter or admin, for
    roles up to their own)."""
    role = dict(old).get(writer)
    if not may_change(role, PARTICIPANTS) or role is None:
        return refusal_text(PARTICIPANTS, writer, role, task)
    given = [p for p in new if p not in old]
    taken = [p for p in old if p not in new]
    if any(rank(r) > rank(role) for _, r in given):
        return grant_refusal_text(writer, role, task)
    for who, r in taken:
        if who != writer and not (role in TAKERS and rank(r) <= rank(role)):
            return removal_refusal_text(writer, role, task)
    return None


# -- a spec update, whole -------------------------------------------------------------------------


def _pairs(spec: Mapping[str, Any]) -> list[Pair]:
    return [(str(p["id"]), Role(p["role"])) for p in spec.get("participants") or ()]


def changed_rows(old: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[Authority, ...]:
    """The spec rows whose fields differ between the stored specs ``old`` and ``new`` (as the
    API server holds them: camelCase, absent fields left out)."""
    return tuple(
        row
        for row in SPEC_ROWS
        if any(old.get(to_camel(f)) != new.get(to_camel(f)) for f in row.fields)
    )


def update_refusal(
    writer: str, task: str, old: Mapping[str, Any], new: Mapping[str, Any]
) -> str | None:
    """Why ``writer`` may not change the stored spec ``old`` into ``new``, or None: the first
    refusal, in the order the admission policy checks (the table's, participants' own rules
    right after their row)."""
    role = dict(_pairs(old)).get(writer)
    for row in changed_rows(old, new):
        if row is PARTICIPANTS:
            refused = participants_refusal(writer, task, _pairs(old), _pairs(new))
        else:
            refused = refusal(row, writer, role, task)
        if refused is not None:
            return refused
    return None
