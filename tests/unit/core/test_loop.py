"""The core loop, one turn at a time: tools, turn ends by lifecycle, the completion predicate,
mid-turn messages and settings, the call bound, and resuming a killed turn from its journal
without repeating a model call or a side effect."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tiny_harness.core.compaction import FixedContextWindow
from tiny_harness.core.completion import CompletionVerdict, decide_completion
from tiny_harness.core.llm import ChatMessage, LLMRequest, LLMResponse
from tiny_harness.core.loop import CoreLoop
from tiny_harness.core.loop_config import LoopConfig
from tiny_harness.core.plan import Plan, PlanStep
from tiny_harness.core.states import SubState, TaskState
from tiny_harness.core.task import Budget, TaskExtension, TaskUsage
from tiny_harness.core.tools import ToolContext, ToolRegistrationError, ToolRegistry
from tiny_harness.core.turn import (
    JournalMismatchError,
    ModelEntry,
    OutcomeKind,
    TaskSettings,
    TurnInput,
    TurnOutcome,
    dump_journal,
    load_journal,
)

from .conftest import (
    HostCrashed,
    MemoryHost,
    ScriptedModel,
    calls,
    child_row,
    conversation,
    delegated,
    reply,
)

WINDOW = FixedContextWindow(200_000)
HELLO = (ChatMessage(role="user", content="Hello"),)


class Counter:
    """A tool with a side effect we can count: it adds to a total."""

    def __init__(self) -> None:
        self.runs = 0
        self.registry = ToolRegistry()
        self.registry.tool(
            "add_to_total",
            "Add a number to the running total.",
            {
                "type": "object",
                "properties": {"n": {"type": "integer"}},
                "required": ["n"],
                "additionalProperties": False,
            },
        )(self.add)

    def add(self, args: dict[str, Any], ctx: ToolContext) -> str:
        self.runs += 1
        return f"total is now {args['n'] * self.runs}"


def loop_for(model: ScriptedModel, tools: ToolRegistry | None = None, **config: Any) -> CoreLoop:
    return CoreLoop(model, WINDOW, tools, config=LoopConfig(**config))


def turn(
    task: TaskExtension,
    history: tuple[ChatMessage, ...] = HELLO,
    journal: Any = (),
    number: int = 0,
) -> TurnInput:
    return TurnInput(task_id="t1", turn=number, task=task, history=history, journal=journal)


async def test_a_tool_result_is_in_the_next_model_request() -> None:
    counter = Counter()
    model = ScriptedModel(calls(("add_to_total", {"n": 2})), reply("The total is 2."))
    host = MemoryHost()
    outcome = await loop_for(model, counter.registry).run_turn(host, turn(delegated()))

    assert counter.runs == 1
    second = model.requests[1].messages
    assert second[-2].tool_calls[0].name == "add_to_total"
    assert second[-1] == ChatMessage(
        role="tool", content="total is now 2", tool_call_id="call-0", is_error=False
    )
    assert outcome.text == "The total is 2."
    assert host.outcome == outcome


async def test_bad_arguments_return_an_error_and_the_model_recovers() -> None:
    counter = Counter()
    model = ScriptedModel(
        calls(("add_to_total", {"n": "two"})),
        calls(("add_to_total", {"n": 2})),
        reply("Done."),
    )
    outcome = await loop_for(model, counter.registry).run_turn(MemoryHost(), turn(delegated()))

    error = model.requests[1].messages[-1]
    assert error.is_error
    assert "$.n: 'two' is not of type 'integer'" in error.content
    assert counter.runs == 1
    assert model.requests[2].messages[-1].content == "total is now 2"
    assert outcome.kind is OutcomeKind.COMPLETED


async def test_a_tool_that_raises_becomes_an_error_result_and_the_turn_goes_on() -> None:
    registry = ToolRegistry()

    @registry.tool("fetch", "Fetch a page.")
    async def fetch(args: dict[str, Any], ctx: ToolContext) -> str:
        raise ConnectionError("connection refused")

    model = ScriptedModel(calls(("fetch", {})), reply("The page is down."))
    outcome = await loop_for(model, registry).run_turn(MemoryHost(), turn(delegated()))

    result = model.requests[1].messages[-1]
    assert result.is_error
    assert "ConnectionError: connection refused" in result.content
    assert outcome.text == "The page is down."


async def test_an_unknown_tool_and_bad_json_do_not_crash_the_turn() -> None:
    model = ScriptedModel(
        calls(("no_such_tool", {}), ("create_plan", "{not json")), reply("Recovered.")
    )
    outcome = await loop_for(model).run_turn(MemoryHost(), turn(delegated()))
    unknown, bad_json = model.requests[1].messages[-2:]
    assert unknown.is_error
    assert "no tool named 'no_such_tool'" in unknown.content
    assert bad_json.is_error
    assert "not valid JSON" in bad_json.content
    assert outcome.kind is OutcomeKind.COMPLETED


async def test_ask_participant_parks_awaiting_an_answer_with_the_question_as_reply() -> None:
    model = ScriptedModel(calls(("ask_participant", {"question": "Which city?"})))
    host = MemoryHost()
    outcome = await loop_for(model).run_turn(host, turn(delegated()))

    assert (outcome.kind, outcome.state, outcome.sub_state, outcome.text) == (
        OutcomeKind.WAITING_FOR_ANSWER,
        TaskState.INPUT_REQUIRED,
        SubState.AWAITING_ANSWER,
        "Which city?",
    )
    assert len(model.requests) == 1
    # The call is answered in the history, so the next turn's request is well formed.
    assert outcome.history[-1].role == "tool"
    assert outcome.history[-1].tool_call_id == "call-0"


async def test_a_conversation_reply_parks_awaiting_the_next_message_and_never_completes() -> None:
    model = ScriptedModel(reply("Hi! Where would you like to go?"))
    outcome = await loop_for(model).run_turn(MemoryHost(), turn(conversation()))

    assert outcome.kind is OutcomeKind.WAITING_FOR_MESSAGE
    assert outcome.state is TaskState.INPUT_REQUIRED
    assert outcome.sub_state is SubState.AWAITING_NEXT_MESSAGE
    assert outcome.text == "Hi! Where would you like to go?"


async def test_a_conversation_with_all_sub_tasks_done_still_does_not_complete() -> None:
    task = conversation(sub_tasks=(child_row("t1-a", TaskState.COMPLETED),))
    outcome = await loop_for(ScriptedModel(reply("Anything else?"))).run_turn(
        MemoryHost(), turn(task)
    )
    assert outcome.state is not TaskState.COMPLETED


async def test_a_conversation_started_without_a_message_parks_without_a_model_call() -> None:
    model = ScriptedModel()
    outcome = await loop_for(model).run_turn(MemoryHost(), turn(conversation(), history=()))
    assert model.requests == []
    assert outcome.sub_state is SubState.AWAITING_NEXT_MESSAGE


async def test_a_delegated_task_completes_with_the_final_text() -> None:
    model = ScriptedModel(reply("Revenue grew 12%."))
    outcome = await loop_for(model).run_turn(MemoryHost(), turn(delegated()))
    assert (outcome.kind, outcome.state, outcome.sub_state, outcome.text) == (
        OutcomeKind.COMPLETED,
        TaskState.COMPLETED,
        None,
        "Revenue grew 12%.",
    )


async def test_a_delegated_task_with_an_unresolved_sub_task_waits() -> None:
    task = delegated(sub_tasks=(child_row("t1-a", TaskState.WORKING),))
    outcome = await loop_for(ScriptedModel(reply("Waiting on research."))).run_turn(
        MemoryHost(), turn(task)
    )
    assert outcome.kind is OutcomeKind.WAITING_FOR_SUBTASKS
    assert outcome.state is TaskState.WORKING
    assert "t1-a (working)" in outcome.text


async def test_a_completion_override_completes_despite_an_unresolved_sub_task() -> None:
    task = delegated(sub_tasks=(child_row("t1-a", TaskState.WORKING),))
    loop = CoreLoop(
        ScriptedModel(reply("Good enough.")), WINDOW, completion_override=lambda t, d: True
    )
    outcome = await loop.run_turn(MemoryHost(), turn(task))
    assert outcome.state is TaskState.COMPLETED


async def test_an_unread_sub_task_result_takes_one_more_model_call_before_completing() -> None:
    task = delegated(sub_tasks=(child_row("t1-a", TaskState.COMPLETED, unread=True),))
    model = ScriptedModel(reply("Let me check."), reply("The sub-task finished; all done."))
    host = MemoryHost()
    outcome = await loop_for(model).run_turn(host, turn(task))

    assert len(model.requests) == 2
    note = model.requests[1].messages[-1]
    assert note.role == "user"
    assert "sub-task t1-a" in note.content
    assert "completed" in note.content
    assert outcome.state is TaskState.COMPLETED
    assert outcome.text == "The sub-task finished; all done."
    assert outcome.sub_tasks[0].result_unread is False
    read = [e for e in host.journal if isinstance(e, ModelEntry) and e.read_sub_tasks]
    assert [e.read_sub_tasks for e in read] == [("t1-a",)]


async def test_a_sub_task_ending_during_the_last_call_is_read_before_completing() -> None:
    task = delegated(sub_tasks=(child_row("t1-a", TaskState.WORKING),))
    host = MemoryHost()

    def finishing(request: LLMRequest) -> LLMResponse:
        host.sub_task_news(child_row("t1-a", TaskState.COMPLETED, unread=True), "42 sources")
        return reply("Waiting for research.")

    model = ScriptedModel(finishing, reply("Research found 42 sources."))
    outcome = await loop_for(model).run_turn(host, turn(task))

    assert "Its result:\n42 sources" in model.requests[1].messages[-1].content
    assert outcome.state is TaskState.COMPLETED
    assert outcome.sub_tasks[0].state is TaskState.COMPLETED
    assert outcome.sub_tasks[0].result_unread is False


async def test_a_message_arriving_mid_turn_reaches_the_next_model_request() -> None:
    counter = Counter()
    host = MemoryHost()

    def adding_while_alice_writes(args: dict[str, Any], ctx: ToolContext) -> str:
        host.send("Actually, make it Lisbon.")
        return counter.add(args, ctx)

    registry = ToolRegistry()
    registry.add(counter.registry.specs[0], adding_while_alice_writes)
    model = ScriptedModel(calls(("add_to_total", {"n": 1})), reply("Lisbon it is."))
    await loop_for(model, registry).run_turn(host, turn(conversation()))

    assert model.requests[1].messages[-1] == ChatMessage(
        role="user", content="Actually, make it Lisbon."
    )
    assert host.inbox[0].id in host.acked


async def test_a_model_change_mid_turn_applies_from_the_next_request() -> None:
    host = MemoryHost(settings=TaskSettings(model="small", reasoning_effort="low"))

    def switching(request: LLMRequest) -> LLMResponse:
        host.current_settings = TaskSettings(model="large", reasoning_effort="high")
        return calls(("create_plan", {"steps": [{"name": "a"}]}))

    model = ScriptedModel(switching, reply("ok"))
    await loop_for(model).run_turn(host, turn(delegated()))

    assert [(r.model, r.reasoning_effort) for r in model.requests] == [
        ("small", "low"),
        ("large", "high"),
    ]


async def test_the_system_prompt_carries_the_goal_criteria_and_plan_progress() -> None:
    task = delegated(
        description="Use the PDF in the shared drive.",
        acceptance_criteria=("Names the three biggest costs",),
    )
    model = ScriptedModel(
        calls(
            (
                "create_plan",
                {"steps": [{"name": "read"}, {"name": "write", "dependencies": ["read"]}]},
            )
        ),
        calls(("complete_step", {"name": "read", "output": "costs: A, B, C"})),
        reply("A, B and C."),
    )
    outcome = await loop_for(model).run_turn(MemoryHost(), turn(task))

    system = model.requests[2].system
    assert "Goal: Summarise the quarterly report" in system
    assert "Use the PDF in the shared drive." in system
    assert "- Names the three biggest costs" in system
    assert "Plan (1/2 steps done)" in system
    assert "- [x] read" in system
    assert "- [ ] write (after read)  <- current step" in system
    assert outcome.plan is not None
    assert outcome.plan.progress == "1/2"


async def test_a_plan_with_a_cycle_is_refused_and_the_model_is_told_the_cycle() -> None:
    model = ScriptedModel(
        calls(
            (
                "create_plan",
                {
                    "steps": [
                        {"name": "a", "dependencies": ["b"]},
                        {"name": "b", "dependencies": ["a"]},
                    ]
                },
            )
        ),
        reply("I will work without a plan."),
    )
    outcome = await loop_for(model).run_turn(MemoryHost(), turn(delegated()))
    error = model.requests[1].messages[-1]
    assert error.is_error
    assert "a -> b -> a" in error.content
    assert outcome.plan is None


async def test_spawn_subtask_links_the_child_from_the_current_step_and_waits_for_it() -> None:
    plan = Plan.create([PlanStep(name="research"), PlanStep(name="write")])
    host = MemoryHost()
    model = ScriptedModel(calls(("spawn_subtask", {"goal": "Find sources"})), reply("Waiting."))
    outcome = await loop_for(model).run_turn(host, turn(delegated(plan=plan)))

    [intent] = host.spawn_requests
    assert (intent.id, intent.parent_task_id, intent.goal, intent.step) == (
        "t1/turn-0/tool-0-call-0",
        "t1",
        "Find sources",
        "research",
    )
    child = host.children[intent.id]
    assert outcome.plan is not None
    assert outcome.plan.step("research").linked_tasks == (child,)
    assert [r.task_id for r in outcome.sub_tasks] == [child]
    assert outcome.kind is OutcomeKind.WAITING_FOR_SUBTASKS
    assert child in model.requests[1].messages[-1].content


async def test_text_beside_tool_calls_is_checkpointed_under_the_model_call_id() -> None:
    """Followers read it from the journal (the transcript), so it needs no channel of its own."""
    host = MemoryHost()
    model = ScriptedModel(
        calls(("create_plan", {"steps": [{"name": "a"}]}), text="Planning first."), reply("ok")
    )
    await loop_for(model).run_turn(host, turn(delegated(), number=3))
    [entry] = [e for e in host.journal if e.id == "t1/turn-3/model-0"]
    assert isinstance(entry, ModelEntry)
    assert entry.response.text == "Planning first."


async def test_max_model_calls_ends_the_turn_with_a_clear_outcome() -> None:
    model = ScriptedModel(*[calls(("create_plan", {"steps": [{"name": "a"}]}))] * 3)
    outcome = await loop_for(model, max_model_calls=3).run_turn(MemoryHost(), turn(delegated()))

    assert len(model.requests) == 3
    assert outcome.kind is OutcomeKind.MAX_MODEL_CALLS
    assert (outcome.state, outcome.sub_state) == (
        TaskState.INPUT_REQUIRED,
        SubState.AWAITING_NEXT_MESSAGE,
    )
    assert "after 3 model calls" in outcome.text
    assert "max_model_calls" in outcome.text


async def test_ids_are_deterministic_by_task_turn_and_position() -> None:
    host = MemoryHost()
    host.send("Please start.")
    model = ScriptedModel(
        calls(("create_plan", {"steps": [{"name": "a"}]}), ("ask_participant", {"question": "?"}))
    )
    await loop_for(model).run_turn(host, turn(delegated(), number=7))
    assert [e.id for e in host.journal] == [
        "t1/turn-7/drain-0",
        "t1/turn-7/model-0",
        "t1/turn-7/tool-0-call-0",
        "t1/turn-7/tool-1-call-1",
    ]


# -- durability ------------------------------------------------------------------------------------


def script_with_a_side_effect() -> ScriptedModel:
    return ScriptedModel(
        calls(("add_to_total", {"n": 5})),
        calls(("create_plan", {"steps": [{"name": "report"}]})),
        reply("Total reported."),
    )


async def test_a_killed_turn_resumes_from_its_journal_without_repeating_anything() -> None:
    counter = Counter()
    model = script_with_a_side_effect()
    loop = loop_for(model, counter.registry)

    # drain-0, model-0 and tool-0 are saved; the host dies checkpointing the second model call.
    first_host = MemoryHost(crash_after=3)
    first_host.send("Add five.")
    with pytest.raises(HostCrashed):
        await loop.run_turn(first_host, turn(delegated(), history=()))
    assert [e.id for e in first_host.journal] == [
        "t1/turn-0/drain-0",
        "t1/turn-0/model-0",
        "t1/turn-0/tool-0-call-0",
    ]
    first_run = list(model.requests)
    assert (len(first_run), counter.runs) == (2, 1)

    # The operator stored the journal in the API as JSON and starts the turn again.
    saved = load_journal(dump_journal(first_host.journal))
    model.script.insert(0, calls(("create_plan", {"steps": [{"name": "report"}]})))
    resumed = MemoryHost(journal=saved)
    resumed.inbox, resumed.acked = first_host.inbox, first_host.acked
    outcome = await loop.run_turn(resumed, turn(delegated(), history=(), journal=saved))

    second_run = model.requests[len(first_run) :]
    assert first_run[0] not in second_run  # the checkpointed response was replayed, not asked
    assert second_run[0] == first_run[1]  # the lost call is asked again, identically
    assert counter.runs == 1  # the tool's side effect happened once across both runs
    assert [m.content for m in outcome.history].count("Add five.") == 1
    assert outcome.state is TaskState.COMPLETED
    assert resumed.journal[:3] == list(saved)


async def test_a_tool_interrupted_before_its_checkpoint_reruns_with_the_same_idempotency_key() -> (
    None
):
    keys: list[str] = []
    registry = ToolRegistry()

    @registry.tool("charge", "Charge the card once.")
    def charge(args: dict[str, Any], ctx: ToolContext) -> str:
        keys.append(ctx.call_id)
        return "charged"

    model = ScriptedModel(calls(("charge", {})), reply("Charged."))
    loop = loop_for(model, registry)
    first_host = MemoryHost(crash_after=1)  # model-0 saved; the host dies saving the result
    with pytest.raises(HostCrashed):
        await loop.run_turn(first_host, turn(delegated()))

    resumed = MemoryHost(journal=first_host.journal)
    await loop.run_turn(resumed, turn(delegated(), journal=first_host.journal))
    assert keys == ["t1/turn-0/tool-0-call-0", "t1/turn-0/tool-0-call-0"]
    assert len(model.requests) == 2


async def test_a_cancelled_turn_resumes_without_repeating_a_model_call_or_tool(
    gate: asyncio.Event,
) -> None:
    counter = Counter()
    host = MemoryHost()

    in_flight = asyncio.Event()

    async def held(request: LLMRequest) -> LLMResponse:
        in_flight.set()
        await gate.wait()  # the operator is killed while this call is in flight
        return reply("never")

    model = ScriptedModel(calls(("add_to_total", {"n": 5})), held)
    loop = loop_for(model, counter.registry)
    running = asyncio.create_task(loop.run_turn(host, turn(delegated())))
    await in_flight.wait()
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert [e.id for e in host.journal] == ["t1/turn-0/model-0", "t1/turn-0/tool-0-call-0"]

    model.then(reply("Total is 5."))
    calls_before = len(model.requests)
    resumed = MemoryHost(journal=host.journal)
    outcome = await loop.run_turn(resumed, turn(delegated(), journal=host.journal))

    assert counter.runs == 1
    assert len(model.requests) == calls_before + 1
    assert outcome.text == "Total is 5."
    assert resumed.journal[:2] == host.journal


async def test_a_spawn_interrupted_before_its_checkpoint_gets_the_same_child() -> None:
    model = ScriptedModel(calls(("spawn_subtask", {"goal": "Find sources"})))
    first_host = MemoryHost(crash_after=1)  # model-0 saved; the spawn's entry is not
    loop = loop_for(model)
    with pytest.raises(HostCrashed):
        await loop.run_turn(first_host, turn(delegated()))
    first_child = next(iter(first_host.children.values()))

    model.then(reply("Waiting."))
    resumed = MemoryHost(journal=first_host.journal)
    resumed.children = first_host.children  # the host's own record of what it created
    outcome = await loop.run_turn(resumed, turn(delegated(), journal=first_host.journal))

    assert len(resumed.spawn_requests) == 1
    assert resumed.spawn_requests[0].id == first_host.spawn_requests[0].id
    assert [r.task_id for r in outcome.sub_tasks] == [first_child]
    assert len(resumed.children) == 1


async def test_a_fully_journaled_turn_replays_to_the_same_outcome_without_a_model() -> None:
    host = MemoryHost()
    host.send("Hi")
    original = await loop_for(
        ScriptedModel(calls(("create_plan", {"steps": [{"name": "a"}]})), reply("Done."))
    ).run_turn(host, turn(delegated(), history=()))

    replayer = MemoryHost()
    again = await loop_for(ScriptedModel()).run_turn(
        replayer, turn(delegated(), history=(), journal=load_journal(dump_journal(host.journal)))
    )
    assert again == original
    assert replayer.journal == []
    assert replayer.drains == 1


async def test_a_journal_from_another_path_is_refused_with_a_typed_error() -> None:
    host = MemoryHost()
    await loop_for(ScriptedModel(reply("Done."))).run_turn(host, turn(delegated(), number=1))
    with pytest.raises(JournalMismatchError, match="expected t1/turn-2/model-0"):
        await loop_for(ScriptedModel()).run_turn(
            MemoryHost(), turn(delegated(), number=2, journal=tuple(host.journal))
        )


def test_user_tools_may_not_shadow_an_intrinsic() -> None:
    registry = ToolRegistry()
    registry.tool("spawn_subtask", "mine")(lambda args, ctx: "")
    with pytest.raises(ToolRegistrationError, match="reserved for an intrinsic"):
        CoreLoop(ScriptedModel(), WINDOW, registry)


# -- the completion predicate ---------------------------------------------------------------------


def test_a_participant_completion_is_refused_naming_the_unresolved_sub_tasks() -> None:
    task = delegated(
        sub_tasks=(
            child_row("t1-a", TaskState.WORKING),
            child_row("t1-b", TaskState.INPUT_REQUIRED),
            child_row("t1-c", TaskState.COMPLETED),
        )
    )
    decision = decide_completion(task, requested_by="alice")
    assert decision.verdict is CompletionVerdict.WAIT_FOR_SUBTASKS
    assert decision.unresolved == ("t1-a", "t1-b")
    assert "requested by alice refused" in decision.reason
    assert "t1-a (working), t1-b (input-required)" in decision.reason


def test_unread_results_do_not_hold_back_a_participant_who_asks_to_complete() -> None:
    task = delegated(sub_tasks=(child_row("t1-a", TaskState.COMPLETED, unread=True),))
    assert decide_completion(task, requested_by="alice").complete
    assert decide_completion(task).verdict is CompletionVerdict.READ_RESULTS


def test_an_override_hook_sees_the_refusal_and_may_complete() -> None:
    task = delegated(sub_tasks=(child_row("t1-a", TaskState.WORKING),))
    seen: list[tuple[str, ...]] = []

    def allow(t: TaskExtension, d: Any) -> bool:
        seen.append(d.unresolved)
        return True

    decision = decide_completion(task, override=allow)
    assert decision.complete
    assert decision.overridden
    assert seen == [("t1-a",)]


def test_an_outcome_is_json_serialisable() -> None:
    outcome = TurnOutcome(
        kind=OutcomeKind.COMPLETED, state=TaskState.COMPLETED, history=HELLO, text="x"
    )
    assert TurnOutcome.model_validate_json(outcome.model_dump_json()) == outcome


async def test_a_turn_stops_before_the_model_call_its_budget_has_no_room_for() -> None:
    model = ScriptedModel(*[calls(("create_plan", {"steps": [{"name": "a"}]}))] * 5)
    budget = Budget(max_model_calls=4)
    start = turn(delegated()).model_copy(
        update={"budget": budget, "used": TaskUsage(model_calls=2)}
    )

    outcome = await loop_for(model).run_turn(MemoryHost(), start)

    assert len(model.requests) == 2  # 2 before this turn + 2 in it reach the 4 allowed
    assert outcome.kind is OutcomeKind.OVER_BUDGET
    assert (outcome.state, outcome.sub_state) == (
        TaskState.INPUT_REQUIRED,
        SubState.AWAITING_BUDGET,
    )
    assert "4 of 4 model calls" in outcome.text
    assert "/budget" in outcome.text


async def test_a_budget_that_says_fail_fails_the_turn_without_another_call() -> None:
    model = ScriptedModel(reply("never"))
    budget = Budget(max_tokens=1_000, on_exceeded="fail")
    start = turn(delegated()).model_copy(
        update={"budget": budget, "used": TaskUsage(input_tokens=900, output_tokens=100)}
    )

    outcome = await loop_for(model).run_turn(MemoryHost(), start)

    assert model.requests == []
    assert outcome.kind is OutcomeKind.BUDGET_EXCEEDED
    assert outcome.state is TaskState.FAILED
    assert "1,000 of 1,000 tokens" in outcome.text


async def test_a_budget_with_room_left_changes_nothing() -> None:
    model = ScriptedModel(reply("Done."))
    start = turn(delegated()).model_copy(update={"budget": Budget(max_tokens=10**6)})

    outcome = await loop_for(model).run_turn(MemoryHost(), start)

    assert outcome.kind is OutcomeKind.COMPLETED
