// What the UI shows of one task, folded from what the gateway sends: a pure module.
//
// The UI is an A2A client and nothing more, so every screen is folded from A2A objects: a
// Task read with its history (GetTask, or the first event of SubscribeToTask), then the events
// of streams (a send's, the follow stream's): a Task, a Message, a status update. The fold
// keeps each message once, by its id: a stream that reconnects replays the task and its
// history, a second tab's message arrives only in a later read, and none of it shows twice.
// A message first seen in a read is placed where the history puts it (after the message before
// it), so a message sent from another tab shows before the reply that answered it.
//
// Every Task and status event the gateway sends carries the task's version (resume.ts), and the
// view keeps the last it applied: the status of an event not after it is old news, skipped (a
// resumed stream's replay, a send's stream behind the page's own), and so is a Task older than
// it (a read answered before the change the view shows); of those, only the messages the view
// lacks are taken.
import type { Message, Part, StreamResponse, Task, TaskStatusUpdateEvent } from "@a2a-js/sdk";
import { Role } from "@a2a-js/sdk";
import {
  extensionOf,
  statusExtras,
  subStateOf,
  versionOf,
  type Participant,
  type Role as ParticipantRole,
  type TaskExtension,
} from "./extension";
import { isDecisionAnswer } from "./approval";
import { takeArtifacts, takeArtifactUpdate, type ArtifactView } from "./artifacts";
import { filesOf, type FileNote } from "./parts";
import { isAfter } from "./resume";
import { isTerminal, shortState, stateName, type StateName } from "./wire";

/** How a line of the conversation reads: a participant's message, the agent's reply, the
 * reply to a /command, a refusal, the operator's answer to a decision on a call, or a note the
 * harness wrote itself (a cancel, a failure). */
export type LineKind = "user" | "agent" | "command" | "refusal" | "decision" | "note";

export interface Line {
  messageId: string;
  kind: LineKind;
  /** "you", another participant's id, or "agent". */
  who: string;
  text: string;
  /** The files the message carries (a participant's attachments), shown under its text. */
  files: FileNote[];
}

export interface TaskView {
  taskId: string;
  /** The participant this UI acts as. */
  me: string;
  /** Whether a whole Task has been read (goal, participants ... are known). */
  known: boolean;
  state: StateName;
  subState: string | null;
  extension: TaskExtension | null;
  lines: Line[];
  /** When (on the caller's clock, ms) this view saw the task start working, while it works. */
  workingSince: number | null;
  /** The status text the task ended with (a question's answer), once it has ended. */
  ending: string | null;
  /** The task's version this view last applied (null: none carried one yet); a stream that
   * resumes names it in Last-Event-ID. */
  version: string | null;
  /** What the task has published, in the order the gateway lists it (artifacts.ts). */
  artifacts: ArtifactView[];
}

export function emptyView(taskId: string, me: string): TaskView {
  return {
    taskId,
    me,
    known: false,
    state: "TASK_STATE_SUBMITTED",
    subState: null,
    extension: null,
    lines: [],
    workingSince: null,
    ending: null,
    version: null,
    artifacts: [],
  };
}

// -- the fold ----------------------------------------------------------------------------------

/** A whole task: its status, its extension, and its history (each message once). */
export function takeTask(view: TaskView, task: Task, now: number): TaskView {
  if (task.id !== view.taskId) return view;
  const version = versionOf(task.metadata);
  if (version !== null && view.version !== null && isAfter(view.version, version)) {
    // Older than what the view shows: its status is not news, only messages the view lacks.
    const lines = merge(view.lines, task.history.filter(shown).map((m) => lineOf(m, view.me)));
    return lines.length === view.lines.length ? view : { ...view, lines };
  }
  let next = withStatus(view, stateName(task.status?.state), subStateOf(task.metadata), now);
  const extension = extensionOf(task.metadata);
  next = {
    ...next,
    known: true,
    extension: extension ?? next.extension,
    version: version ?? view.version,
    artifacts: task.artifacts.length ? takeArtifacts(next.artifacts, task.artifacts) : next.artifacts,
  };
  const status = task.status?.message;
  // A question put to a person is the status message its task was created with, in no turn's
  // journal: while it waits, the agent's words there are the question, the conversation's first
  // line (a command's reply, also a status message, keeps its place).
  const asking =
    status &&
    next.extension?.lifecycle === "participant" &&
    !isTerminal(next.state) &&
    lineOf(status, view.me).kind === "agent";
  const history = (asking ? [status, ...task.history] : task.history).filter(shown);
  next = { ...next, lines: merge(next.lines, history.map((m) => lineOf(m, view.me))) };
  return status ? takeMessage(endedWith(next, status), status) : next;
}

/** Whether a message has anything to show: a control request (a completion, a decision) as
 * the history holds it has no words, and the harness's answer after it says what it asked. */
function shown(message: Message): boolean {
  return message.role !== Role.ROLE_USER || textOf(message.parts) !== "" || filesOf(message.parts).length > 0;
}

/** One message, appended unless already shown. */
export function takeMessage(view: TaskView, message: Message): TaskView {
  if (!message.messageId || !shown(message) || view.lines.some((l) => l.messageId === message.messageId)) {
    return view;
  }
  return { ...view, lines: [...view.lines, lineOf(message, view.me)] };
}

/** The view without the message ``messageId``: one the gateway refused before writing it. */
export function withoutMessage(view: TaskView, messageId: string): TaskView {
  if (!view.lines.some((l) => l.messageId === messageId)) return view;
  return { ...view, lines: view.lines.filter((l) => l.messageId !== messageId) };
}

/** A status update: state and sub-state; a parent's sub-task rows, and what the task has
 * used (its ended turns, and the running turn so far) when the event carries them; its
 * message, once. */
export function takeStatus(view: TaskView, event: TaskStatusUpdateEvent, now: number): TaskView {
  if (event.taskId !== view.taskId) return view;
  const version = versionOf(event.metadata);
  if (version !== null && !isAfter(version, view.version)) {
    // Its status is old news, but its message may not be: a send's stream ends with the
    // gateway's note (a refusal, a command's reply) on the last change it showed.
    const message = event.status?.message;
    return message ? takeMessage(view, message) : view;
  }
  let next = withStatus(view, stateName(event.status?.state), subStateOf(event.metadata), now);
  next = { ...next, version: version ?? view.version };
  const extras = statusExtras(event.metadata);
  if (next.extension) {
    next = {
      ...next,
      extension: {
        ...next.extension,
        subTasks: extras.subTasks ?? next.extension.subTasks,
        usage: extras.usage ?? next.extension.usage,
        turnUsage: extras.turnUsage,
      },
    };
  }
  const message = event.status?.message;
  return message ? takeMessage(endedWith(next, message), message) : next;
}

/** The status message of an ended task is how it ended: for a question, its answer. */
function endedWith(view: TaskView, message: Message): TaskView {
  return isTerminal(view.state) ? { ...view, ending: textOf(message.parts) } : view;
}

/** One event of a stream. */
export function take(view: TaskView, event: StreamResponse, now: number): TaskView {
  const payload = event.payload;
  switch (payload?.$case) {
    case "task":
      return takeTask(view, payload.value, now);
    case "message":
      return takeMessage(view, payload.value);
    case "statusUpdate":
      return takeStatus(view, payload.value, now);
    case "artifactUpdate":
      // No version of its own: it comes before the status update of the change it belongs to,
      // and a resumed stream sends each changed artifact whole, so it is always taken.
      if (payload.value.taskId !== view.taskId) return view;
      return { ...view, artifacts: takeArtifactUpdate(view.artifacts, payload.value) };
    default:
      return view;
  }
}

function withStatus(
  view: TaskView,
  state: StateName | undefined,
  subState: string | null,
  now: number,
): TaskView {
  if (state === undefined) return view;
  const working = state === "TASK_STATE_WORKING";
  return {
    ...view,
    state,
    subState,
    workingSince: working ? (view.workingSince ?? now) : null,
    ending: isTerminal(state) ? view.ending : null,
  };
}

/** ``lines`` with every line of ``history`` it lacks, each placed after the line the history
 * has before it (or first); lines the history does not hold keep their place. */
export function merge(lines: Line[], history: Line[]): Line[] {
  const out = [...lines];
  let after = -1;
  for (const line of history) {
    if (!line.messageId) continue;
    const at = out.findIndex((l) => l.messageId === line.messageId);
    if (at >= 0) {
      after = at;
      continue;
    }
    out.splice(after + 1, 0, line);
    after += 1;
  }
  return out;
}

function kindOf(message: Message, text: string): LineKind {
  if (message.role !== Role.ROLE_AGENT) return "user";
  const id = message.messageId;
  if (isDecisionAnswer(id, text, message.metadata)) return "decision";
  // A command the role check refused answers with its reason, under the command's reply id.
  if (id.startsWith("cmd-")) return /^refused\b/i.test(text) ? "refusal" : "command";
  if (id.startsWith("refused-")) return "refusal";
  if (/^(status|waiting|working)-/.test(id)) return "note";
  return "agent";
}

export function lineOf(message: Message, me: string): Line {
  const text = textOf(message.parts);
  const kind = kindOf(message, text);
  let who = "agent";
  if (kind === "user") {
    const sender = message.metadata?.sender;
    who = typeof sender === "string" && sender && sender !== me ? sender : "you";
  }
  return { messageId: message.messageId, kind, who, text, files: filesOf(message.parts) };
}

/** A message's text parts; a data part (a control request) shown as what it asks (a decision
 * as "approve call_w1: fine"). Its files are not text: the line lists them (filesOf). */
export function textOf(parts: Part[]): string {
  return parts
    .filter((part) => part.content?.$case !== "raw" && part.content?.$case !== "url")
    .map((part) => {
      const content = part.content;
      if (content?.$case === "text") return content.value;
      if (content?.$case === "data") {
        const data = content.value as { action?: unknown; call_id?: unknown; reason?: unknown } | null;
        const action = data?.action;
        if ((action === "approve" || action === "reject") && typeof data?.call_id === "string") {
          // As the harness's transcript reads a decision: "approve call_w1: fine".
          const why = typeof data.reason === "string" && data.reason ? `: ${data.reason}` : "";
          return `${action} ${data.call_id}${why}`;
        }
        return typeof action === "string" ? `(${action} requested)` : "(data)";
      }
      return "";
    })
    .join("\n");
}

// -- what the screens ask ----------------------------------------------------------------------

/** The badge: INPUT_REQUIRED, with the sub-state beside it when there is one. */
export function stateLabel(view: Pick<TaskView, "state" | "subState">): string {
  const state = shortState(view.state);
  return view.subState ? `${state} · ${view.subState}` : state;
}

export function participants(view: TaskView): Participant[] {
  return view.extension?.participants ?? [];
}

export function myRole(view: TaskView): ParticipantRole | null {
  return participants(view).find((p) => p.id === view.me)?.role ?? null;
}

/** Why Complete and Cancel are refused here, or null when they may be asked. */
export function endingRefusal(view: TaskView): string | null {
  if (!view.known) return "the task is still loading";
  if (isTerminal(view.state)) return `the task has ended (${stateLabel(view)})`;
  if (myRole(view) === "watcher") return "you watch this task: a watcher cannot complete or cancel it";
  return null;
}

/** Whether the composer may send: not to an ended task. */
export function canSend(view: TaskView): boolean {
  return view.known && !isTerminal(view.state);
}

/** While a turn runs: for how long (as this view saw it), and the model calls the task has
 * made so far, the running turn's included (the gateway streams them as the turn goes). */
export function progress(view: TaskView, now: number): string | null {
  if (view.workingSince === null) return null;
  const seconds = Math.max(0, Math.floor((now - view.workingSince) / 1000));
  const ext = view.extension;
  const calls = (ext?.usage?.modelCalls ?? 0) + (ext?.turnUsage?.modelCalls ?? 0);
  const suffix = calls ? ` · ${calls} model call${calls === 1 ? "" : "s"} so far` : "";
  return `working for ${seconds}s${suffix}`;
}

export function planProgress(view: TaskView): { done: number; total: number } {
  const steps = view.extension?.plan ?? [];
  return { done: steps.filter((s) => s.done).length, total: steps.length };
}

export function usageLine(view: TaskView): string | null {
  const used = view.extension?.usage;
  if (!used || !used.modelCalls) return null;
  const tokens = used.inputTokens + used.outputTokens;
  return `${used.modelCalls} model calls, ${tokens} tokens, ${used.toolCalls} tool calls`;
}
