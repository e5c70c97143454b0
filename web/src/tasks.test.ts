import { TaskState } from "@a2a-js/sdk";
import { describe, expect, it } from "vitest";
import { subTaskRow } from "./extension";
import { emptyView, takeStatus, takeTask } from "./fold";
import { filtered, nest, tree, whereItRuns, withOpenView } from "./tasks";
import { awaiting, pendingCall, question, status, task } from "./test/a2a";

const parent = task({ id: "p", extension: { goal: "Plan" }, subState: "awaiting-next-message" });
const child = task({ id: "c", state: TaskState.TASK_STATE_COMPLETED, extension: { goal: "Draft", parent: { task_id: "p" } } });
const orphan = task({ id: "o", extension: { goal: "Orphan", parent: { task_id: "gone" } } });

describe("the task tree", () => {
  it("puts sub-tasks under their parent, with goal, state and sub-state", () => {
    expect(tree([child, parent, orphan], "alice")).toEqual([
      { id: "p", depth: 0, goal: "Plan", state: "TASK_STATE_INPUT_REQUIRED", subState: "awaiting-next-message", question: null, approval: null },
      { id: "c", depth: 1, goal: "Draft", state: "TASK_STATE_COMPLETED", subState: null, question: null, approval: null },
      { id: "o", depth: 0, goal: "Orphan", state: "TASK_STATE_INPUT_REQUIRED", subState: null, question: null, approval: null },
    ]);
  });

  it("filters by state, keeping a parent (not kept itself) whose sub-task matches", () => {
    const rows = tree([parent, child, orphan], "alice");
    expect(filtered(rows, "TASK_STATE_COMPLETED").map((r) => [r.id, r.kept])).toEqual([
      ["p", false],
      ["c", true],
    ]);
    expect(filtered(rows, "open").map((r) => r.id)).toEqual(["p", "o"]);
    expect(filtered(rows, "all")).toHaveLength(3);
  });

  it("nests the rows as branches", () => {
    const branches = nest(tree([parent, child, orphan], "alice"));
    expect(branches.map((b) => [b.row.id, b.children.map((c) => c.row.id)])).toEqual([
      ["p", ["c"]],
      ["o", []],
    ]);
  });

  it("marks a question put to a person: for them, and with whom it asks for anyone else", () => {
    const ask = question({ id: "q", parent: "p" });
    expect(tree([parent, ask], "alice").map((r) => [r.id, r.depth, r.question])).toEqual([
      ["p", 0, null],
      ["q", 1, "asks carol"],
    ]);
    expect(tree([ask], "carol")).toEqual([
      {
        id: "q",
        depth: 0,
        goal: "Approve the budget of 40k?",
        state: "TASK_STATE_INPUT_REQUIRED",
        subState: "awaiting-answer",
        question: "question for you",
        approval: null,
      },
    ]);
  });

  it("shows a task once even if parent links form a cycle", () => {
    const a = task({ id: "a", extension: { goal: "A", parent: { task_id: "b" } } });
    const b = task({ id: "b", extension: { goal: "B", parent: { task_id: "a" } } });
    expect(tree([a, b], "alice").length).toBeLessThanOrEqual(2);
  });
});

describe("the open task's row", () => {
  // The listing was read during the turn; the page's stream has since seen the reply park it.
  const listed = [task({ id: "p", state: TaskState.TASK_STATE_WORKING, extension: { goal: "Plan" } }), orphan];
  const page = takeStatus(
    takeTask(emptyView("p", "alice"), parent, 0),
    status(TaskState.TASK_STATE_INPUT_REQUIRED, { taskId: "p", subState: "awaiting-next-message" }),
    0,
  );

  it("shows the state its page shows, not the listing's", () => {
    const rows = withOpenView(tree(listed, "alice"), page);
    expect(rows.map((r) => [r.id, r.state, r.subState])).toEqual([
      ["p", "TASK_STATE_INPUT_REQUIRED", "awaiting-next-message"],
      ["o", "TASK_STATE_INPUT_REQUIRED", null],
    ]);
  });

  it("is the listing's while no task is open, or the page has not read it yet", () => {
    const rows = tree(listed, "alice");
    expect(withOpenView(rows, null)).toBe(rows);
    expect(withOpenView(rows, emptyView("p", "alice"))).toBe(rows);
  });

  it("marks a question as its page does", () => {
    const ask = question({ id: "q" });
    const answered = takeStatus(
      takeTask(emptyView("q", "carol"), ask, 0),
      status(TaskState.TASK_STATE_COMPLETED, { taskId: "q" }),
      0,
    );
    const [row] = withOpenView(tree([ask], "carol"), answered);
    expect([row!.state, row!.question]).toEqual(["TASK_STATE_COMPLETED", "question for you"]);
  });
});

describe("a sub-task row", () => {
  it("names the remote agent it runs on, and nothing when it runs here", () => {
    expect(whereItRuns(subTaskRow({ task_id: "r-2", agent: "market" })!)).toBe("on agent market");
    expect(whereItRuns(subTaskRow({ task_id: "r-1" })!)).toBeNull();
    expect(whereItRuns(subTaskRow({ task_id: "r-3", agent: "" })!)).toBeNull();
  });

  it("marks calls waiting for approval, and lists first the tasks with one for you, a parent for its sub-task's", () => {
    const mine = awaiting([pendingCall("c1", "Oslo")], { id: "trip" });
    const others = awaiting([pendingCall("c1", "Oslo", { requirement: { deciders: [{ roles: [], participants: ["carol"] }] } })], {
      id: "theirs",
    });
    const deep = awaiting([pendingCall("c1", "Rome")], { id: "deep", parent: "p" });
    const rows = tree([orphan, others, parent, mine, deep], "alice");
    expect(rows.map((r) => [r.id, r.depth, r.approval])).toEqual([
      ["p", 0, null],
      ["deep", 1, "approval for you"],
      ["trip", 0, "approval for you"],
      ["o", 0, null],
      ["theirs", 0, "awaits approval"],
    ]);
    expect(tree([mine], "bob")[0]!.approval).toBe("awaits approval");
  });

  it("marks the open task's calls as its page has them", () => {
    const listed = awaiting([pendingCall("c1", "Oslo")], { id: "t1" });
    const decided = awaiting([pendingCall("c1", "Oslo", { decision: { verdict: "reject", by: "alice", at: "x" } })], { id: "t1" });
    const view = takeTask(emptyView("t1", "alice"), decided, 0);
    expect(withOpenView(tree([listed], "alice"), view)[0]!.approval).toBeNull();
  });
});
