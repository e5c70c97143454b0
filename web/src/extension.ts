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
  ],
  Participant: ["id", "role"],
  TaskLink: ["task_id"],
  Plan: ["steps"],
  PlanStep: ["name", "description", "done", "linked_tasks", "dependencies"],
  SubTaskRow: ["task_id", "agent", "goal", "state", "sub_state"],
  TaskUsage: ["model_calls", "input_tokens", "output_tokens", "tool_calls"],
} as const;

type Json = Record<string, unknown>;

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
