import { TaskState } from "@a2a-js/sdk";
import { describe, expect, it } from "vitest";
import {
  canSend,
  emptyView,
  endingRefusal,
  merge,
  myRole,
  progress,
  stateLabel,
  take,
  takeMessage,
  takeStatus,
  takeTask,
  withoutMessage,
  type Line,
  type TaskView,
} from "./fold";
import { asEvent, message, said, status, task } from "./test/a2a";

const { TASK_STATE_WORKING: WORKING, TASK_STATE_INPUT_REQUIRED: INPUT_REQUIRED } = TaskState;

function texts(view: TaskView): string[] {
  return view.lines.map((l) => `${l.who}: ${l.text}`);
}

describe("the fold", () => {
  it("reads a task: state, sub-state, goal, participants and the conversation", () => {
    const view = takeTask(
      emptyView("t1", "alice"),
      task({ subState: "awaiting-next-message", history: [said("m1", "Plan it"), message("t1/turn-1/model-0", "Planned.")] }),
      0,
    );
    expect(view.known).toBe(true);
    expect(stateLabel(view)).toBe("INPUT_REQUIRED · awaiting-next-message");
    expect(view.extension?.goal).toBe("Plan the release");
    expect(myRole(view)).toBe("assignee");
    expect(texts(view)).toEqual(["you: Plan it", "agent: Planned."]);
  });

  it("shows each message once however often a stream replays the task", () => {
    const read = task({ history: [said("m1", "Plan it"), message("r1", "Planned.")], status: message("r1", "Planned.") });
    let view = emptyView("t1", "alice");
    for (let i = 0; i < 3; i++) view = take(view, asEvent.task(read), 0);
    view = takeStatus(view, status(INPUT_REQUIRED, { message: message("r1", "Planned.") }), 0);
    expect(texts(view)).toEqual(["you: Plan it", "agent: Planned."]);
  });

  it("keeps two equal replies that are two messages", () => {
    let view = takeTask(emptyView("t1", "alice"), task(), 0);
    view = takeStatus(view, status(INPUT_REQUIRED, { message: message("t1/turn-1/model-0", "Done.") }), 0);
    view = takeStatus(view, status(INPUT_REQUIRED, { message: message("t1/turn-2/model-0", "Done.") }), 0);
    expect(texts(view)).toEqual(["agent: Done.", "agent: Done."]);
  });

  it("places a message another tab sent before the reply that answered it", () => {
    let view = takeTask(emptyView("t1", "alice"), task({ history: [said("m1", "Plan it"), message("r1", "Planned.")] }), 0);
    // The follow stream brings the reply to a message this tab never saw...
    view = takeStatus(view, status(INPUT_REQUIRED, { message: message("r2", "Two weeks.") }), 0);
    // ...and the read after it brings the message, which goes where the history has it.
    view = takeTask(
      view,
      task({ history: [said("m1", "Plan it"), message("r1", "Planned."), said("m2", "How long?"), message("r2", "Two weeks.")] }),
      0,
    );
    expect(texts(view)).toEqual(["you: Plan it", "agent: Planned.", "you: How long?", "agent: Two weeks."]);
  });

  it("names another participant's messages and says you for your own", () => {
    const view = takeTask(
      emptyView("t1", "alice"),
      task({ history: [said("m1", "mine", "alice"), said("m2", "theirs", "bob")] }),
      0,
    );
    expect(texts(view)).toEqual(["you: mine", "bob: theirs"]);
  });

  it("tells command replies, refusals and the harness's notes from replies", () => {
    let view = takeTask(emptyView("t1", "alice"), task(), 0);
    view = takeMessage(view, message("cmd-m1", "state: input-required"));
    view = takeMessage(view, message("refused-m2", "refused: bob is a watcher"));
    view = takeMessage(view, message("status-abc", "cancelled by carol"));
    view = takeMessage(view, message("t1/turn-1/model-0", "Hello"));
    view = takeMessage(view, message("cmd-m3", "refused: bob is a watcher and may not start a sub-task"));
    expect(view.lines.map((l) => l.kind)).toEqual(["command", "refusal", "note", "agent", "refusal"]);
  });

  it("shows a completion request as what it asks", () => {
    const complete = said("m9", "");
    complete.parts = [{ content: { $case: "data", value: { kind: "control", action: "complete" } }, metadata: undefined, filename: "", mediaType: "x" }];
    const view = takeMessage(takeTask(emptyView("t1", "alice"), task(), 0), complete);
    expect(texts(view)).toEqual(["you: (complete requested)"]);
  });

  it("clears the sub-state when the task works again, and takes a parent's sub-task rows", () => {
    let view = takeTask(emptyView("t1", "alice"), task({ subState: "awaiting-next-message" }), 0);
    view = takeStatus(view, status(WORKING), 0);
    expect(stateLabel(view)).toBe("WORKING");
    view = takeStatus(
      view,
      status(INPUT_REQUIRED, {
        subState: "awaiting-next-message",
        ext: { sub_tasks: [{ task_id: "t1-sub-1", goal: "Draft", state: "TASK_STATE_COMPLETED" }] },
      }),
      0,
    );
    expect(view.extension?.subTasks).toEqual([
      { taskId: "t1-sub-1", agent: null, goal: "Draft", state: "TASK_STATE_COMPLETED", subState: null },
    ]);
    expect(view.extension?.goal).toBe("Plan the release");
  });

  it("keeps the status text an ended task ended with, and not a waiting task's", () => {
    let view = takeTask(emptyView("t1", "alice"), task({ status: message("t1/question", "Approve?") }), 0);
    expect(view.ending).toBeNull();
    view = takeStatus(view, status(INPUT_REQUIRED, { message: message("refused-m1", "refused: not the answer") }), 0);
    expect(view.ending).toBeNull();
    view = takeStatus(view, status(TaskState.TASK_STATE_COMPLETED, { message: message("t1/turn-1/end", "answered by alice: Yes.") }), 0);
    expect(view.ending).toBe("answered by alice: Yes.");
    const reread = takeTask(
      emptyView("t1", "bob"),
      task({ state: TaskState.TASK_STATE_COMPLETED, status: message("t1/turn-1/end", "answered by alice: Yes.") }),
      0,
    );
    expect(reread.ending).toBe("answered by alice: Yes.");
  });

  it("ignores another task's events", () => {
    const view = takeTask(emptyView("t1", "alice"), task(), 0);
    expect(takeStatus(view, status(WORKING, { taskId: "t2" }), 0)).toBe(view);
    expect(take(view, asEvent.task(task({ id: "t2", state: WORKING })), 0)).toBe(view);
  });

  it("keeps a state it does not know out of the view", () => {
    const view = takeTask(emptyView("t1", "alice"), task(), 0);
    expect(takeStatus(view, status(99 as TaskState), 0).state).toBe("TASK_STATE_INPUT_REQUIRED");
  });

  it("says for how long a turn runs, and the model calls so far when the gateway says", () => {
    let view = takeTask(emptyView("t1", "alice"), task(), 0);
    view = takeStatus(view, status(WORKING), 1_000);
    expect(progress(view, 13_500)).toBe("working for 12s");
    const ended = { usage: { model_calls: 2 } };
    view = takeStatus(view, status(WORKING, { ext: { ...ended, turn_usage: { model_calls: 1 } } }), 2_000);
    expect(progress(view, 13_500)).toBe("working for 12s · 3 model calls so far");
    view = takeStatus(view, status(INPUT_REQUIRED, { ext: { usage: { model_calls: 4 } } }), 14_000);
    expect(progress(view, 15_000)).toBeNull();
    expect(view.extension?.usage?.modelCalls).toBe(4);
    expect(view.extension?.turnUsage).toBeNull(); // the turn ended: no running usage
  });

  it("shows only the time while a gateway says nothing of usage", () => {
    let view = takeTask(emptyView("t1", "alice"), task(), 0);
    view = takeStatus(view, status(WORKING), 0);
    expect(progress(view, 5_000)).toBe("working for 5s");
  });

  it("takes back a message the gateway refused before writing it", () => {
    let view = takeMessage(takeTask(emptyView("t1", "alice"), task(), 0), said("m1", "too big"));
    view = withoutMessage(view, "m1");
    expect(view.lines).toEqual([]);
  });
});

describe("what Complete and Cancel may do", () => {
  it("may be asked of an open task by its assignee", () => {
    const view = takeTask(emptyView("t1", "alice"), task(), 0);
    expect(endingRefusal(view)).toBeNull();
    expect(canSend(view)).toBe(true);
  });

  it("is refused on an ended task, whose composer is closed too", () => {
    const view = takeTask(emptyView("t1", "alice"), task({ state: TaskState.TASK_STATE_COMPLETED }), 0);
    expect(endingRefusal(view)).toBe("the task has ended (COMPLETED)");
    expect(canSend(view)).toBe(false);
  });

  it("is refused to a watcher, who may still send", () => {
    const view = takeTask(emptyView("t1", "bob"), task(), 0);
    expect(endingRefusal(view)).toMatch(/watcher cannot complete or cancel/);
    expect(canSend(view)).toBe(true);
  });

  it("waits for the task to be read", () => {
    expect(endingRefusal(emptyView("t1", "alice"))).toMatch(/loading/);
  });
});

describe("merge", () => {
  const line = (id: string): Line => ({ messageId: id, kind: "agent", who: "agent", text: id, files: [] });
  const ids = (lines: Line[]) => lines.map((l) => l.messageId);

  it("puts what the history adds after the line before it, and keeps lines it lacks", () => {
    expect(ids(merge([line("a"), line("note"), line("c")], [line("a"), line("b"), line("c")]))).toEqual([
      "a",
      "b",
      "note",
      "c",
    ]);
  });

  it("puts lines first when the history has nothing before them", () => {
    expect(ids(merge([line("z")], [line("x"), line("y"), line("z")]))).toEqual(["x", "y", "z"]);
  });
});
