// The frame of every screen: sign-in until the gateway knows who you are, then the top bar,
// your tasks beside (or, below 820 px, above) the screen the URL names: a task, the new-task
// form, or a welcome.
import { useCallback, useEffect, useMemo, useState } from "react";
import { literal } from "../literal";
import { HarnessClient, loadConfig, type Credentials, type UiConfig } from "../client";
import { explain } from "../errors";
import { navigate, onLinkClick, usePlace } from "../location";
import { forgetCredentials, saveCredentials, savedCredentials } from "../session";
import { Views } from "../views";
import { NewTask } from "./NewTask";
import { SignIn } from "./SignIn";
import { TaskList, useTaskList } from "./TaskList";
import { TaskPage } from "./TaskPage";
import { ThemeToggle } from "./ThemeToggle";

type Phase =
  | { kind: "loading" }
  | { kind: "signed-out"; config: UiConfig; error: string | null }
  | { kind: "signed-in"; config: UiConfig; client: HarnessClient }
  | { kind: "broken"; error: string };

export function App() {
  const [phase, setPhase] = useState<Phase>({ kind: "loading" });

  const signIn = useCallback(async (config: UiConfig, credentials: Credentials) => {
    try {
      const client = await HarnessClient.connect(config, credentials);
      saveCredentials(credentials);
      setPhase({ kind: "signed-in", config, client });
    } catch (error) {
      setPhase({ kind: "signed-out", config, error: explain(error) });
    }
  }, []);

  useEffect(() => {
    loadConfig().then(
      (config) => {
        const saved = savedCredentials();
        if (saved) void signIn(config, saved);
        else setPhase({ kind: "signed-out", config, error: null });
      },
      (error: unknown) => setPhase({ kind: "broken", error: explain(error) }),
    );
  }, [signIn]);

  switch (phase.kind) {
    case "loading":
      return (
        <main className="center" aria-busy="true">
          <p>Connecting to the gateway…</p>
        </main>
      );
    case "broken":
      return (
        <main className="center">
          <h1>tiny-harness</h1>
          <p role="alert">{literal(phase.error)}</p>
        </main>
      );
    case "signed-out":
      return (
        <SignIn
          mode={phase.config.identity}
          error={phase.error}
          onSignIn={(credentials) => signIn(phase.config, credentials)}
        />
      );
    case "signed-in":
      return (
        <Workspace
          client={phase.client}
          onSignOut={() => {
            forgetCredentials();
            setPhase({ kind: "signed-out", config: phase.config, error: null });
          }}
        />
      );
  }
}

function Workspace({ client, onSignOut }: { client: HarnessClient; onSignOut: () => void }) {
  const place = usePlace();
  const views = useMemo(() => new Views(client.me), [client]);
  const list = useTaskList(client);
  const openId = place.screen === "task" ? place.taskId : null;

  return (
    <>
      <a className="skip" href="#main">
        Skip to the main content
      </a>
      <header className="topbar">
        <a className="brand" href="./" onClick={onLinkClick({ screen: "tasks" })}>
          tiny-harness
        </a>
        <span className="who">
          Signed in as <strong>{literal(client.me, false)}</strong>
        </span>
        <span className="spacer" />
        <a className="button primary" href="?new" onClick={onLinkClick({ screen: "new" })}>
          New task
        </a>
        <ThemeToggle />
        <button type="button" className="ghost" onClick={onSignOut}>
          Sign out
        </button>
      </header>
      <div className="layout">
        <TaskList list={list} openId={openId} me={client.me} views={views} />
        <main id="main" tabIndex={-1}>
          {place.screen === "task" ? (
            <TaskPage
              key={place.taskId}
              client={client}
              views={views}
              taskId={place.taskId}
              onChange={list.refresh}
            />
          ) : place.screen === "new" ? (
            <NewTask
              client={client}
              views={views}
              onCreated={(taskId) => {
                list.refresh();
                navigate({ screen: "task", taskId });
              }}
            />
          ) : (
            <Welcome count={list.tasks?.length ?? null} />
          )}
        </main>
      </div>
    </>
  );
}

function Welcome({ count }: { count: number | null }) {
  return (
    <section className="welcome" aria-labelledby="welcome-title">
      <h1 id="welcome-title">Your tasks</h1>
      <p>
        {count === null
          ? "Reading your tasks…"
          : count === 0
            ? "You take part in no task yet."
            : `You take part in ${count} task${count === 1 ? "" : "s"}: open one from the list.`}
      </p>
      <p>
        <a className="button primary" href="?new" onClick={onLinkClick({ screen: "new" })}>
          Start a new task
        </a>
      </p>
    </section>
  );
}
