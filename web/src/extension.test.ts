// The fields the UI reads are the schema's: checked against docs/a2a/ext/task.json.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { extensionOf, FIELDS_READ, statusExtras, subStateOf } from "./extension";
import { STATUS_EXT_KEY, TASK_EXT_KEY } from "./wire";

interface Schema {
  properties: Record<string, unknown>;
  $defs: Record<string, { properties: Record<string, unknown> }>;
}

const schema = JSON.parse(
  readFileSync(new URL("../../docs/a2a/ext/task.json", import.meta.url), "utf8"),
) as Schema;

describe("the task extension as the UI reads it", () => {
  it("reads only fields the schema has", () => {
    for (const [where, fields] of Object.entries(FIELDS_READ)) {
      const properties = where === "task" ? schema.properties : schema.$defs[where]?.properties;
      expect(properties, `the schema defines ${where}`).toBeDefined();
      for (const field of fields) expect(Object.keys(properties!), `${where}.${field}`).toContain(field);
    }
  });

  it("reads a whole extension, and tolerates what it does not know", () => {
    const ext = extensionOf({
      [TASK_EXT_KEY]: {
        goal: "Plan",
        acceptance_criteria: ["a", 3],
        participants: [{ id: "alice", role: "assignee" }, { id: "x", role: "king" }],
        parent: { task_id: "p" },
        plan: { steps: [{ name: "one", done: true }, { name: "two", dependencies: ["one"] }, {}] },
        sub_tasks: [
          { task_id: "c", state: "TASK_STATE_WORKING" },
          { task_id: "m", agent: "market", state: "TASK_STATE_INPUT_REQUIRED", sub_state: "awaiting-answer" },
          { goal: "no id" },
        ],
        lifecycle: "conversation",
        usage: { model_calls: 2, input_tokens: 10, output_tokens: 5, tool_calls: 1 },
        some_later_field: true,
      },
    });
    expect(ext).toMatchObject({
      goal: "Plan",
      acceptanceCriteria: ["a"],
      participants: [{ id: "alice", role: "assignee" }],
      parent: "p",
      plan: [
        { name: "one", done: true },
        { name: "two", done: false, dependencies: ["one"] },
      ],
      subTasks: [
        { taskId: "c", agent: null, state: "TASK_STATE_WORKING", goal: "", subState: null },
        { taskId: "m", agent: "market", state: "TASK_STATE_INPUT_REQUIRED", goal: "", subState: "awaiting-answer" },
      ],
      lifecycle: "conversation",
      usage: { modelCalls: 2, inputTokens: 10, outputTokens: 5, toolCalls: 1 },
    });
    expect(extensionOf({})).toBeUndefined();
  });

  it("reads the sub-state, and a status event's rows and usage only when it carries them", () => {
    expect(subStateOf({ [STATUS_EXT_KEY]: { sub_state: "awaiting-answer" } })).toBe("awaiting-answer");
    expect(subStateOf({})).toBeNull();
    expect(statusExtras({})).toEqual({ subTasks: undefined, usage: undefined, turnUsage: null });
    expect(statusExtras({ [TASK_EXT_KEY]: { sub_tasks: [] } }).subTasks).toEqual([]);
  });
});
