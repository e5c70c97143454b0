// The calls a task waits to have approved (sub-state awaiting-approval, the calls under
// "approvals" of the task extension): what the screens say of them, a pure module. The words
// are the TUI's (tiny_harness/tui/approvals.py), so both read the same.
//
// Whether you may decide a call is the operator's question (tiny_harness/core/approval.py,
// refuse_decision); it is asked here the same way, on the task as the page has it, so that a
// decision the operator would refuse is not offered, and the reason shown is the operator's own
// sentence. A decision someone else made meanwhile is still refused by the operator, and that
// refusal shows as the harness's line.
import type { Deciders, Json, PendingApproval, Requirement, Role, TaskExtension } from "./extension";
import type { Line, TaskView } from "./fold";

export const AWAITING_APPROVAL = "awaiting-approval";
/** The decider the operator names for a call its timeout decided. */
const TIMEOUT = "timeout";

export type Verdict = "approve" | "reject";

/** One call as listed: the call, and why the viewer may not decide it (null: they may). */
export interface Call {
  pending: PendingApproval;
  refusal: string | null;
  /** It waits, and the viewer may decide it. */
  mine: boolean;
}

function admits(deciders: Deciders, me: string, role: Role | null): boolean {
  if (role === null || (role === "watcher" && !deciders.participants.includes(me))) return false;
  return deciders.participants.includes(me) || deciders.roles.includes(role);
}

function describeOne(deciders: Deciders): string {
  const names = [...deciders.roles.map((r) => `${r}s`), ...deciders.participants];
  return names.length ? names.join(" or ") : "no one";
}

/** Who decides, as the operator says it (core/approval.py, Requirement.describe): "assignees
 * or admins"; with several policies, each must admit the decider: "(assignees or admins) and
 * (carol)". */
export function describeDeciders(requirement: Requirement): string {
  const groups = requirement.deciders;
  if (groups.length === 1) return describeOne(groups[0]!);
  return groups.map((d) => `(${describeOne(d)})`).join(" and ");
}

/** Why ``me`` (with ``role`` on the task) may not decide ``pending``, in the operator's words
 * without its "refused: "; null when they may. */
export function refusalOf(pending: PendingApproval, me: string, role: Role | null): string | null {
  const done = pending.decision;
  if (done) {
    const said = done.verdict === "approve" ? "approved" : "rejected";
    const by = done.by === TIMEOUT ? "its timeout" : done.by;
    return `call '${pending.callId}' was already ${said} by ${by}`;
  }
  if (role === null) return `${me} is not a participant of this task`;
  if (pending.requirement.deciders.every((d) => admits(d, me, role))) return null;
  if (role === "watcher") return `${me} is a watcher and may not decide call '${pending.callId}'`;
  return (
    `${me} may not decide call '${pending.callId}' (${pending.tool}); it is decided by ` +
    describeDeciders(pending.requirement)
  );
}

function roleOf(extension: TaskExtension, me: string): Role | null {
  return extension.participants.find((p) => p.id === me)?.role ?? null;
}

/** The task's calls: the ones ``me`` may decide first, then those that wait for others, then
 * those decided (each group in the operator's order). */
export function callsOf(extension: TaskExtension | null | undefined, me: string): Call[] {
  if (!extension) return [];
  const role = roleOf(extension, me);
  const calls = extension.approvals.map((pending) => {
    const refusal = refusalOf(pending, me, role);
    return { pending, refusal, mine: refusal === null };
  });
  const rank = (c: Call) => (c.pending.decision ? 2 : c.mine ? 0 : 1);
  return calls.map((c, i) => ({ c, i })).sort((a, b) => rank(a.c) - rank(b.c) || a.i - b.i).map((x) => x.c);
}

export function viewCalls(view: TaskView): Call[] {
  return callsOf(view.extension, view.me);
}

/** The mark beside the task wherever it is listed: "approval for you" when a call waits for the
 * viewer's decision, "awaits approval" when calls wait for someone else's (or the sub-state says
 * so of calls not read); null otherwise, every call decided included (the next turn runs them). */
export function approvalBadge(calls: Call[], subState: string | null): string | null {
  if (calls.some((c) => c.mine)) return "approval for you";
  const waiting = calls.some((c) => !c.pending.decision);
  if (waiting || (calls.length === 0 && subState === AWAITING_APPROVAL)) return "awaits approval";
  return null;
}

/** "2 calls wait for approval, 1 for you"; null when none waits. */
export function summary(calls: Call[]): string | null {
  const waiting = calls.filter((c) => !c.pending.decision);
  if (!waiting.length) return null;
  const mine = waiting.filter((c) => c.mine).length;
  const text = waiting.length === 1 ? "1 call waits for approval" : `${waiting.length} calls wait for approval`;
  return mine ? `${text}, ${mine} for you` : text;
}

/** A call's arguments as the page shows them: indented JSON, whole however long (the box
 * scrolls: a call is decided as it will run); ``cut``: the harness stored only their start,
 * too long to keep whole in the task (the call still runs with them whole), and
 * {@link unseenRefusal} keeps such a call from being approved here. */
export function shownArguments(pending: PendingApproval): { text: string; cut: boolean } {
  const text = pending.argumentsCut
    ? String(pending.arguments._start ?? "")
    : JSON.stringify(pending.arguments, null, 2);
  return { text, cut: pending.argumentsCut };
}

/** Why the page does not approve ``pending`` (null: it may): a call is approved by someone who
 * has seen it whole, and the page cannot show arguments the harness stored cut; kubectl harness
 * get shows them whole from the task's journal. A rejection runs nothing and is always offered. */
export function unseenRefusal(pending: PendingApproval, taskId: string): string | null {
  if (!pending.argumentsCut) return null;
  return (
    `the arguments of call ${pending.callId} are too long to show here whole, so this page does ` +
    `not approve it: read them with "kubectl harness get ${taskId}", which shows them whole, and ` +
    `approve there ("kubectl harness approve ${taskId} ${pending.callId}"), or reject it here`
  );
}

/** What the edit field holds to start with: the arguments as indented JSON. */
export function editable(pending: PendingApproval): string {
  return JSON.stringify(pending.arguments, null, 2);
}

export type Edit = { ok: true; value: Json | null } | { ok: false; error: string };

/** The arguments an approval runs the call with, from the edit field: a JSON object (null when
 * it equals the arguments asked for: the call runs as asked), or what to fix. */
export function parseEdit(text: string, pending: PendingApproval): Edit {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    return { ok: false, error: `The arguments are not JSON: ${why}` };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { ok: false, error: "The arguments must be a JSON object, { … }." };
  }
  const same = JSON.stringify(value) === JSON.stringify(pending.arguments);
  return { ok: true, value: same ? null : (value as Json) };
}

/** The control envelope of a decision: the data part's value. It names the park the call waits
 * in: the operator refuses a decision for any other park. */
export function decisionEnvelope(
  callId: string,
  park: string,
  verdict: Verdict,
  reason: string,
  args: Json | null = null,
): Json {
  const envelope: Json = { kind: "control", action: verdict, call_id: callId };
  if (park) envelope.park = park;
  if (reason.trim()) envelope.reason = reason.trim();
  if (args !== null && verdict === "approve") envelope.arguments = args;
  return envelope;
}

/** How a decision reads, after the tool's name: "approved by alice: fine". */
export function decidedText(pending: PendingApproval): string | null {
  const done = pending.decision;
  if (!done) return null;
  const why = done.reason ? `: ${done.reason}` : "";
  const said = done.verdict === "approve" ? "approved" : "rejected";
  if (done.by === TIMEOUT) return `${said}: no one decided in time${why}`;
  const edited = done.verdict === "approve" && done.arguments ? " with edited arguments" : "";
  return `${said} by ${done.by}${edited}${why}`;
}

/** The harness's answer to the message sent as ``messageId``: the operator's reply to a
 * decision (cmd-...) or its refusal (refused-...), once the view has it. */
export function answerTo(view: TaskView, messageId: string): Line | null {
  const ids = [`cmd-${messageId}`, `refused-${messageId}`];
  return view.lines.find((l) => ids.includes(l.messageId)) ?? null;
}

const DECIDED = /^\S+ was (approved|rejected)\b/;

/** Whether an agent-side message is the operator's answer to a decision: its record in the
 * history carries the call (metadata "approval"); its status message reads as one. */
export function isDecisionAnswer(messageId: string, text: string, metadata: Json | undefined): boolean {
  if (metadata && typeof metadata.approval === "object" && metadata.approval !== null) return true;
  // A timeout's decision, as the status message says it (core/approval.py TIMEOUT_ID_PREFIX).
  if (messageId.startsWith("approval-timeout-")) return true;
  return messageId.startsWith("cmd-") && DECIDED.test(text);
}
