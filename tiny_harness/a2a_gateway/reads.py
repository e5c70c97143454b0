"""``GetTask`` and ``ListTasks``: a task, or the caller's tasks, as the store reads them.

Both are scoped to the caller (a task they are not on does not exist for them) and answered
from the namespace feed's index. What the SDK parses leniently is checked as the client sent
it: a ``ListTasks`` status filter that is not a task state would otherwise list every task.
"""

from __future__ import annotations

from a2a.server.context import ServerCallContext
from a2a.types import GetTaskRequest, ListTasksRequest, ListTasksResponse, Task
from a2a.utils.errors import TaskNotFoundError
from a2a.utils.task import apply_history_length, validate_history_length, validate_page_size

from tiny_harness.a2a_gateway.call_context import requested
from tiny_harness.a2a_gateway.policy import validate_status_filter
from tiny_harness.a2a_gateway.store import KubeTaskStore
from tiny_harness.core.reason_codes import ReasonCode, coded


async def get_task(
    store: KubeTaskStore, params: GetTaskRequest, context: ServerCallContext
) -> Task:
    """The task with its history (cut to ``history_length``) and artifacts."""
    validate_history_length(params)
    stored = await store.get(params.id, context)
    if stored is None:
        raise coded(TaskNotFoundError, ReasonCode.TASK_NOT_FOUND, f"task {params.id!r} not found")
    return apply_history_length(stored.task, params)


async def list_tasks(
    store: KubeTaskStore, params: ListTasksRequest, context: ServerCallContext
) -> ListTasksResponse:
    """A page of the caller's tasks; their artifacts only when asked for."""
    validate_status_filter(requested(context, "status"))
    validate_history_length(params)
    if params.HasField("page_size"):
        validate_page_size(params.page_size)
    page = await store.list(params, context)
    for task in page.tasks:
        if not params.include_artifacts:
            task.ClearField("artifacts")
    return page
