"""The prompt: what the model sees at each call of a turn (the context assembled for it).

The model is stateless; everything it knows about the task comes from one request, rebuilt
before every call: a system prompt (the goal, the description, the acceptance criteria, the
plan with its progress, the sub-tasks, and how this kind of task ends), the history, and the
tool specs. The prompt is rebuilt each time because the plan and the sub-tasks change during a
turn, and the model must see the change in its next call.
"""

from __future__ import annotations

from collections.abc import Sequence

from tiny_harness.core.llm import ChatMessage, LLMRequest, ToolSpec
from tiny_harness.core.plan import Plan
from tiny_harness.core.task import Lifecycle, SubTaskRow, TaskExtension
from tiny_harness.core.turn import TaskSettings

_ENDINGS = {
    Lifecycle.CONVERSATION: (
        "This task is a conversation. When you reply without calling a tool, your reply is sent "
        "and you wait for the participant's next message; only a participant ends the "
        "conversation. Use ask_participant for a question you need answered before going on."
    ),
    Lifecycle.DELEGATED: (
        "This task was delegated to you. When the goal is met, reply with the final result "
        "without calling a tool: that completes the task, once every sub-task has ended and "
        "you have read its result."
    ),
}


def render_plan(plan: Plan) -> str:
    """The plan as a checklist, with its progress and the current step marked."""
    current = plan.current_step()
    lines = [f"Plan ({plan.progress} steps done):"]
    for step in plan.steps:
        line = f"- [{'x' if step.done else ' '}] {step.name}"
        if step.description:
            line += f": {step.description}"
        if step.dependencies:
            line += f" (after {', '.join(step.dependencies)})"
        if step.linked_tasks:
            line += f" [sub-tasks: {', '.join(step.linked_tasks)}]"
        if current is not None and step.name == current.name:
            line += "  <- current step"
        if step.done and step.output:
            line += f"\n  output: {step.output}"
        lines.append(line)
    return "\n".join(lines)


def _short_state(row: SubTaskRow) -> str:
    state = row.state.value.removeprefix("TASK_STATE_").lower().replace("_", "-")
    return f"{state} ({row.sub_state})" if row.sub_state else state


def system_prompt(task: TaskExtension, *, task_id: str) -> str:
    """The system prompt for a task, from its goal, description, criteria, plan, sub-tasks and
    the names of its artifacts."""
    title = f"{task_id} ({task.name})" if task.name else task_id
    parts = [f"You are the agent working on task {title}.", f"Goal: {task.goal}"]
    if task.description:
        parts.append(f"Description: {task.description}")
    if task.acceptance_criteria:
        parts.append(
            "Acceptance criteria:\n" + "\n".join(f"- {c}" for c in task.acceptance_criteria)
        )
    if task.plan is not None and task.plan.steps:
        parts.append(render_plan(task.plan))
    else:
        parts.append("There is no plan yet; call create_plan when the work has several steps.")
    if task.sub_tasks:
        parts.append(
            "Sub-tasks:\n"
            + "\n".join(f"- {r.task_id}: {r.goal} — {_short_state(r)}" for r in task.sub_tasks)
        )
    if task.artifacts:
        # Their names, so the model can add to one or name it as a step's output; never their
        # content, which is in the history as the calls that published it.
        parts.append(
            "Artifacts published (publish_artifact adds to one with append: true):\n"
            + "\n".join(
                f"- {a.name}: {a.size} bytes in {len(a.chunks)} chunk(s)" for a in task.artifacts
            )
        )
    parts.append(_ENDINGS[task.effective_lifecycle])
    return "\n\n".join(parts)


def sub_task_note(row: SubTaskRow, result: str | None) -> ChatMessage:
    """The note that tells the model about a sub-task's news (usually: it ended)."""
    text = f"Note: sub-task {row.task_id} ({row.goal}) is now {_short_state(row)}."
    if result:
        text += f"\nIts result:\n{result}"
    return ChatMessage(role="user", content=text)


def assemble_context(
    task: TaskExtension,
    *,
    task_id: str,
    history: Sequence[ChatMessage],
    tools: Sequence[ToolSpec],
    settings: TaskSettings,
    system: str | None = None,
) -> LLMRequest:
    """The request for the next model call, with the task's current model and effort."""
    return LLMRequest(
        system=system if system is not None else system_prompt(task, task_id=task_id),
        messages=tuple(history),
        tools=tuple(tools),
        model=settings.model,
        reasoning_effort=settings.reasoning_effort,
    )
