// A2A objects for the unit tests, built as the gateway sends them (the SDK's decoded shapes).
import {
  Role,
  TaskState,
  type Artifact,
  type Message,
  type Part,
  type StreamResponse,
  type Task,
  type TaskArtifactUpdateEvent,
  type TaskStatusUpdateEvent,
} from "@a2a-js/sdk";
import { STATUS_EXT_KEY, TASK_EXT_KEY } from "../wire";

export function message(id: string, text: string, role: Role = Role.ROLE_AGENT, metadata?: Record<string, unknown>): Message {
  return {
    messageId: id,
    contextId: "ctx",
    taskId: "t1",
    role,
    parts: [{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "" }],
    metadata,
    extensions: [],
    referenceTaskIds: [],
  };
}

export function said(id: string, text: string, sender?: string): Message {
  return message(id, text, Role.ROLE_USER, sender ? { sender } : undefined);
}

export function task(
  opts: {
    id?: string;
    state?: TaskState;
    subState?: string;
    history?: Message[];
    status?: Message;
    extension?: Record<string, unknown>;
  } = {},
): Task {
  const metadata: Record<string, unknown> = {
    [TASK_EXT_KEY]: opts.extension ?? {
      goal: "Plan the release",
      participants: [
        { id: "alice", role: "assignee" },
        { id: "bob", role: "watcher" },
      ],
    },
  };
  if (opts.subState) metadata[STATUS_EXT_KEY] = { sub_state: opts.subState };
  return {
    id: opts.id ?? "t1",
    contextId: "ctx",
    status: { state: opts.state ?? TaskState.TASK_STATE_INPUT_REQUIRED, message: opts.status, timestamp: undefined },
    artifacts: [],
    history: opts.history ?? [],
    metadata,
  };
}

/** A participant task as the gateway renders it while it waits: a question (the status message
 * it was created with) for carol, alice watching, under the parent ``parent``. */
export function question(opts: { id?: string; parent?: string } = {}): Task {
  const id = opts.id ?? "t1";
  return task({
    id,
    subState: "awaiting-answer",
    status: message(`${id}/question`, "Approve the budget of 40k?"),
    extension: {
      goal: "Approve the budget of 40k?",
      lifecycle: "participant",
      parent: { task_id: opts.parent ?? "release" },
      participants: [
        { id: "carol", role: "assignee" },
        { id: "alice", role: "watcher" },
      ],
    },
  });
}

export function status(
  state: TaskState,
  opts: { taskId?: string; subState?: string; message?: Message; ext?: Record<string, unknown> } = {},
): TaskStatusUpdateEvent {
  const metadata: Record<string, unknown> = {};
  if (opts.subState) metadata[STATUS_EXT_KEY] = { sub_state: opts.subState };
  if (opts.ext) metadata[TASK_EXT_KEY] = opts.ext;
  return {
    taskId: opts.taskId ?? "t1",
    contextId: "ctx",
    status: { state, message: opts.message, timestamp: undefined },
    metadata,
  };
}

export const asEvent = {
  task: (value: Task): StreamResponse => ({ payload: { $case: "task", value } }),
  status: (value: TaskStatusUpdateEvent): StreamResponse => ({ payload: { $case: "statusUpdate", value } }),
  message: (value: Message): StreamResponse => ({ payload: { $case: "message", value } }),
};

/** One call waiting for approval as the task extension carries it (``more``: its fields). */
export function pendingCall(callId: string, city: string, more: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    call_id: callId,
    tool: "weather__weather",
    arguments: { city },
    arguments_cut: false,
    turn: 1,
    expires_at: "2026-12-02T06:26:30.278Z",
    requirement: {
      deciders: [{ roles: ["assignee", "admin"], participants: [] }],
      timeout_seconds: 3600,
      on_timeout: "reject",
      allow_edit: false,
      sources: ["HarnessToolServer weather"],
    },
    ...more,
  };
}

/** A task parked awaiting approval of ``calls`` (alice assignee, bob watcher). */
export function awaiting(calls: Record<string, unknown>[], opts: { id?: string; parent?: string } = {}): Task {
  return task({
    id: opts.id,
    subState: "awaiting-approval",
    extension: {
      goal: "Plan the trip",
      parent: opts.parent ? { task_id: opts.parent } : undefined,
      participants: [
        { id: "alice", role: "assignee" },
        { id: "bob", role: "watcher" },
      ],
      approvals: calls,
    },
  });
}

/** Parts as the gateway sends an artifact's or a message's (the SDK's decoded shapes). */
export const parts = {
  text: (value: string, mediaType = ""): Part => ({ content: { $case: "text", value }, metadata: undefined, filename: "", mediaType }),
  data: (value: Record<string, unknown>): Part => ({
    content: { $case: "data", value },
    metadata: undefined,
    filename: "",
    mediaType: "application/json",
  }),
  file: (bytes: Uint8Array, mediaType: string, filename: string): Part => ({
    content: { $case: "raw", value: bytes as never },
    metadata: undefined,
    filename,
    mediaType,
  }),
};

export function artifact(name: string, artifactParts: Part[], description = ""): Artifact {
  return { artifactId: `artifact-${name}`, name, description, parts: artifactParts, metadata: undefined, extensions: [] };
}

export function artifactUpdate(
  value: Artifact,
  opts: { append?: boolean; lastChunk?: boolean; taskId?: string } = {},
): StreamResponse {
  const event: TaskArtifactUpdateEvent = {
    taskId: opts.taskId ?? "t1",
    contextId: "ctx",
    artifact: value,
    append: opts.append ?? false,
    lastChunk: opts.lastChunk ?? true,
    metadata: undefined,
  };
  return { payload: { $case: "artifactUpdate", value: event } };
}
