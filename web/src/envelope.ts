// The new-task form's answer: the task envelope a first A2A message carries under the task
// extension key. The gateway checks it again and says what is wrong if anything is; the form
// says the same earlier. The one who creates the task is its assignee unless they name
// themselves otherwise. A pure module.
import type { Participant, Role } from "./extension";

export const ROLES: readonly Role[] = ["assignee", "reporter", "watcher", "admin"];

export class FormError extends Error {
  /** The form field to fix. */
  readonly field: "goal" | "participants";
  constructor(field: "goal" | "participants", message: string) {
    super(message);
    this.field = field;
  }
}

export interface Envelope {
  goal: string;
  participants: Participant[];
  acceptance_criteria?: string[];
}

/** ``criteria`` one per line; ``people`` as the form's rows (an empty id is skipped). */
export function envelope(
  goal: string,
  criteria: string,
  people: { id: string; role: Role }[],
  me: string,
): Envelope {
  const trimmed = goal.trim();
  if (!trimmed) throw new FormError("goal", "a task needs a goal: say what it must achieve");
  const roles = new Map<string, Role>();
  for (const person of people) {
    const id = person.id.trim();
    if (!id) continue;
    if (!ROLES.includes(person.role)) {
      throw new FormError("participants", `${person.role} is not a role; roles: ${ROLES.join(", ")}`);
    }
    if (roles.has(id)) {
      throw new FormError("participants", `${id} is listed twice: give each participant one role`);
    }
    roles.set(id, person.role);
  }
  if (!roles.has(me)) roles.set(me, "assignee");
  const out: Envelope = {
    goal: trimmed,
    participants: [...roles].map(([id, role]) => ({ id, role })),
  };
  const listed = criteria
    .split("\n")
    .map((c) => c.trim())
    .filter(Boolean);
  if (listed.length) out.acceptance_criteria = listed;
  return out;
}
