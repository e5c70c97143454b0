// A participant task (lifecycle "participant") is a question an agent put to one person, which
// that person's answer completes: what the screens say of it, a pure module. The words are the
// TUI's (tiny_harness/tui/view.py, Question), so both read the same.
import type { TaskExtension } from "./extension";
import type { TaskView } from "./fold";
import { isTerminal, type StateName } from "./wire";

export interface Question {
  /** Who answers it: the task's assignees (one, as create_task_for_participant makes it). */
  asks: string[];
  /** Whether the viewer is the one asked. */
  mine: boolean;
  /** Whether it still waits for the answer. */
  waiting: boolean;
  /** The status text it ended with ("answered by carol: ..."), once it has ended. */
  ending: string | null;
}

/** The question a task puts to a person, or null when it is not a participant task. */
export function questionOf(
  extension: TaskExtension | null | undefined,
  state: StateName,
  me: string,
  ending: string | null = null,
): Question | null {
  if (extension?.lifecycle !== "participant") return null;
  const asks = extension.participants.filter((p) => p.role === "assignee").map((p) => p.id);
  return {
    asks,
    mine: asks.includes(me),
    waiting: state === "TASK_STATE_INPUT_REQUIRED",
    ending: isTerminal(state) ? ending : null,
  };
}

/** The question the open task puts, from its view. */
export function viewQuestion(view: TaskView): Question | null {
  return questionOf(view.extension, view.state, view.me, view.ending);
}

function whom(q: Question): string {
  return q.asks.join(" or ") || "its assignee";
}

/** The mark beside the task wherever it is listed. */
export function badge(q: Question): string {
  return q.mine ? "question for you" : `asks ${whom(q)}`;
}

export function title(q: Question): string {
  return q.mine ? "Question for you" : `Question for ${whom(q)}`;
}

/** What the viewer can do about it now, or how it ended. */
export function guidance(q: Question): string {
  if (q.ending !== null) return q.ending;
  if (!q.waiting) return q.mine ? "Taking your answer…" : `Taking ${whom(q)}'s answer…`;
  if (q.mine) return "Your answer completes this task: write it below and send it.";
  return `This task waits for ${whom(q)}'s answer: only theirs completes it, and a message from you does not answer it.`;
}

/** How the composer reads on this task: its label, placeholder, hint and send button. */
export interface ComposerWords {
  label: string;
  placeholder: string;
  hint: string;
  send: string;
}

const ORDINARY: ComposerWords = {
  label: "Message",
  placeholder: "Write a message, or / for commands",
  hint: "Enter sends. Type / for the commands.",
  send: "Send",
};

const ENDED: ComposerWords = {
  ...ORDINARY,
  placeholder: "The task has ended",
  hint: "The task has ended: nothing more can be sent to it.",
};

export function composerWords(view: TaskView): ComposerWords {
  if (isTerminal(view.state)) return ENDED;
  const q = viewQuestion(view);
  if (!q?.waiting) return ORDINARY;
  if (q.mine) {
    return {
      label: "Your answer",
      placeholder: "Write your answer",
      hint: "Enter sends your answer, which completes the task.",
      send: "Send answer",
    };
  }
  return {
    ...ORDINARY,
    hint: `Only ${whom(q)}'s answer completes this task: a message from you is refused. Type / for the commands.`,
  };
}
