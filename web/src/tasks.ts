// The participant's tasks as the list shows them: a tree (parents before their sub-tasks),
// each with its goal, state and sub-state (and, for a question put to a person, whom it asks;
// for calls that wait for approval, whether one waits for you), filtered by state. Among
// siblings, a task with a call waiting for your decision (or a sub-task with one) comes first.
// A pure module.
import type { Task } from "@a2a-js/sdk";
import { extensionOf, subStateOf, type SubTaskRow } from "./extension";
import { approvalBadge, callsOf } from "./approval";
import type { TaskView } from "./fold";
import { badge, questionOf } from "./question";
import { isTerminal, stateName, type StateName } from "./wire";

export interface TaskRow {
  id: string;
  depth: number;
  goal: string;
  state: StateName;
  subState: string | null;
  /** For a participant task: "question for you", or whom it asks; null for any other. */
  question: string | null;
  /** For calls that wait for approval: "approval for you", or "awaits approval"; else null. */
  approval: string | null;
}

/** Which tasks the list shows: all, those still open, one state. */
export type StateFilter = "all" | "open" | StateName;

/** Tasks as a tree, parents before their children, in the order given (the gateway lists the
 * newest change first), except that among siblings those with a call waiting for ``me`` to
 * decide, or with a sub-task that has one, come first. A child whose parent is not listed is
 * shown at the top. ``me``: the participant the list is for (a question put to them, or a call
 * they may decide, is marked as theirs). */
export function tree(tasks: Task[], me: string): TaskRow[] {
  const ids = new Set(tasks.map((t) => t.id));
  const children = new Map<string, Task[]>();
  const roots: Task[] = [];
  for (const task of tasks) {
    const parent = extensionOf(task.metadata)?.parent;
    if (parent && ids.has(parent) && parent !== task.id) {
      children.set(parent, [...(children.get(parent) ?? []), task]);
    } else {
      roots.push(task);
    }
  }
  const out: TaskRow[] = [];
  const placed = new Set<string>();
  const rows = new Map(tasks.map((t) => [t.id, rowOf(t, 0, me)]));
  const urgent = new Map<string, boolean>();
  // Asked of the tasks the walk reaches only: each under a root, so never on a cycle.
  const needs = (task: Task): boolean => {
    const known = urgent.get(task.id);
    if (known !== undefined) return known;
    const below = (children.get(task.id) ?? []).map(needs);
    const result = rows.get(task.id)?.approval === "approval for you" || below.some(Boolean);
    urgent.set(task.id, result);
    return result;
  };
  const first = (list: Task[]) => [...list.filter((t) => needs(t)), ...list.filter((t) => !needs(t))];
  const walk = (task: Task, depth: number): void => {
    if (placed.has(task.id)) return; // a cycle of parent links cannot loop the list
    placed.add(task.id);
    out.push({ ...rows.get(task.id)!, depth });
    for (const child of first(children.get(task.id) ?? [])) walk(child, depth + 1);
  };
  for (const root of first(roots)) walk(root, 0);
  return out;
}

function rowOf(task: Task, depth: number, me: string): TaskRow {
  const extension = extensionOf(task.metadata);
  const state = stateName(task.status?.state) ?? "TASK_STATE_SUBMITTED";
  const question = questionOf(extension, state, me);
  const subState = subStateOf(task.metadata);
  return {
    id: task.id,
    depth,
    goal: extension?.goal || extension?.name || task.id,
    state,
    subState,
    question: question ? badge(question) : null,
    approval: approvalBadge(callsOf(extension, me), subState),
  };
}

/** The rows with the open task's state, sub-state and question as its page shows them: from
 * its view (the fold of the page's stream), not from the listing, which was read at another
 * moment. Read from two sources, the list and the page disagreed until the task next moved
 * (WORKING in the list beside INPUT_REQUIRED on the page, when the listing was answered during
 * the turn and the reply repeated the state it was read for). Until the page has read the task,
 * the listing's row stands. */
export function withOpenView(rows: TaskRow[], open: TaskView | null): TaskRow[] {
  if (!open?.known) return rows;
  return rows.map((row) => {
    if (row.id !== open.taskId) return row;
    const question = questionOf(open.extension, open.state, open.me, open.ending);
    return {
      ...row,
      state: open.state,
      subState: open.subState,
      question: question ? badge(question) : null,
      approval: approvalBadge(callsOf(open.extension, open.me), open.subState),
    };
  });
}

export function matches(row: TaskRow, filter: StateFilter): boolean {
  if (filter === "all") return true;
  if (filter === "open") return !isTerminal(row.state);
  return row.state === filter;
}

/** The rows the filter keeps; a parent that does not match stays (dimmed by the screen) when
 * one of its sub-tasks does, so the tree keeps its shape. */
export function filtered(rows: TaskRow[], filter: StateFilter): (TaskRow & { kept: boolean })[] {
  const keep = rows.map((r) => matches(r, filter));
  // A row is shown when it matches or a later, deeper row under it does.
  const shown = [...keep];
  for (let i = rows.length - 1; i >= 0; i--) {
    if (!shown[i]) continue;
    const depth = rows[i]!.depth;
    for (let j = i - 1, d = depth; j >= 0 && d > 0; j--) {
      if (rows[j]!.depth < d) {
        shown[j] = true;
        d = rows[j]!.depth;
      }
    }
  }
  return rows.flatMap((r, i) => (shown[i] ? [{ ...r, kept: keep[i]! }] : []));
}

export interface Branch<R extends TaskRow = TaskRow> {
  row: R;
  children: Branch<R>[];
}

/** Flat rows (as tree() and filtered() give them, each after its parent) as nested branches,
 * for a list whose nesting says which task is whose sub-task. */
export function nest<R extends TaskRow>(rows: R[]): Branch<R>[] {
  const top: Branch<R>[] = [];
  const open: Branch<R>[] = []; // the path from the top to the last row placed
  for (const row of rows) {
    const branch: Branch<R> = { row, children: [] };
    while (open.length && open[open.length - 1]!.row.depth >= row.depth) open.pop();
    const parent = open[open.length - 1];
    (parent ? parent.children : top).push(branch);
    open.push(branch);
  }
  return top;
}

/** Where a parent's sub-task runs, when that is a remote agent: "on agent market"; null when it
 * runs here. */
export function whereItRuns(row: SubTaskRow): string | null {
  return row.agent ? `on agent ${row.agent}` : null;
}
