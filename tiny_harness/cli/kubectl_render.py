"""How ``kubectl harness`` prints tasks: plain functions from stored objects to text.

Nothing here talks to the API, so every layout (the task tree, ``get``'s description, a
transcript line, a ``watch`` line) can be read and tested on its own. Layouts follow kubectl's:
upper-case column headers, columns padded with three spaces, ``-`` for an empty cell, ages as
``kubectl get`` shows them.

Everything printed goes through :func:`out`, which shows participant, model and tool text
literally (:func:`~tiny_harness.core.literal.literal`): an escape sequence in a message, a goal,
a task or artifact name, or an error quoting one is printed as ``\\x1b[2J``, never sent to the
terminal. Table cells are escaped on one line before they are measured, so columns stay aligned.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TextIO

from tiny_harness.cli.kubectl_session import Said, name_of, role_of, spec_of, state_of, status_of
from tiny_harness.cli.kubectl_session import lifecycle_of as participant_lifecycle
from tiny_harness.core.approval import ARGUMENTS_MAX, PendingApproval, Requirement, undecided
from tiny_harness.core.artifact_index import ArtifactRow
from tiny_harness.core.clock import parse
from tiny_harness.core.command_spec import CommandSpec
from tiny_harness.core.history import TranscriptMessage
from tiny_harness.core.literal import literal
from tiny_harness.core.sizes import kib
from tiny_harness.core.states import TaskState
from tiny_harness.core.task import SubTaskRow, local_parent_of
from tiny_harness.core.usage import total
from tiny_harness.kube.client import Obj

_STATE_PREFIX: Final = "TASK_STATE_"
_GAP: Final = "   "
#: The most lines of a call's arguments ``get`` shows, and the widest; ``kubectl get ht TASK
#: -o yaml`` shows them whole (status.approvals).
ARGUMENT_LINES: Final = 20
ARGUMENT_WIDTH: Final = 100


def short_state(state: TaskState | str) -> str:
    """``TASK_STATE_INPUT_REQUIRED`` as ``INPUT_REQUIRED``."""
    return str(state).removeprefix(_STATE_PREFIX)


def state_text(state: TaskState | str, sub_state: str | None) -> str:
    """The state with its sub-state, as one phrase: ``INPUT_REQUIRED (awaiting-answer)``."""
    return short_state(state) + (f" ({sub_state})" if sub_state else "")


def age(stamp: str | None, now: dt.datetime) -> str:
    """How long ago ``stamp`` was, the way ``kubectl get`` writes an AGE."""
    then = parse(stamp)
    if then is None:
        return "<unknown>"
    return duration(int((now - then).total_seconds()))


def duration(seconds: int) -> str:
    """A span of time as ``kubectl get`` writes an AGE: ``45s``, ``3m20s``, ``2h``, ``3d4h``."""
    seconds = max(0, seconds)
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if seconds < 120:
        return f"{seconds}s"
    if minutes < 10:
        return f"{minutes}m{seconds % 60}s" if seconds % 60 else f"{minutes}m"
    if hours < 3:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if days < 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    if days < 365 * 2:
        return f"{days}d"
    return f"{days // 365}y{days % 365}d" if days % 365 else f"{days // 365}y"


def out(text: str = "", *, file: TextIO | None = None) -> None:
    """Print ``text`` for a person (standard output, or ``file``), literally: the one way
    ``kubectl harness`` writes text."""
    print(literal(text), file=file or sys.stdout, flush=True)


def table(header: Sequence[str], rows: Iterable[Sequence[str]], *, headers: bool = True) -> str:
    """Columns padded to their widest cell, as ``kubectl get`` prints them; each cell shown
    literally on one line. Without ``headers`` (``--no-headers``), the rows alone."""
    body = [[literal(cell, lines=False) for cell in r] for r in rows]
    lines = [list(header), *body] if headers else body
    widths = [max((len(line[i]) for line in lines), default=0) for i in range(len(header))]
    return "\n".join(
        _GAP.join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in lines
    )


# -- list: the task tree ---------------------------------------------------------------------


@dataclass(frozen=True)
class TreeRow:
    """One task in the tree, with the prefix that draws its branch."""

    prefix: str
    obj: Obj


def _parent_of(obj: Obj) -> str | None:
    # A parent on another agent is not in this list.
    return local_parent_of(obj.get("spec"))


def _key(obj: Obj) -> tuple[str, str]:
    meta = obj["metadata"]
    return str(meta.get("namespace", "")), str(meta["name"])


def task_tree(objs: Iterable[Obj], first: Callable[[Obj], bool] | None = None) -> list[TreeRow]:
    """Tasks ordered as a tree: each child under its parent (``spec.parent.taskId`` in the same
    namespace), by name as ``kubectl get`` orders them; a child whose parent is not listed is a
    root. With ``first``, the branches that hold a task it picks come before the others, at
    every level (so ``list`` shows first the tasks that wait for you)."""
    items = sorted(objs, key=_key)
    present = {(o["metadata"].get("namespace", ""), name_of(o)) for o in items}
    children: dict[tuple[str, str], list[Obj]] = {}
    roots: list[Obj] = []
    for obj in items:
        namespace = obj["metadata"].get("namespace", "")
        parent = _parent_of(obj)
        if parent is not None and (namespace, parent) in present and parent != name_of(obj):
            children.setdefault((namespace, parent), []).append(obj)
        else:
            roots.append(obj)
    if first is not None:
        picked: dict[tuple[str, str], bool] = {}

        def holds(obj: Obj) -> bool:
            key = _key(obj)
            if key not in picked:
                picked[key] = False  # a parent loop ends here
                picked[key] = first(obj) or any(holds(kid) for kid in children.get(key, []))
            return picked[key]

        def ordered(objs: list[Obj]) -> list[Obj]:
            return sorted(objs, key=lambda o: not holds(o))  # stable: by name within each

        roots = ordered(roots)
        children = {key: ordered(kids) for key, kids in children.items()}
    rows: list[TreeRow] = []
    seen: set[tuple[str, str]] = set()

    def walk(obj: Obj, lead: str, branch: str) -> None:
        key = (obj["metadata"].get("namespace", ""), name_of(obj))
        if key in seen:
            return
        seen.add(key)
        rows.append(TreeRow(lead + branch, obj))
        kids = children.get(key, [])
        below = lead + ("" if not branch else "   " if branch == "└─ " else "│  ")
        for index, kid in enumerate(kids):
            walk(kid, below, "└─ " if index == len(kids) - 1 else "├─ ")

    for root in roots:
        walk(root, "", "")
    # A parent loop (never written by the operator) would leave tasks unvisited: list them too.
    for obj in items:
        if (obj["metadata"].get("namespace", ""), name_of(obj)) not in seen:
            walk(obj, "", "")
    return rows


def lifecycle_of(obj: Obj) -> str:
    return participant_lifecycle(obj).value


#: What ``-o wide`` adds to the ``list`` table.
WIDE_COLUMNS: Final = ("MODEL", "TURN", "RUNNER", "GOAL")
#: The widest a goal is shown in a ``-o wide`` row.
WIDE_GOAL: Final = 60


def task_list(
    objs: Iterable[Obj],
    participant: str,
    now: dt.datetime,
    *,
    namespaces: bool = False,
    wide: bool = False,
    headers: bool = True,
) -> str:
    """The ``list`` table: the tree with state, sub-state, lifecycle, your role, the calls that
    wait for approval and age; the branches with calls you may decide first. ``wide`` adds
    the model, the turn, the replica running it and the first line of the goal."""
    header = ["NAME", "STATE", "SUB-STATE", "LIFECYCLE", "ROLE", "APPROVALS", "AGE"]
    if namespaces:
        header.insert(0, "NAMESPACE")
    if wide:
        header += WIDE_COLUMNS
    rows: list[list[str]] = []
    for row in task_tree(objs, first=lambda obj: waits_for(obj, participant)):
        obj = row.obj
        status = status_of(obj)
        role = role_of(obj, participant)
        cells = [
            row.prefix + name_of(obj),
            short_state(state_of(obj)),
            status.sub_state or "-",
            lifecycle_of(obj),
            role.value if role is not None else "-",
            approvals_cell(obj, participant),
            age(obj["metadata"].get("creationTimestamp"), now),
        ]
        if namespaces:
            cells.insert(0, str(obj["metadata"].get("namespace", "")))
        if wide:
            spec = spec_of(obj)
            cells += [
                status.model or "-",
                str(status.turn),
                status.runner.holder if status.runner is not None else "-",
                _first_line(spec.goal, WIDE_GOAL) if spec is not None else "-",
            ]
        rows.append(cells)
    return table(header, rows, headers=headers)


# -- approvals -------------------------------------------------------------------------------


def may_decide(obj: Obj, pending: PendingApproval, participant: str | None) -> bool:
    """Whether ``participant`` may decide the call: the operator's own rule
    (:meth:`~tiny_harness.core.approval.Requirement.admits`) with their role on the task."""
    if participant is None:
        return False
    return pending.requirement.admits(participant, role_of(obj, participant))


def waits_for(obj: Obj, participant: str) -> bool:
    """Whether a call of the task waits for a decision ``participant`` may give."""
    return any(may_decide(obj, p, participant) for p in undecided(status_of(obj).approvals))


def approvals_cell(obj: Obj, participant: str) -> str:
    """``list``'s APPROVALS: how many calls wait, and how many of them are yours to decide."""
    waiting = undecided(status_of(obj).approvals)
    yours = sum(1 for p in waiting if may_decide(obj, p, participant))
    if not waiting:
        return "-"
    if yours == len(waiting):
        return f"{yours} for you"
    return f"{len(waiting)} ({yours} for you)" if yours else str(len(waiting))


def deciders_text(requirement: Requirement) -> str:
    """Who may decide: ``assignees or admins``; with several policies, each in parentheses."""
    if len(requirement.deciders) == 1:
        return requirement.deciders[0].describe()
    return requirement.describe()


def arguments_lines(arguments: Mapping[str, Any], *, cut: bool = False) -> list[str]:
    """A call's arguments as indented JSON, at most :data:`ARGUMENT_LINES` lines of
    :data:`ARGUMENT_WIDTH` characters; arguments the operator cut (``argumentsCut``: their
    JSON's start, under ``_start``) as that start, and a line saying so."""
    text = str(arguments.get("_start", "")) if cut else json.dumps(arguments, indent=2)
    lines = [
        line if len(line) <= ARGUMENT_WIDTH else line[: ARGUMENT_WIDTH - 3] + "..."
        for line in text.splitlines() or [""]
    ]
    if len(lines) > ARGUMENT_LINES:
        hidden = len(lines) - ARGUMENT_LINES + 1
        lines = [*lines[: ARGUMENT_LINES - 1], f"... ({hidden} more lines)"]
    if cut:
        lines.append(
            f"(cut: longer than {ARGUMENTS_MAX // 1024} KiB of JSON; the call runs with them whole)"
        )
    return lines


def whole_arguments_lines(pending: PendingApproval, whole: str | None = None) -> list[str]:
    """The call's arguments whole, as indented JSON, for the person who decides it: nothing
    cut, however long (a call is decided as it will run). Arguments the operator stored cut
    are shown from the park's journal entry (``whole``, read from the turn records); when
    that could not be read, their start and a line saying what is missing."""
    if pending.arguments_cut and whole is not None:
        try:
            return json.dumps(json.loads(whole), indent=2, ensure_ascii=False).splitlines()
        except json.JSONDecodeError:
            return whole.splitlines() or [""]
    if pending.arguments_cut:
        start = str(pending.arguments.get("_start", ""))
        return [
            *(start.splitlines() or [""]),
            f"(cut: longer than {ARGUMENTS_MAX // 1024} KiB of JSON, and the task's turn "
            "records, which hold them whole, could not be read: read them before you approve)",
        ]
    return json.dumps(pending.arguments, indent=2, ensure_ascii=False).splitlines() or ["{}"]


def _until(pending: PendingApproval, now: dt.datetime) -> str:
    at = parse(pending.expires_at)
    if at is None:
        return pending.expires_at
    left = int((at - now).total_seconds())
    verdict = "approved" if pending.requirement.on_timeout == "approve" else "rejected"
    when = f"in {duration(left)}" if left > 0 else "its time is up"
    return f"{pending.expires_at} ({when}; {verdict} if no one decides)"


#: Where a call's fields start their values in ``get`` (after ``    Decided by:  ``), so the
#: blocks of several calls line up.
_CALL_FIELDS: Final = 17


def _fields(pairs: Sequence[tuple[str, str]], lead: str, width: int | None = None) -> list[str]:
    width = width or max(len(key) for key, _ in pairs) + 2
    return [
        lead + f"{key + ':':<{width}}" + _indent(value, lead + " " * width).lstrip()
        for key, value in pairs
    ]


def _approval(
    obj: Obj,
    pending: PendingApproval,
    participant: str | None,
    now: dt.datetime,
    whole: str | None = None,
) -> list[str]:
    requirement = pending.requirement
    who = deciders_text(requirement)
    if participant is not None:
        who += " (you may decide)" if may_decide(obj, pending, participant) else " (not you)"
    pairs = [
        ("Arguments", "\n".join(whole_arguments_lines(pending, whole))),
        ("Decided by", who),
    ]
    if pending.model_call_id:
        pairs.append(("Model's id", f"{pending.model_call_id} (shared with another call)"))
    if requirement.sources:
        pairs.append(("Policy", ", ".join(requirement.sources)))
    if requirement.allow_edit:
        pairs.append(("Edits", "allowed (approve --arguments JSON)"))
    decision = pending.decision
    if decision is None:
        pairs += [("Until", _until(pending, now)), ("Decision", "none yet")]
    else:
        pairs.append(("Decision", f"{decision.text(pending.tool)} (at {decision.at})"))
        if decision.arguments is not None:
            pairs.append(("Edited to", "\n".join(arguments_lines(decision.arguments))))
    park = f", park {pending.park}" if pending.park else ""
    head = f"  {pending.tool} (call {pending.call_id}, asked in turn {pending.turn}{park})"
    return [head, *_fields(pairs, "    ", _CALL_FIELDS - 4)]


def deciding(pending: PendingApproval, verdict: str, whole: str | None = None) -> str:
    """The call a decision is about to be sent on, whole, as ``approve`` and ``reject`` show
    it before they send: what is decided is what the person saw."""
    park = f" in park {pending.park}" if pending.park else ""
    lines = [f"{verdict.capitalize()} {pending.tool} (call {pending.call_id}{park}) with:"]
    lines += [f"  {line}" for line in whole_arguments_lines(pending, whole)]
    return "\n".join(lines)


def approvals_section(
    obj: Obj,
    participant: str | None,
    now: dt.datetime,
    whole: Mapping[str, str] | None = None,
) -> list[str]:
    """``get``'s calls that wait for approval (``status.approvals``): each with its arguments
    whole (``whole``: the ones the status holds cut, by call id, from the journal), who
    decides, until when and its decision, and how to decide the first that waits for you."""
    approvals = status_of(obj).approvals
    if not approvals:
        return []
    waiting = undecided(approvals)
    counts = [f"{len(waiting)} undecided"] if waiting else []
    if len(waiting) < len(approvals):
        counts.append(f"{len(approvals) - len(waiting)} decided")
    out = [f"Approvals ({', '.join(counts)}):"]
    for pending in approvals:
        out += _approval(obj, pending, participant, now, (whole or {}).get(pending.call_id))
    yours = next((p for p in waiting if may_decide(obj, p, participant)), None)
    if yours is not None:
        task = name_of(obj)
        out += _fields(
            [
                (
                    "Decide with",
                    f"kubectl harness approve {task} {yours.call_id}\n"
                    f"kubectl harness reject {task} {yours.call_id} --reason TEXT",
                )
            ],
            "  ",
            _CALL_FIELDS - 2,
        )
    return out


# -- get: one task described -----------------------------------------------------------------


def _indent(text: str, by: str) -> str:
    return "\n".join(by + line if line else line for line in text.splitlines())


def message_text(said: TranscriptMessage, *, pending: bool = False) -> str:
    """``who: text``, continuation lines indented under the text."""
    who = (said.sender or "someone") if said.role == "user" else "agent"
    lead = f"{who}: " + ("(not yet read) " if pending else "")
    lines = said.text.splitlines() or [""]
    pad = " " * len(f"{who}: ")
    return "\n".join([lead + lines[0], *(pad + line if line else "" for line in lines[1:])])


def _sub_task_rows(rows: Sequence[SubTaskRow]) -> str:
    return table(
        ["TASK", "STATE", "SUB-STATE", "GOAL"],
        (
            [
                r.task_id + (f" (on {r.agent})" if r.agent else ""),
                short_state(r.state) + (" (result unread)" if r.result_unread else ""),
                r.sub_state or "-",
                _first_line(r.goal, 60),
            ]
            for r in rows
        ),
    )


def artifact_rows(rows: Sequence[ArtifactRow]) -> str:
    """The artifacts ``get`` lists: name, size, chunks and description (no content)."""
    return table(
        ("NAME", "SIZE", "CHUNKS", "DESCRIPTION"),
        ((r.name, kib(r.size), str(len(r.chunks)), _first_line(r.description, 60)) for r in rows),
    )


def _first_line(text: str, width: int) -> str:
    line = text.strip().splitlines()[0] if text.strip() else "-"
    return line if len(line) <= width else line[: width - 3] + "..."


def describe(
    obj: Obj,
    conversation: Sequence[Said],
    history: int,
    now: dt.datetime,
    *,
    participant: str | None = None,
    whole: Mapping[str, str] | None = None,
) -> str:
    """What ``get`` prints: the task as ``kubectl describe`` would, its calls that wait for
    approval (whether ``participant`` may decide them), and its last messages."""
    spec = spec_of(obj)
    status = status_of(obj)
    meta = obj["metadata"]
    fields: list[tuple[str, str]] = [
        ("Name", meta["name"]),
        ("Namespace", str(meta.get("namespace", ""))),
        ("Age", age(meta.get("creationTimestamp"), now)),
    ]
    if spec is not None and spec.name:
        fields.append(("Title", spec.name))
    fields.append(("Goal", spec.goal if spec is not None else "-"))
    if spec is not None and spec.description:
        fields.append(("Description", spec.description))
    if spec is not None and spec.parent is not None:
        parent = spec.parent.task_id + (f" (on {spec.parent.agent})" if spec.parent.agent else "")
        fields.append(("Parent", parent))
    if spec is not None and spec.agent:
        fields.append(("Agent", f"{spec.agent} (a remote A2A agent does the work)"))
    if spec is not None and spec.tool_servers:
        fields.append(("Tool servers", ", ".join(spec.tool_servers)))
    participants = ", ".join(f"{p.id} ({p.role.value})" for p in spec.participants) if spec else ""
    fields += [
        ("Participants", participants or "-"),
        ("State", state_text(state_of(obj), status.sub_state)),
        ("Lifecycle", lifecycle_of(obj)),
        ("Model", status.model or "-"),
        ("Effort", status.reasoning_effort or "provider default"),
        ("Turn", str(status.turn)),
    ]
    if status.runner is not None:
        fields.append(("Running on", status.runner.holder))
    if status.usage is not None:
        fields.append(("Usage", status.usage.text()))
    if status.sub_task_usage is not None:
        with_sub_tasks = total(status.usage, status.sub_task_usage)
        fields.append(("Usage with sub-tasks", with_sub_tasks.text()))
    if status.active_seconds:
        limit = spec.active_deadline_seconds if spec is not None else None
        fields.append(
            ("Working time", f"{status.active_seconds:.1f}s" + (f" of {limit}s" if limit else ""))
        )
    if status.message:
        fields.append(("Status message", status.message))
    out = _fields(fields, "")
    out += approvals_section(obj, participant, now, whole)
    if spec is not None and spec.acceptance_criteria:
        out.append("Acceptance criteria:")
        out += [f"  - {c}" for c in spec.acceptance_criteria]
    plan = status.plan or (spec.plan if spec is not None else None)
    if plan is not None and plan.steps:
        current = plan.current_step()
        out.append(
            f"Plan: {plan.progress} steps done"
            + (f", current step: {current.name}" if current else "")
        )
        for step in plan.steps:
            mark = "x" if step.done else ">" if current and step.name == current.name else " "
            after = f" (after {', '.join(step.dependencies)})" if step.dependencies else ""
            produced = f" -> artifact {step.artifact}" if step.artifact else ""
            out.append(f"  [{mark}] {step.name}{after}{produced}")
    if status.sub_tasks:
        out.append("Sub-tasks:")
        out.append(_indent(_sub_task_rows(status.sub_tasks), "  "))
    if status.artifacts:
        out.append(f"Artifacts ({len(status.artifacts)}; kubectl harness artifact TASK NAME):")
        out.append(_indent(artifact_rows(status.artifacts), "  "))
    if history > 0:
        out.append(_transcript(conversation, history))
    return "\n".join(out)


def _transcript(conversation: Sequence[Said], history: int) -> str:
    if not conversation:
        return "Transcript: no messages yet"
    shown = conversation[-history:]
    total = len(conversation)
    count = f"last {len(shown)} of {total}" if len(shown) < total else f"{total} in all"
    lines = [f"Transcript ({count}):"]
    lines += [_indent(message_text(s.message, pending=s.pending), "  ") for s in shown]
    return "\n".join(lines)


# -- watch -----------------------------------------------------------------------------------


def clock(now: dt.datetime) -> str:
    return now.astimezone().strftime("%H:%M:%S")


def watch_line(now: dt.datetime, text: str) -> str:
    """One line of ``watch`` output, stamped with the local time; continuation lines indented."""
    stamp = clock(now)
    lines = text.splitlines() or [""]
    pad = " " * (len(stamp) + 2)
    return "\n".join([f"{stamp}  {lines[0]}", *(pad + line for line in lines[1:])])


def waiting_call(pending: PendingApproval) -> str:
    """A call that waits for approval, on one ``watch`` line: its tool, its arguments (cut to
    a line), its id and who decides."""
    arguments = json.dumps(pending.arguments, ensure_ascii=False)
    if len(arguments) > ARGUMENT_WIDTH // 2:
        arguments = arguments[: ARGUMENT_WIDTH // 2 - 3] + "..."
    return (
        f"{pending.tool} {arguments} waits for approval (call {pending.call_id}, decided by "
        f"{deciders_text(pending.requirement)})"
    )


def row_change(row: SubTaskRow) -> str:
    return f"sub-task {row.task_id}: {state_text(row.state, row.sub_state)}"


# -- commands --------------------------------------------------------------------------------


def command_table(commands: Iterable[CommandSpec]) -> str:
    return table(
        ["COMMAND", "ARGUMENTS", "DESCRIPTION"],
        ([f"/{c.name}", c.argument_hint or "-", c.description] for c in commands),
    )
