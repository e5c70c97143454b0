// The harness's A2A extension keys and media type, as tiny_harness/core/extensions.py spells
// them (tests/unit/a2a_gateway/test_web.py checks that the two agree), and the task states by name.
import { TaskState } from "@a2a-js/sdk";

export const TASK_EXT_KEY = "io.github.madarauchiha-314.tiny-harness/task";
export const STATUS_EXT_KEY = "io.github.madarauchiha-314.tiny-harness/status";
export const COMMANDS_EXT_URI = "https://madarauchiha-314.github.io/tiny-harness/a2a/ext/commands/v1";
/** The media type of the control envelope's data part (a participant's "complete"). */
export const EVENT_MEDIA_TYPE = "application/vnd.tiny-harness.event+json";

export type StateName =
  | "TASK_STATE_SUBMITTED"
  | "TASK_STATE_WORKING"
  | "TASK_STATE_INPUT_REQUIRED"
  | "TASK_STATE_AUTH_REQUIRED"
  | "TASK_STATE_COMPLETED"
  | "TASK_STATE_FAILED"
  | "TASK_STATE_CANCELED"
  | "TASK_STATE_REJECTED";

export const STATE_NAMES: readonly StateName[] = [
  "TASK_STATE_SUBMITTED",
  "TASK_STATE_WORKING",
  "TASK_STATE_INPUT_REQUIRED",
  "TASK_STATE_AUTH_REQUIRED",
  "TASK_STATE_COMPLETED",
  "TASK_STATE_FAILED",
  "TASK_STATE_CANCELED",
  "TASK_STATE_REJECTED",
];

const TERMINAL: ReadonlySet<StateName> = new Set<StateName>([
  "TASK_STATE_COMPLETED",
  "TASK_STATE_FAILED",
  "TASK_STATE_CANCELED",
  "TASK_STATE_REJECTED",
]);

export function isTerminal(state: StateName): boolean {
  return TERMINAL.has(state);
}

/** The name of a protobuf state value; undefined for UNSPECIFIED or one we do not know. */
export function stateName(value: TaskState | undefined): StateName | undefined {
  const name = value === undefined ? undefined : TaskState[value];
  return STATE_NAMES.find((n) => n === name);
}

export function stateValue(name: StateName): TaskState {
  return TaskState[name];
}

/** How a state reads on a badge: INPUT_REQUIRED. */
export function shortState(name: StateName | string): string {
  return name.replace(/^TASK_STATE_/, "");
}
