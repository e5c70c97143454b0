// One task: its goal, state and sub-state, Complete and Cancel, the conversation streaming in,
// the composer; beside it the acceptance criteria, participants and roles, the plan with its
// steps' progress and the sub-task rows (links to ?task=<id>, naming a remote agent's), and
// "← Parent" for a sub-task. A question put to a person (a participant task) says whom it asks
// and what they can do about it, or its answer once given, and its composer takes the answer.
// A task awaiting approval lists its calls above the conversation, with Approve and Reject
// (Approvals.tsx); the calls ride on no status event, so the re-read below brings them. A
// message's files show under its text (a small preview for an image), and what the task has
// published shows below the conversation (Artifacts.tsx).
//
// The task is read once (GetTask, with its history), then followed (SubscribeToTask) for as
// long as the page is open, through reconnections, each resuming from the last version the
// view applied (Last-Event-ID), so nothing is lost and nothing shows twice; "Reconnecting…"
// says when it is between two streams, and a refusal that following again would only meet
// again (the participant's streams at the gateway's limit) is said once, and ends it. A status
// event says that something moved, not everything that did (a message from another tab rides
// on no event), so each one also asks for a re-read of the task, one at a time; the fold
// places what the read adds.
import type { Task } from "@a2a-js/sdk";
import { useEffect, useMemo, useRef, useState, useSyncExternalStore } from "react";
import { literal } from "../literal";
import { sleep, type HarnessClient } from "../client";
import { explain, GatewayRefusal, isUnreachable } from "../errors";
import {
  canSend,
  endingRefusal,
  myRole,
  planProgress,
  progress,
  stateLabel,
  take,
  takeTask,
  usageLine,
  type Line,
  type TaskView,
} from "../fold";
import { onLinkClick } from "../location";
import { whereItRuns } from "../tasks";
import { composerWords, guidance, title, viewQuestion, type Question } from "../question";
import { reconnectPause } from "../resume";
import { isTerminal } from "../wire";
import type { Views } from "../views";
import { size } from "../attachments";
import { previewOf, type FileNote } from "../parts";
import { Approvals } from "./Approvals";
import { Artifacts } from "./Artifacts";
import { Composer } from "./Composer";
import { StateBadges } from "./StateBadges";

type Link =
  | { kind: "reading" }
  | { kind: "live" }
  | { kind: "reconnecting"; why: string }
  | { kind: "refused"; why: string };

export function TaskPage({
  client,
  views,
  taskId,
  onChange,
}: {
  client: HarnessClient;
  views: Views;
  taskId: string;
  /** The task moved (state, sub-state, sub-task rows): the task list reads again. */
  onChange: () => void;
}) {
  const view = useSyncExternalStore(views.subscribe, () => views.get(taskId));
  const [link, setLink] = useState<Link>({ kind: "reading" });
  const [missing, setMissing] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const now = useClock(view.workingSince !== null);

  useFollow(client, views, taskId, setLink, setMissing);
  useMoves(view, onChange);

  useEffect(() => {
    document.title = `${literal(view.extension?.goal || taskId, false)} · tiny-harness`;
  }, [view.extension?.goal, taskId]);

  if (missing) {
    return (
      <section className="task" aria-labelledby="task-title">
        <h1 id="task-title">Task {literal(taskId, false)}</h1>
        <p role="alert" className="problem">
          {literal(missing)}
        </p>
      </section>
    );
  }

  const refusal = endingRefusal(view);
  const fold = (task: Task) => views.apply(taskId, (v) => takeTask(v, task, Date.now()));

  /** Complete or cancel: the task as the gateway answers, or why it refused. */
  async function end(ask: () => Promise<Task>) {
    setBusy(true);
    setNotice(null);
    try {
      fold(await ask());
    } catch (error) {
      setNotice(explain(error));
    } finally {
      setBusy(false);
    }
  }

  const complete = () =>
    end(async () => {
      for await (const event of client.complete(taskId)) {
        views.apply(taskId, (v) => take(v, event, Date.now()));
      }
      return client.task(taskId);
    });
  const cancel = () => end(() => client.cancel(taskId));

  // Both stay in place when refused: disabled, never hidden, with the reason beside them.
  const ending = {
    disabled: busy || refusal !== null,
    "aria-describedby": refusal ? "controls-why" : undefined,
  };
  const ext = view.extension;
  const working = progress(view, now);
  const role = myRole(view);
  const question = view.known ? viewQuestion(view) : null;
  return (
    <article className="task" aria-labelledby="task-title" aria-busy={!view.known}>
      <header className="task-head">
        {ext?.parent ? (
          <a
            className="parent"
            href={`?task=${encodeURIComponent(ext.parent)}`}
            onClick={onLinkClick({ screen: "task", taskId: ext.parent })}
          >
            ← Parent
          </a>
        ) : null}
        <h1 id="task-title">{literal(ext?.goal || (view.known ? taskId : "Reading the task…"))}</h1>
        <div className="task-state">
          <span role="status" aria-label="Task state" title={stateLabel(view)}>
            <StateBadges state={view.state} subState={view.subState} />
          </span>
          {working ? <span className="progress">{working}</span> : null}
        </div>
        <div className="controls">
          <button type="button" className="primary" {...ending} onClick={complete}>
            Complete
          </button>
          <button type="button" className="ghost" {...ending} onClick={cancel}>
            Cancel task
          </button>
          {refusal ? (
            <span id="controls-why" className="muted">
              {literal(refusal)}
            </span>
          ) : null}
        </div>
        <p className="problem" role="alert">
          {notice ? literal(notice) : null}
        </p>
      </header>
      <div className="link" role="status">
        {link.kind === "reconnecting" ? (
          <span className="reconnecting">Reconnecting… {link.why}</span>
        ) : null}
        {link.kind === "refused" ? (
          <span className="unfollowed">
            Not following this task live: {link.why} Reload the page to follow it again.
          </span>
        ) : null}
      </div>
      {question ? <QuestionPanel question={question} /> : null}
      {view.known ? <Approvals client={client} views={views} view={view} /> : null}
      <div className="task-body">
        <div className="task-main">
          <section className="conversation" aria-labelledby="conversation-title">
            <h2 id="conversation-title" className="visually-hidden">
              Conversation
            </h2>
            <Conversation lines={view.lines} known={view.known} />
            <Composer
              client={client}
              views={views}
              taskId={taskId}
              enabled={canSend(view)}
              words={composerWords(view)}
            />
          </section>
          <Artifacts artifacts={view.artifacts} />
        </div>
        <aside className="details" aria-label="Task details">
          <Details view={view} role={role} />
        </aside>
      </div>
    </article>
  );
}

/** The question this task puts, to whom, and what to do about it (or its answer). */
function QuestionPanel({ question }: { question: Question }) {
  const answered = question.ending !== null;
  return (
    <section
      className="question-panel"
      aria-labelledby="question-title"
    >
      <h2 id="question-title">{literal(title(question), false)}</h2>
      <p className={answered ? "answer" : undefined}>{literal(guidance(question))}</p>
    </section>
  );
}

function Conversation({ lines, known }: { lines: Line[]; known: boolean }) {
  const end = useRef<HTMLLIElement | null>(null);
  useEffect(() => {
    end.current?.scrollIntoView?.({ block: "nearest" });
  }, [lines.length]);
  return (
    <div className="log" role="log" aria-label="Messages" tabIndex={0}>
      {lines.length === 0 ? (
        <p className="muted">{known ? "No message yet: say what you want done." : "Reading…"}</p>
      ) : (
        <ol>
          {lines.map((line, i) => (
            <li
              key={line.messageId}
              className={`line ${line.kind}`}
              ref={i === lines.length - 1 ? end : undefined}
            >
              <span className="who">{literal(who(line), false)}</span>
              {line.text ? <span className="text">{literal(line.text)}</span> : null}
              {line.files.length ? <Files files={line.files} /> : null}
            </li>
          ))}
        </ol>
      )}
    </div>
  );
}

/** A message's files: name, type and size, and a small preview of an image (made once for the
 * line: a line the history brings again keeps its object). */
function Files({ files }: { files: FileNote[] }) {
  const previews = useMemo(() => files.map(previewOf), [files]);
  return (
    <ul className="line-files" aria-label="Attached files">
      {files.map((file, i) => (
        <li key={i}>
          {previews[i] ? <img src={previews[i]} alt={`Preview of ${literal(file.name, false)}`} /> : null}
          <span className="file-name">
            {file.url && /^https?:\/\//i.test(file.url) ? (
              <a href={file.url} rel="noopener noreferrer" target="_blank">
                {literal(file.name, false)}
              </a>
            ) : (
              literal(file.name, false)
            )}
          </span>
          <span className="muted">
            {file.mediaType}
            {file.size !== null ? ` · ${size(file.size)}` : null}
          </span>
        </li>
      ))}
    </ul>
  );
}

function who(line: Line): string {
  switch (line.kind) {
    case "command":
      return "command reply";
    case "refusal":
      // The harness refused it (the text says so and why), not the agent.
      return "harness";
    case "note":
    case "decision":
      // The operator's answer to a decision on a call, not the agent's words.
      return "harness";
    default:
      return line.who;
  }
}

function Details({ view, role }: { view: TaskView; role: string | null }) {
  const ext = view.extension;
  if (!ext) return <p className="muted">Reading…</p>;
  const plan = planProgress(view);
  const used = usageLine(view);
  return (
    <>
      {ext.description ? (
        <section aria-labelledby="description-title">
          <h2 id="description-title">Description</h2>
          <p className="pre">{literal(ext.description)}</p>
        </section>
      ) : null}
      <section aria-labelledby="criteria-title">
        <h2 id="criteria-title">Acceptance criteria</h2>
        {ext.acceptanceCriteria.length ? (
          <ul>
            {ext.acceptanceCriteria.map((c, i) => (
              <li key={i}>{literal(c)}</li>
            ))}
          </ul>
        ) : (
          <p className="muted">None given.</p>
        )}
      </section>
      <section aria-labelledby="people-title">
        <h2 id="people-title">Participants</h2>
        <ul className="people">
          {ext.participants.map((p) => (
            <li key={p.id}>
              <span>{literal(p.id, false)}</span>
              {p.id === view.me ? <span className="muted"> (you)</span> : null}
              <span className="badge role">{p.role}</span>
            </li>
          ))}
        </ul>
        {role === "watcher" ? (
          <p className="muted">You watch this task: you may send messages and /status.</p>
        ) : null}
      </section>
      <section aria-labelledby="plan-title">
        <h2 id="plan-title">Plan</h2>
        {plan.total ? (
          <>
            <p>
              <progress value={plan.done} max={plan.total} aria-labelledby="plan-count" />{" "}
              <span id="plan-count">
                {plan.done} of {plan.total} steps done
              </span>
            </p>
            <ol className="plan">
              {ext.plan.map((s) => (
                <li key={s.name} className={s.done ? "done" : undefined}>
                  <span aria-hidden="true">{s.done ? "✓" : "○"}</span> {literal(s.name, false)}
                  <span className="visually-hidden">{s.done ? " (done)" : " (to do)"}</span>
                  {s.dependencies.length ? (
                    <span className="muted"> · after {s.dependencies.join(", ")}</span>
                  ) : null}
                  {s.description ? <span className="muted"> · {s.description}</span> : null}
                </li>
              ))}
            </ol>
          </>
        ) : (
          <p className="muted">No plan.</p>
        )}
      </section>
      <section aria-labelledby="subtasks-title">
        <h2 id="subtasks-title">Sub-tasks</h2>
        {ext.subTasks.length ? (
          <ul className="subtasks">
            {ext.subTasks.map((row) => (
              <li key={row.taskId}>
                <a
                  href={`?task=${encodeURIComponent(row.taskId)}`}
                  onClick={onLinkClick({ screen: "task", taskId: row.taskId })}
                >
                  <span className="goal">{literal(row.goal || row.taskId)}</span>
                  {whereItRuns(row) ? <span className="muted">{whereItRuns(row)}</span> : null}
                  <StateBadges state={row.state} subState={row.subState} />
                </a>
              </li>
            ))}
          </ul>
        ) : (
          <p className="muted">None.</p>
        )}
      </section>
      {used ? (
        <section aria-labelledby="usage-title">
          <h2 id="usage-title">Used</h2>
          <p>{used}</p>
        </section>
      ) : null}
    </>
  );
}

/** Read the task, then follow it until it ends or the page closes. */
function useFollow(
  client: HarnessClient,
  views: Views,
  taskId: string,
  setLink: (link: Link) => void,
  setMissing: (why: string) => void,
) {
  useEffect(() => {
    const stop = new AbortController();
    const reread = coalesced(async () => {
      const task = await client.task(taskId);
      views.apply(taskId, (v) => takeTask(v, task, Date.now()));
    });
    void (async () => {
      try {
        const task = await firstRead(client, taskId, stop.signal, setLink);
        if (task === null) return;
        const view = views.apply(taskId, (v) => takeTask(v, task, Date.now()));
        setLink({ kind: "live" });
        if (isTerminal(view.state)) return;
        const since = () => views.get(taskId).version;
        for await (const item of client.follow(taskId, stop.signal, since)) {
          if (item.kind === "reconnecting") {
            setLink({ kind: "reconnecting", why: explain(item.reason) });
            continue;
          }
          if (item.kind === "refused") {
            setLink({ kind: "refused", why: item.why });
            break;
          }
          setLink({ kind: "live" });
          const next = views.apply(taskId, (v) => take(v, item.event, Date.now()));
          if (item.event.payload?.$case === "statusUpdate") reread();
          if (isTerminal(next.state)) break;
        }
        reread();
      } catch (error) {
        if (!stop.signal.aborted) setMissing(explain(error));
      }
    })();
    return () => stop.abort();
  }, [client, views, taskId, setLink, setMissing]);
}

/** The task, read again after a pause while the gateway cannot be reached (or asks to wait);
 * null when the page closed first. */
async function firstRead(
  client: HarnessClient,
  taskId: string,
  signal: AbortSignal,
  setLink: (link: Link) => void,
): Promise<Task | null> {
  for (let attempt = 0; !signal.aborted; attempt++) {
    try {
      return await client.task(taskId);
    } catch (error) {
      const limited = error instanceof GatewayRefusal && error.status === 429;
      if (!(limited || isUnreachable(error)) || signal.aborted) throw error;
      setLink({ kind: "reconnecting", why: explain(error) });
      await sleep(reconnectPause(attempt + 1, limited ? error.retryAfter : null), signal);
    }
  }
  return null;
}

/** ``run`` at most once at a time; a call made while it runs makes it run once more after. A
 * failed read is left for the next event (the follow stream says when the gateway is gone). */
function coalesced(run: () => Promise<void>): () => void {
  let running = false;
  let again = false;
  return () => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    void (async () => {
      do {
        again = false;
        try {
          await run();
        } catch {
          // the follow stream reports the gateway's absence; the next event reads again
        }
      } while (again);
      running = false;
    })();
  };
}

/** Tell ``onChange`` when the task's state, sub-state or sub-task rows change. */
function useMoves(view: TaskView, onChange: () => void) {
  const key = [
    view.state,
    view.subState,
    ...(view.extension?.subTasks ?? []).map((r) => `${r.taskId}:${r.state}:${r.subState}`),
  ].join("|");
  const last = useRef<string | null>(null);
  useEffect(() => {
    if (!view.known) return;
    if (last.current !== null && last.current !== key) onChange();
    last.current = key;
  }, [key, view.known, onChange]);
}

/** Now (ms), ticking every second while ``ticking``. */
function useClock(ticking: boolean): number {
  const [now, setNow] = useState(Date.now);
  useEffect(() => {
    if (!ticking) return;
    setNow(Date.now());
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, [ticking]);
  return now;
}
