import { describe, expect, it } from "vitest";
import { TaskState } from "@a2a-js/sdk";
import { takeArtifacts, takeArtifactUpdate } from "./artifacts";
import { emptyView, take, takeTask, type TaskView } from "./fold";
import { artifact, artifactUpdate, asEvent, parts, status, task } from "./test/a2a";
import { TASK_EXT_KEY } from "./wire";

const texts = (view: TaskView) =>
  view.artifacts.map((a) => [a.name, a.parts.map((p) => (p.content?.$case === "text" ? p.content.value : p.content?.$case)).join("|")]);

function opened(): TaskView {
  return takeTask(emptyView("t1", "alice"), task(), 0);
}

describe("a task's artifacts", () => {
  it("adds an appended chunk to its artifact, and says more is coming until the last", () => {
    let view = opened();
    view = take(view, artifactUpdate(artifact("report", [parts.text("one")], "The report"), { lastChunk: false }), 0);
    expect(view.artifacts[0]?.receiving).toBe(true);
    view = take(view, artifactUpdate(artifact("report", [parts.text("two")]), { append: true, lastChunk: false }), 0);
    view = take(view, artifactUpdate(artifact("report", [parts.text("three")]), { append: true }), 0);
    expect(texts(view)).toEqual([["report", "one|two|three"]]);
    expect(view.artifacts[0]?.description).toBe("The report");
    expect(view.artifacts[0]?.receiving).toBe(false);
  });

  it("replaces an artifact with a chunk that does not append (published again, or a resume's whole)", () => {
    let view = opened();
    view = take(view, artifactUpdate(artifact("report", [parts.text("one")])), 0);
    view = take(view, artifactUpdate(artifact("chart", [parts.data({ rows: 3 })])), 0);
    view = take(view, artifactUpdate(artifact("report", [parts.text("one"), parts.text("two")])), 0);
    expect(texts(view)).toEqual([
      ["report", "one|two"],
      ["chart", "data"],
    ]);
  });

  it("takes an append whose first chunks it missed as what it carries", () => {
    const list = takeArtifactUpdate([], {
      taskId: "t1",
      contextId: "ctx",
      artifact: artifact("report", [parts.text("two")]),
      append: true,
      lastChunk: true,
      metadata: undefined,
    });
    expect(list.map((a) => a.parts.length)).toEqual([1]);
  });

  it("reads them whole from a task, keeping those a task lacks, and ignores another task's", () => {
    let view = opened();
    view = take(view, artifactUpdate(artifact("draft", [parts.text("d")])), 0);
    view = takeTask(view, task({ history: [] }), 0); // a send's stream opens with the task as written
    expect(texts(view)).toEqual([["draft", "d"]]);
    const read = task();
    read.artifacts = [artifact("report", [parts.text("a"), parts.text("b")]), artifact("draft", [parts.text("d2")])];
    view = takeTask(view, read, 0);
    expect(texts(view)).toEqual([
      ["draft", "d2"],
      ["report", "a|b"],
    ]);
    const other = take(view, artifactUpdate(artifact("x", [parts.text("x")]), { taskId: "t2" }), 0);
    expect(other).toBe(view);
  });

  it("keeps what the stream brought when a read older than the view answers late", () => {
    let view = opened();
    view = take(view, asEvent.status(status(TaskState.TASK_STATE_WORKING, { ext: { version: "5" } })), 0);
    view = take(view, artifactUpdate(artifact("report", [parts.text("new")])), 0);
    const old = task();
    old.metadata = { ...old.metadata, [TASK_EXT_KEY]: { version: "3" } };
    old.artifacts = [artifact("report", [parts.text("old")])];
    expect(texts(takeTask(view, old, 0))).toEqual([["report", "new"]]);
  });

  it("keeps an artifact's object when a read brings it unchanged, and not when it changed", () => {
    const png = Uint8Array.of(1, 2, 3);
    const read = () => {
      const t = task();
      t.artifacts = [artifact("chart", [parts.file(Uint8Array.from(png), "image/png", "c.png")]), artifact("figures", [parts.data({ a: 1 })])];
      return t;
    };
    const first = takeTask(opened(), read(), 0);
    const again = takeTask(first, read(), 0);
    expect(again.artifacts[0]).toBe(first.artifacts[0]);
    expect(again.artifacts[1]).toBe(first.artifacts[1]);
    const changed = read();
    changed.artifacts[0] = artifact("chart", [parts.file(Uint8Array.of(1, 2, 4), "image/png", "c.png")]);
    expect(takeTask(first, changed, 0).artifacts[0]).not.toBe(first.artifacts[0]);
  });

  it("uses the id when an artifact has no name", () => {
    const nameless = { ...artifact("x", [parts.text("t")]), name: "" };
    expect(takeArtifacts([], [nameless])[0]?.name).toBe("artifact-x");
  });
});
