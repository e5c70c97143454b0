// The participant's tasks: a tree (parent, then its sub-tasks), each with its state and
// sub-state (a question put to a person marked as such, and calls waiting for approval: those
// you may decide first), filtered by state. Read with ListTasks
// when the page opens, when the open task moves, and when the tab comes back into view; a read
// refused for too many requests is made again once the gateway's Retry-After has passed, at
// most REREADS times in a row (then the next of those reasons reads it). The open task's row
// shows the state its page shows, from the same view (tasks.ts, withOpenView).
import type { Task } from "@a2a-js/sdk";
import { useCallback, useEffect, useRef, useState, useSyncExternalStore } from "react";
import { literal } from "../literal";
import type { HarnessClient } from "../client";
import { explain, rereadAfter, rereading } from "../errors";
import { onLinkClick } from "../location";
import { filtered, nest, tree, withOpenView, type Branch, type StateFilter, type TaskRow } from "../tasks";
import type { Views } from "../views";
import { shortState, STATE_NAMES } from "../wire";
import { StateBadges } from "./StateBadges";

/** How many times in a row a read refused for too many requests is made again on its own. */
const REREADS = 3;

export interface TaskListState {
  tasks: Task[] | null;
  error: string | null;
  refresh: () => void;
}

export function useTaskList(client: HarnessClient): TaskListState {
  const [tasks, setTasks] = useState<Task[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  // One read at a time; a refresh asked for during a read is made once it ends.
  const reading = useRef(false);
  const again = useRef(false);
  const reread = useRef<{ timer: number | null; left: number }>({ timer: null, left: REREADS });

  const refresh = useCallback(() => {
    if (reading.current) {
      again.current = true;
      return;
    }
    reading.current = true;
    void (async () => {
      do {
        again.current = false;
        try {
          setTasks(await client.tasks());
          setError(null);
          reread.current.left = REREADS;
        } catch (e) {
          const wait = rereadAfter(e);
          if (wait !== null && reread.current.left > 0 && reread.current.timer === null) {
            reread.current.left -= 1;
            reread.current.timer = window.setTimeout(() => {
              reread.current.timer = null;
              refresh();
            }, wait);
            setError(rereading(wait));
          } else {
            setError(explain(e));
          }
        }
      } while (again.current);
      reading.current = false;
    })();
  }, [client]);

  useEffect(() => {
    refresh();
    const visible = () => document.visibilityState === "visible" && refresh();
    document.addEventListener("visibilitychange", visible);
    const timers = reread.current;
    return () => {
      document.removeEventListener("visibilitychange", visible);
      if (timers.timer !== null) window.clearTimeout(timers.timer);
    };
  }, [refresh]);

  return { tasks, error, refresh };
}

const FILTERS: { value: StateFilter; label: string }[] = [
  { value: "open", label: "Open tasks" },
  { value: "all", label: "All tasks" },
  ...STATE_NAMES.map((s) => ({ value: s, label: shortState(s) })),
];

export function TaskList({
  list,
  openId,
  me,
  views,
}: {
  list: TaskListState;
  openId: string | null;
  /** Who the list is for: a question put to them reads "question for you". */
  me: string;
  /** The tasks' views the pages fold their streams into: the open task's row is drawn from its view. */
  views: Views;
}) {
  const [filter, setFilter] = useState<StateFilter>("all");
  const open = useSyncExternalStore(views.subscribe, () => (openId ? views.get(openId) : null));
  const rows = list.tasks ? filtered(withOpenView(tree(list.tasks, me), open), filter) : [];

  return (
    <nav className="tasks" aria-labelledby="tasks-title">
      <div className="tasks-head">
        <h2 id="tasks-title">Your tasks</h2>
        <label className="filter">
          <span>Show</span>
          <select value={filter} onChange={(e) => setFilter(e.target.value as StateFilter)}>
            {FILTERS.map((f) => (
              <option key={f.value} value={f.value}>
                {f.label}
              </option>
            ))}
          </select>
        </label>
      </div>
      {list.error ? (
        <p className="problem" role="alert">
          {literal(list.error)}
        </p>
      ) : null}
      {list.tasks === null ? (
        <p className="muted">Reading your tasks…</p>
      ) : rows.length === 0 ? (
        <p className="muted">{list.tasks.length ? "No task in this state." : "No task yet."}</p>
      ) : (
        <Branches branches={nest(rows)} openId={openId} />
      )}
    </nav>
  );
}

function Branches({
  branches,
  openId,
}: {
  branches: Branch<TaskRow & { kept: boolean }>[];
  openId: string | null;
}) {
  return (
    <ul className="tree">
      {branches.map(({ row, children }) => (
        <li key={row.id} className={row.kept ? undefined : "dimmed"}>
          <a
            href={`?task=${encodeURIComponent(row.id)}`}
            onClick={onLinkClick({ screen: "task", taskId: row.id })}
            aria-current={row.id === openId ? "page" : undefined}
          >
            <span className="goal">{literal(row.goal)}</span>
            <StateBadges
              state={row.state}
              subState={row.subState}
              question={row.question}
              approval={row.approval}
            />
          </a>
          {children.length ? <Branches branches={children} openId={openId} /> : null}
        </li>
      ))}
    </ul>
  );
}
