import { describe, expect, it } from "vitest";
import { envelope, FormError } from "./envelope";

describe("the new task's envelope", () => {
  it("carries the goal, the criteria one per line, and the participants, you the assignee", () => {
    expect(envelope("  Tidy the docs ", "Links work\n\n No typos \n", [{ id: "bob", role: "watcher" }, { id: " ", role: "admin" }], "alice")).toEqual({
      goal: "Tidy the docs",
      acceptance_criteria: ["Links work", "No typos"],
      participants: [
        { id: "bob", role: "watcher" },
        { id: "alice", role: "assignee" },
      ],
    });
  });

  it("keeps the role you give yourself", () => {
    expect(envelope("x", "", [{ id: "alice", role: "reporter" }], "alice").participants).toEqual([{ id: "alice", role: "reporter" }]);
  });

  it("needs a goal, and one role per participant", () => {
    expect(() => envelope("  ", "", [], "alice")).toThrow(FormError);
    expect(() => envelope("x", "", [{ id: "bob", role: "watcher" }, { id: "bob", role: "admin" }], "alice")).toThrow(/listed twice/);
  });
});
