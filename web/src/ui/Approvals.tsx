// The calls a task waits to have approved (sub-state awaiting-approval), each with its tool and
// call id, its arguments as indented JSON (bounded, scrollable, and a note when the harness
// stored only their start), who decides and until when, and any decision so far; yours first.
// Approve and Reject take an optional reason; when the call's policy allows an edit, "Edit the
// arguments" opens a JSON field, checked here as a JSON object before anything is sent. A call
// you may not decide keeps its buttons, disabled, with the operator's reason beside them.
//
// A decision is a control envelope sent as a message (client.decide); what the gateway streams
// folds into the task's view, and the operator's answer to it (cmd-<id>), or its refusal
// (refused-<id>), is said under the call as well as in the conversation.
import { useId, useRef, useState } from "react";
import {
  answerTo,
  decidedText,
  describeDeciders,
  editable,
  parseEdit,
  shownArguments,
  summary,
  unseenRefusal,
  viewCalls,
  type Call,
  type Verdict,
} from "../approval";
import { literal } from "../literal";
import type { HarnessClient } from "../client";
import { explain } from "../errors";
import type { Json } from "../extension";
import { take, takeMessage, takeTask, type TaskView } from "../fold";
import type { Views } from "../views";

export function Approvals({
  client,
  views,
  view,
}: {
  client: HarnessClient;
  views: Views;
  view: TaskView;
}) {
  const calls = viewCalls(view);
  if (!calls.length) return null;
  const waiting = summary(calls);
  return (
    <section className="approvals" aria-labelledby="approvals-title">
      <h2 id="approvals-title">{waiting ? "Calls waiting for approval" : "Calls decided"}</h2>
      <p className="help">{waiting ? `${waiting}.` : "The next turn runs what was approved."}</p>
      <ol className="calls">
        {calls.map((call) => (
          <li key={call.pending.callId}>
            <CallCard call={call} client={client} views={views} taskId={view.taskId} />
          </li>
        ))}
      </ol>
    </section>
  );
}

interface Answer {
  text: string;
  refused: boolean;
}

function CallCard({
  call,
  client,
  views,
  taskId,
}: {
  call: Call;
  client: HarnessClient;
  views: Views;
  taskId: string;
}) {
  const pending = call.pending;
  const id = useId();
  const [reason, setReason] = useState("");
  const [editing, setEditing] = useState(false);
  const [edit, setEdit] = useState(() => editable(pending));
  const [editError, setEditError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [answer, setAnswer] = useState<Answer | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const field = useRef<HTMLTextAreaElement | null>(null);
  const args = shownArguments(pending);
  const decided = decidedText(pending);
  const refusal = pending.decision ? null : call.refusal;
  const disabled = busy || refusal !== null;
  // A call is approved by someone who has seen it whole; one the page cannot show whole is not.
  const unseen = refusal === null ? unseenRefusal(pending, taskId) : null;
  // An edit is offered only to someone who may decide, when every policy of the call allows it.
  const canEdit = refusal === null && pending.requirement.allowEdit;

  async function decide(verdict: Verdict, edited: Json | null) {
    setBusy(true);
    setProblem(null);
    setAnswer(null);
    const { message, events } = client.decide(taskId, pending.callId, pending.park, verdict, reason, edited);
    let shown = false;
    try {
      for await (const item of events) {
        // What you decided shows once the gateway has taken it, before the answer to it.
        if (!shown) views.apply(taskId, (v) => takeMessage(v, message));
        shown = true;
        views.apply(taskId, (v) => take(v, item, Date.now()));
      }
      // The call's decision is in the task, not in the stream's status events.
      const task = await client.task(taskId).catch(() => null);
      if (task) views.apply(taskId, (v) => takeTask(v, task, Date.now()));
      const line = answerTo(views.get(taskId), message.messageId);
      if (line) setAnswer({ text: line.text, refused: line.kind === "refusal" });
    } catch (error) {
      setProblem(explain(error));
    } finally {
      setBusy(false);
    }
  }

  function approveEdited() {
    const parsed = parseEdit(edit, pending);
    if (!parsed.ok) {
      setEditError(parsed.error);
      field.current?.focus();
      return;
    }
    setEditError(null);
    void decide("approve", parsed.value);
  }

  const why = refusal ? `${id}-why` : undefined;
  return (
    <article className="call" aria-labelledby={`${id}-title`}>
      <h3 id={`${id}-title`}>
        <span className="call-tool">{literal(pending.tool, false)}</span>{" "}
        <span className="muted">call {literal(pending.callId, false)}</span>
        {call.mine ? <span className="badge approval">for you</span> : null}
      </h3>
      <pre className="arguments" tabIndex={0} role="region" aria-label={`Arguments of call ${literal(pending.callId, false)}`}>
        {literal(args.text)}
      </pre>
      {args.cut ? (
        <p className="help">
          Cut: the arguments are too long to show whole (this is their start); the call runs with
          them whole.
        </p>
      ) : null}
      <dl className="call-facts">
        <dt>Decided by</dt>
        <dd>{describeDeciders(pending.requirement)}</dd>
        <dt>Until</dt>
        <dd>
          <time dateTime={pending.expiresAt}>{when(pending.expiresAt)}</time>, then{" "}
          {pending.requirement.onTimeout === "approve" ? "approved" : "rejected"}
        </dd>
        {pending.requirement.sources.length ? (
          <>
            <dt>Asked for by</dt>
            <dd>{pending.requirement.sources.join("; ")}</dd>
          </>
        ) : null}
        {decided ? (
          <>
            <dt>Decision</dt>
            <dd className="decided">{literal(decided)}</dd>
          </>
        ) : null}
      </dl>
      {pending.decision ? null : (
        <div className="decide">
          {refusal ? null : (
            <>
              <label htmlFor={`${id}-reason`}>Reason (optional)</label>
              <input
                id={`${id}-reason`}
                value={reason}
                disabled={busy}
                autoComplete="off"
                onChange={(e) => setReason(e.currentTarget.value)}
              />
            </>
          )}
          <div className="controls">
            <button
              type="button"
              className="primary"
              disabled={disabled || unseen !== null}
              aria-describedby={unseen ? `${id}-unseen` : why}
              onClick={() => void decide("approve", null)}
            >
              Approve
            </button>
            <button
              type="button"
              className="danger"
              disabled={disabled}
              aria-describedby={why}
              onClick={() => void decide("reject", null)}
            >
              Reject
            </button>
            {canEdit ? (
              <button
                type="button"
                aria-expanded={editing}
                aria-controls={`${id}-edit`}
                disabled={busy}
                onClick={() => setEditing((open) => !open)}
              >
                <span aria-hidden="true">{editing ? "▾" : "▸"}</span> Edit the arguments
              </button>
            ) : null}
            {refusal ? (
              <span id={why} className="muted">
                Not yours to decide: {refusal}
              </span>
            ) : null}
            {unseen ? (
              <span id={`${id}-unseen`} className="muted">
                Not approved here: {unseen}
              </span>
            ) : null}
            {busy ? <span className="muted">Sending…</span> : null}
          </div>
          {canEdit ? (
            <div id={`${id}-edit`} className="edit" hidden={!editing}>
              <label htmlFor={`${id}-arguments`}>Arguments (a JSON object)</label>
              <textarea
                id={`${id}-arguments`}
                ref={field}
                rows={Math.min(12, Math.max(3, edit.split("\n").length))}
                spellCheck={false}
                value={edit}
                disabled={busy}
                aria-invalid={editError !== null}
                aria-describedby={`${id}-edit-error`}
                onChange={(e) => {
                  setEdit(e.currentTarget.value);
                  setEditError(null);
                }}
              />
              <p id={`${id}-edit-error`} className="problem" role="alert">
                {editError}
              </p>
              <button type="button" className="primary" disabled={busy} onClick={approveEdited}>
                Approve with these arguments
              </button>
            </div>
          ) : null}
        </div>
      )}
      <p className={answer?.refused ? "problem" : "answer"} role="status">
        {answer ? literal(answer.text) : null}
      </p>
      <p className="problem" role="alert">
        {problem ? literal(problem) : null}
      </p>
    </article>
  );
}

/** When a call's timeout acts, in the browser's own words for a date and a time. */
function when(at: string): string {
  const moment = new Date(at);
  return Number.isNaN(moment.getTime())
    ? at
    : moment.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "medium" });
}
