import { TaskState } from "@a2a-js/sdk";
import { describe, expect, it } from "vitest";
import { emptyView, takeStatus, takeTask, type TaskView } from "./fold";
import { badge, composerWords, guidance, questionOf, title, viewQuestion } from "./question";
import { message, question, said, status, task } from "./test/a2a";

const ASK = question();

function opened(me: string): TaskView {
  return takeTask(emptyView("t1", me), ASK, 0);
}

describe("a question put to a person", () => {
  it("is marked for the person asked, who answers it in the composer", () => {
    const q = viewQuestion(opened("carol"))!;
    expect([badge(q), title(q)]).toEqual(["question for you", "Question for you"]);
    expect(guidance(q)).toBe("Your answer completes this task: write it below and send it.");
    expect(composerWords(opened("carol"))).toEqual({
      label: "Your answer",
      placeholder: "Write your answer",
      hint: "Enter sends your answer, which completes the task.",
      send: "Send answer",
    });
  });

  it("tells anyone else whom it waits for, and that their message does not answer it", () => {
    const view = opened("alice");
    const q = viewQuestion(view)!;
    expect([badge(q), title(q)]).toEqual(["asks carol", "Question for carol"]);
    expect(guidance(q)).toMatch(/^This task waits for carol's answer: only theirs completes it/);
    const words = composerWords(view);
    expect(words.label).toBe("Message");
    expect(words.hint).toMatch(/^Only carol's answer completes this task: a message from you is refused/);
  });

  it("shows the answer once given, and the composer closes as on any ended task", () => {
    const view = takeStatus(
      opened("carol"),
      status(TaskState.TASK_STATE_COMPLETED, { message: message("t1/turn-1/end", "answered by carol: Approved.") }),
      0,
    );
    const q = viewQuestion(view)!;
    expect(q.waiting).toBe(false);
    expect(guidance(q)).toBe("answered by carol: Approved.");
    expect(composerWords(view)).toMatchObject({ label: "Message", placeholder: "The task has ended" });
  });

  it("is the conversation's first line while it waits, whatever was said since", () => {
    const read = {
      ...ASK,
      history: [said("m1", "I approve it myself.", "alice"), message("refused-m1", "refused: not the answer")],
    };
    const texts = (view: TaskView) => takeTask(view, read, 0).lines.map((l) => l.text);
    expect(texts(emptyView("t1", "carol"))).toEqual([
      "Approve the budget of 40k?",
      "I approve it myself.",
      "refused: not the answer",
    ]);
    // A command's reply, the status message too, keeps its place after what came before it.
    const replied = { ...read, status: { ...read.status!, message: message("cmd-m2", "state: input-required") } };
    expect(takeTask(emptyView("t1", "carol"), replied, 0).lines.map((l) => l.messageId)).toEqual([
      "m1",
      "refused-m1",
      "cmd-m2",
    ]);
  });

  it("is no question on any other task, whose composer reads as a message", () => {
    const ordinary = takeTask(emptyView("t1", "alice"), task(), 0);
    expect(viewQuestion(ordinary)).toBeNull();
    expect(questionOf(null, "TASK_STATE_INPUT_REQUIRED", "alice")).toBeNull();
    expect(composerWords(ordinary)).toEqual({
      label: "Message",
      placeholder: "Write a message, or / for commands",
      hint: "Enter sends. Type / for the commands.",
      send: "Send",
    });
  });
});
