// The task extension as the UI reads it from Task.metadata: the fields it shows, each read
// tolerantly (a field missing or of the wrong type reads as empty), so a task written by a
// later, additive version of the extension still shows. The field names are the schema's
// (docs/a2a/ext/task.json); extension.test.ts checks each one against that file.
import { STATUS_EXT_KEY, TASK_EXT_KEY, type StateName, STATE_NAMES } from "./wire";

export type Role = "assignee" | "reporter" | "watcher" | "admin";
const ROLES: readonly Role[] = ["assignee", "reporter", "watcher", "admin"];

export interface Participant {
  id: string;
  role: Role;
}

export interface PlanStep {
  name: string;
  description: string;
  done: boolean;
  linkedTasks: string[];
  /** The steps this one waits for. */
  dependencies: string[];
}

export interface SubTaskRow {
  taskId: string;
  /** The remote agent the child runs on; null when it runs here. */
  agent: string | null;
  goal: string;
  state: StateName;
  subState: string | null;
}

export interface Usage {
  modelCalls: number;
  inputTokens: number;
  outputTokens: number;
  toolCalls: number;
}

/** Who one policy admits: any participant in ``roles``, or any named participant. */
export interface Deciders {
  roles: Role[];
  participants: string[];
}

/** What one call needs before it runs: each of ``deciders`` must admit the decider. */
export interface Requirement {
  deciders: Deciders[];
  timeoutSeconds: number;
  onTimeout: "reject" | "approve";
  allowEdit: boolean;
  /** Where each policy is declared ("HarnessToolServer weather"). */
  sources: string[];
}

export interface Decision {
  verdict: "approve" | "reject";
  /** The participant who decided, or "timeout". */
  by: string;
  at: string;
  reason: string;
  /** The arguments an approval edited the call to; null: as asked. */
  arguments: Json | null;
}

/** A call the task waits to have decided (sub-state awaiting-approval), or decided since. */
export interface PendingApproval {
  /** The call's id in its park (unique there); a decision names it. */
  callId: string;
  /** The park the call waits in; a decision names it, and is refused for any other. */
  park: string;
  tool: string;
  arguments: Json;
  /** The arguments were too long to show whole (``arguments._start`` is their start). */
  argumentsCut: boolean;
  turn: number;
  requirement: Requirement;
  expiresAt: string;
  decision: Decision | null;
}

export interface TaskExtension {
  name: string;
  goal: string;
  description: string;
  acceptanceCriteria: string[];
  participants: Participant[];
  parent: string | null;
  plan: PlanStep[];
  subTasks: SubTaskRow[];
  /** conversation, delegated or participant (a question put to a person); null when unset. */
  lifecycle: string | null;
  model: string | null;
  /** What the task's ended turns used. */
  usage: Usage | null;
  /** While a turn runs: what it has used so far (renewed with the turn's lease). */
  turnUsage: Usage | null;
  /** The calls that wait for a decision, and those decided since, until the turn runs them. */
  approvals: PendingApproval[];
}

/** Every field of the schema this module reads, by its path in the schema's terms. */
export const FIELDS_READ = {
  task: [
    "name",
    "goal",
    "description",
    "acceptance_criteria",
    "participants",
    "parent",
    "plan",
    "sub_tasks",
    "lifecycle",
    "model",
    "usage",
    "turn_usage",
    "version",
    "approvals",
  ],
  Participant: ["id", "role"],
  TaskLink: ["task_id"],
  Plan: ["steps"],
  PlanStep: ["name", "description", "done", "linked_tasks", "dependencies"],
  SubTaskRow: ["task_id", "agent", "goal", "state", "sub_state"],
  TaskUsage: ["model_calls", "input_tokens", "output_tokens", "tool_calls"],
  PendingApproval: [
    "call_id",
    "park",
    "tool",
    "arguments",
    "arguments_cut",
    "turn",
    "requirement",
    "expires_at",
    "decision",
  ],
  Requirement: ["deciders", "timeout_seconds", "on_timeout", "allow_edit", "sources"],
  Deciders: ["roles", "participants"],
  Decision: ["verdict", "by", "at", "reason", "arguments"],
} as const;

export type Json = Record<string, unknown>;

function record(value: unknown): Json | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Json)
    : undefined;
}

function text(value: unknown): string {
  return typeof value === "string" ? value : "";
}

function count(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) ? value : 0;
}

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function strings(value: unknown): string[] {
  return list(value).filter((s): s is string => typeof s === "string");
}

export function readState(value: unknown): StateName | undefined {
  return STATE_NAMES.find((n) => n === value);
}

function participant(value: unknown): Participant | undefined {
  const raw = record(value);
  const role = ROLES.find((r) => r === raw?.role);
  const id = text(raw?.id);
  return role && id ? { id, role } : undefined;
}

function step(value: unknown): PlanStep | undefined {
  const raw = record(value);
  const name = text(raw?.name);
  if (!name) return undefined;
  return {
    name,
    description: text(raw?.description),
    done: raw?.done === true,
    linkedTasks: strings(raw?.linked_tasks),
    dependencies: strings(raw?.dependencies),
  };
}

/** One sub-task row (from the extension, or from a parent's status event). */
export function subTaskRow(value: unknown): SubTaskRow | undefined {
  const raw = record(value);
  const taskId = text(raw?.task_id);
  if (!taskId) return undefined;
  const subState = text(raw?.sub_state);
  return {
    taskId,
    agent: text(raw?.agent) || null,
    goal: text(raw?.goal),
    state: readState(raw?.state) ?? "TASK_STATE_SUBMITTED",
    subState: subState || null,
  };
}

export function subTaskRows(value: unknown): SubTaskRow[] {
  return list(value).flatMap((r) => subTaskRow(r) ?? []);
}

export function usageOf(value: unknown): Usage | null {
  const raw = record(value);
  if (!raw) return null;
  return {
    modelCalls: count(raw.model_calls),
    inputTokens: count(raw.input_tokens),
    outputTokens: count(raw.output_tokens),
    toolCalls: count(raw.tool_calls),
  };
}

function deciders(value: unknown): Deciders {
  const raw = record(value);
  return {
    roles: list(raw?.roles).flatMap((r) => ROLES.find((known) => known === r) ?? []),
    participants: strings(raw?.participants),
  };
}

function decision(value: unknown): Decision | null {
  const raw = record(value);
  const verdict = raw?.verdict;
  if (verdict !== "approve" && verdict !== "reject") return null;
  return {
    verdict,
    by: text(raw?.by),
    at: text(raw?.at),
    reason: text(raw?.reason),
    arguments: record(raw?.arguments) ?? null,
  };
}

/** One call that waits for (or has had) a decision; undefined when it names no call. */
export function pendingApproval(value: unknown): PendingApproval | undefined {
  const raw = record(value);
  const callId = text(raw?.call_id);
  const tool = text(raw?.tool);
  if (!callId || !tool) return undefined;
  const requirement = record(raw?.requirement);
  const groups = list(requirement?.deciders).map(deciders);
  return {
    callId,
    park: text(raw?.park),
    tool,
    arguments: record(raw?.arguments) ?? {},
    argumentsCut: raw?.arguments_cut === true,
    turn: count(raw?.turn),
    requirement: {
      // A requirement always names who decides; one that does not read admits no one.
      deciders: groups.length ? groups : [{ roles: [], participants: [] }],
      timeoutSeconds: count(requirement?.timeout_seconds),
      onTimeout: requirement?.on_timeout === "approve" ? "approve" : "reject",
      allowEdit: requirement?.allow_edit === true,
      sources: strings(requirement?.sources),
    },
    expiresAt: text(raw?.expires_at),
    decision: decision(raw?.decision),
  };
}

/** The task extension a Task's metadata carries, or undefined when it carries none. */
export function extensionOf(metadata: Json | undefined): TaskExtension | undefined {
  const raw = record(metadata?.[TASK_EXT_KEY]);
  if (!raw) return undefined;
  return {
    name: text(raw.name),
    goal: text(raw.goal),
    description: text(raw.description),
    acceptanceCriteria: strings(raw.acceptance_criteria),
    participants: list(raw.participants).flatMap((p) => participant(p) ?? []),
    parent: text(record(raw.parent)?.task_id) || null,
    plan: list(record(raw.plan)?.steps).flatMap((s) => step(s) ?? []),
    subTasks: subTaskRows(raw.sub_tasks),
    lifecycle: text(raw.lifecycle) || null,
    model: text(raw.model) || null,
    usage: usageOf(raw.usage),
    turnUsage: usageOf(raw.turn_usage),
    approvals: list(raw.approvals).flatMap((a) => pendingApproval(a) ?? []),
  };
}

/** The task's version an event or a read was cut from (its resourceVersion, a string of
 * digits, under the task extension key), or null when it carries none. */
export function versionOf(metadata: Json | undefined): string | null {
  const version = record(metadata?.[TASK_EXT_KEY])?.version;
  return typeof version === "string" && /^\d{1,20}$/.test(version) ? version : null;
}

/** The sub-state under the status extension key; null when the task is not parked. */
export function subStateOf(metadata: Json | undefined): string | null {
  return text(record(metadata?.[STATUS_EXT_KEY])?.sub_state) || null;
}

/** What the task extension key of a status event's metadata carries: a parent's sub-task
 * rows, what the ended turns used, and what the running turn has used so far. Rows and usage
 * are undefined when the event does not carry them; the running turn's is null when no turn
 * runs (every event says it, so one without it clears it). */
export function statusExtras(metadata: Json | undefined): {
  subTasks: SubTaskRow[] | undefined;
  usage: Usage | undefined;
  turnUsage: Usage | null;
} {
  const raw = record(metadata?.[TASK_EXT_KEY]);
  return {
    subTasks: Array.isArray(raw?.sub_tasks) ? subTaskRows(raw.sub_tasks) : undefined,
    usage: usageOf(raw?.usage) ?? undefined,
    turnUsage: usageOf(raw?.turn_usage),
  };
}
