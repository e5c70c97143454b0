"""``ListTasks``: the caller's tasks, newest change first, filtered and paged as A2A says.

A list is answered from the index of the caller's tasks (:mod:`.task_index`): a lookup of
their names, a filter and a sort of their summaries, and the rendering of one page, so it
costs what the caller has, never what the namespace holds. A task whose stored form cannot be
rendered is left out of the page, and logged.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from a2a.types import Artifact, ListTasksRequest, ListTasksResponse, Message, Task
from a2a.utils.constants import DEFAULT_LIST_TASKS_PAGE_SIZE
from a2a.utils.errors import InvalidParamsError
from a2a.utils.task import ListTasksCursor, decode_list_tasks_cursor, encode_list_tasks_cursor
from pydantic import ValidationError

from tiny_harness.a2a_gateway.rendering import render_task
from tiny_harness.a2a_gateway.task_index import TaskIndex
from tiny_harness.core.a2a_task import state_from_a2a
from tiny_harness.core.reason_codes import ReasonCode, coded
from tiny_harness.core.states import TaskState
from tiny_harness.kube.participant_view import ParticipantView

log = logging.getLogger(__name__)

#: A page's sort key: whether the task has a last update, the update, its name.
SortKey = tuple[bool, int, str]


async def list_tasks(
    index: TaskIndex,
    participant: str | None,
    params: ListTasksRequest,
    *,
    history: Callable[[ParticipantView], Awaitable[list[Message]]],
    artifacts: Callable[[ParticipantView], Awaitable[list[Artifact]]],
) -> ListTasksResponse:
    """The page of ``participant``'s tasks ``params`` asks for, with each task's ``history``
    and ``artifacts`` when it asks for them."""
    keys = _matching(index, participant, params)
    start = 0
    if params.page_token:
        cursor = decode_list_tasks_cursor(params.page_token)
        if cursor is None:
            raise coded(
                InvalidParamsError,
                ReasonCode.INVALID_PARAMS,
                f"invalid page token {params.page_token!r}",
            )
        start = next((i for i, k in enumerate(keys) if k < cursor.sort_key()), len(keys))
    size = params.page_size or DEFAULT_LIST_TASKS_PAGE_SIZE
    views: dict[str, ParticipantView] = {}
    page: list[Task] = []
    for _, _, name in keys[start : start + size]:
        obj = index.get(name)
        if obj is None:
            continue
        view = ParticipantView(obj)
        try:
            page.append(render_task(view))
        except ValidationError as exc:
            log.warning("task %s cannot be rendered: %s", name, exc)
            continue
        views[name] = view
    next_token = ""
    if start + size < len(keys):
        has, stamp, last = keys[start + size - 1]
        next_token = encode_list_tasks_cursor(ListTasksCursor(stamp if has else None, last))
    if params.HasField("history_length") and params.history_length > 0:
        histories = await asyncio.gather(*(history(views[t.id]) for t in page))
        for task, said in zip(page, histories, strict=True):
            task.history.extend(said)
    if params.include_artifacts:
        found = await asyncio.gather(*(artifacts(views[t.id]) for t in page))
        for task, made in zip(page, found, strict=True):
            task.artifacts.extend(made)
    return ListTasksResponse(
        tasks=page, next_page_token=next_token, page_size=size, total_size=len(keys)
    )


def _matching(index: TaskIndex, participant: str | None, params: ListTasksRequest) -> list[SortKey]:
    """The sort keys of ``participant``'s tasks that pass ``params``' filters, newest first."""
    wanted_state = state_from_a2a(params.status) if params.status else None
    after = (
        params.status_timestamp_after.ToNanoseconds()
        if params.HasField("status_timestamp_after")
        else None
    )
    keys: list[SortKey] = []
    for name, summary in index.summaries_of(participant or ""):
        if params.context_id and summary.context_id != params.context_id:
            continue
        if wanted_state is not None and (summary.state or TaskState.SUBMITTED) != wanted_state:
            continue
        if after is not None and not (summary.updated_ns and summary.updated_ns >= after):
            continue
        keys.append((summary.updated_ns > 0, summary.updated_ns, name))
    keys.sort(reverse=True)
    return keys
