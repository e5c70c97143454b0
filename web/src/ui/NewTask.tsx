// The new-task form: a goal, files to go with it, acceptance criteria (one per line), and who
// else takes part with which role. The goal is the task's first message, its files `raw` parts
// after it, checked and refused as the composer's are (chosen.ts, FilePicker.tsx); the task
// opens as soon as the gateway has created it, and the first reply streams into it there. A
// refusal, the form's own or the gateway's, keeps everything typed and chosen.
import type { StreamResponse } from "@a2a-js/sdk";
import { useId, useState, type FormEvent } from "react";
import { attach, outgoing, type Attached } from "../chosen";
import type { HarnessClient } from "../client";
import { envelope, FormError, ROLES } from "../envelope";
import { explain } from "../errors";
import type { Role } from "../extension";
import { take, takeMessage } from "../fold";
import type { Views } from "../views";
import { AttachedFiles, FilePicker, FilesHint } from "./FilePicker";

interface Person {
  key: number;
  id: string;
  role: Role;
}

export function NewTask({
  client,
  views,
  onCreated,
}: {
  client: HarnessClient;
  views: Views;
  onCreated: (taskId: string) => void;
}) {
  const [goal, setGoal] = useState("");
  const [criteria, setCriteria] = useState("");
  const [people, setPeople] = useState<Person[]>([]);
  const [files, setFiles] = useState<Attached[]>([]);
  const [problem, setProblem] = useState<{ field: string; text: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const [nextKey, setNextKey] = useState(1);
  const ids = useId();

  async function submit(event: FormEvent) {
    event.preventDefault();
    let made;
    try {
      made = envelope(goal, criteria, people, client.me);
    } catch (error) {
      if (error instanceof FormError) {
        setProblem({ field: error.field, text: error.message });
        document.querySelector<HTMLElement>(`[data-field="${error.field}"]`)?.focus();
        return;
      }
      throw error;
    }
    const ready = await outgoing(files, made.goal);
    if (ready.problem !== null) {
      setProblem({ field: "files", text: ready.problem });
      return;
    }
    setBusy(true);
    setProblem(null);
    const { message, events } = client.send(made.goal, { envelope: made }, ready.files);
    let taskId: string | null = null;
    try {
      for await (const item of events) {
        if (taskId === null) {
          taskId = taskIdOf(item);
          if (taskId === null) continue;
          const id = taskId;
          views.apply(id, (v) => takeMessage(v, { ...message, taskId: id }));
          onCreated(id);
        }
        const id = taskId;
        views.apply(id, (v) => take(v, item, Date.now()));
      }
    } catch (error) {
      // Once the task exists its page follows it and says what happens; before, say it here.
      if (taskId === null) setProblem({ field: "form", text: explain(error) });
    } finally {
      setBusy(false);
    }
  }

  const problemFor = (field: string) => (problem?.field === field ? problem.text : null);
  const filesInput = `${ids}-files`;
  return (
    <section className="new-task" aria-labelledby={`${ids}-title`}>
      <h1 id={`${ids}-title`}>New task</h1>
      <form onSubmit={submit} noValidate>
        <label htmlFor={`${ids}-goal`}>Goal</label>
        <textarea
          id={`${ids}-goal`}
          data-field="goal"
          rows={2}
          value={goal}
          onChange={(e) => setGoal(e.target.value)}
          aria-invalid={problemFor("goal") ? true : undefined}
          aria-describedby={`${ids}-goal-help ${ids}-goal-problem`}
          autoFocus
        />
        <p id={`${ids}-goal-help`} className="help">
          What the task must achieve. It is also the first message the agent reads.
        </p>
        <p id={`${ids}-goal-problem`} className="problem" role="alert">
          {problemFor("goal")}
        </p>

        <div className="new-task-files">
          <FilePicker
            id={filesInput}
            describedBy={`${ids}-files-hint ${ids}-files-problem`}
            enabled={!busy}
            onAdd={(picked) => {
              const taken = attach(files, picked, goal);
              setFiles(taken.files);
              // A refusal is said under the input; a pick that fits clears only an earlier one.
              setProblem((now) =>
                taken.problem !== null
                  ? { field: "files", text: taken.problem }
                  : now?.field === "files"
                    ? null
                    : now,
              );
            }}
          />
          <AttachedFiles
            files={files}
            inputId={filesInput}
            onRemove={(key) => setFiles((now) => now.filter((f) => f.key !== key))}
          />
          <FilesHint id={`${ids}-files-hint`} lead="Sent with the goal, in the first message. " />
          <p id={`${ids}-files-problem`} className="problem" role="alert">
            {problemFor("files")}
          </p>
        </div>

        <label htmlFor={`${ids}-criteria`}>Acceptance criteria</label>
        <textarea
          id={`${ids}-criteria`}
          rows={3}
          value={criteria}
          onChange={(e) => setCriteria(e.target.value)}
          aria-describedby={`${ids}-criteria-help`}
        />
        <p id={`${ids}-criteria-help`} className="help">
          How to tell the goal is met, one per line (optional).
        </p>

        <fieldset aria-describedby={`${ids}-participants-help ${ids}-participants-problem`}>
          <legend>Participants</legend>
          <p id={`${ids}-participants-help`} className="help">
            You ({client.me}) are the assignee unless you list yourself with another role.
          </p>
          {people.map((person, i) => (
            <div className="person" key={person.key}>
              <label htmlFor={`${ids}-person-${person.key}`} className="visually-hidden">
                Participant {i + 1}
              </label>
              <input
                id={`${ids}-person-${person.key}`}
                data-field="participants"
                value={person.id}
                placeholder="participant id"
                onChange={(e) =>
                  setPeople(people.map((p) => (p.key === person.key ? { ...p, id: e.target.value } : p)))
                }
              />
              <label htmlFor={`${ids}-role-${person.key}`} className="visually-hidden">
                Role of participant {i + 1}
              </label>
              <select
                id={`${ids}-role-${person.key}`}
                value={person.role}
                onChange={(e) =>
                  setPeople(
                    people.map((p) => (p.key === person.key ? { ...p, role: e.target.value as Role } : p)),
                  )
                }
              >
                {ROLES.map((r) => (
                  <option key={r} value={r}>
                    {r}
                  </option>
                ))}
              </select>
              <button
                type="button"
                className="ghost"
                onClick={() => setPeople(people.filter((p) => p.key !== person.key))}
              >
                Remove<span className="visually-hidden"> participant {i + 1}</span>
              </button>
            </div>
          ))}
          <button
            type="button"
            className="ghost"
            onClick={() => {
              setPeople([...people, { key: nextKey, id: "", role: "watcher" }]);
              setNextKey(nextKey + 1);
            }}
          >
            Add a participant
          </button>
          <p id={`${ids}-participants-problem`} className="problem" role="alert">
            {problemFor("participants")}
          </p>
        </fieldset>

        <p className="problem" role="alert">
          {problemFor("form")}
        </p>
        <button type="submit" className="primary" disabled={busy}>
          {busy ? "Creating…" : "Create task"}
        </button>
      </form>
    </section>
  );
}

function taskIdOf(event: StreamResponse): string | null {
  const payload = event.payload;
  if (payload?.$case === "task") return payload.value.id;
  if (payload?.$case === "statusUpdate") return payload.value.taskId;
  return null;
}
