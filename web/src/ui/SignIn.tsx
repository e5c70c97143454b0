// Who you are to the gateway, as its identity mode asks: a participant id (header mode) or a
// Kubernetes bearer token (token-review mode).
import { useState, type FormEvent } from "react";
import type { Credentials, IdentityMode } from "../client";
import { ThemeToggle } from "./ThemeToggle";

export function SignIn({
  mode,
  error,
  onSignIn,
}: {
  mode: IdentityMode;
  error: string | null;
  onSignIn: (credentials: Credentials) => Promise<void>;
}) {
  const [value, setValue] = useState("");
  const [busy, setBusy] = useState(false);
  const [missing, setMissing] = useState(false);
  const token = mode === "tokenreview";

  async function submit(event: FormEvent) {
    event.preventDefault();
    const given = value.trim();
    if (!given) {
      setMissing(true);
      return;
    }
    setBusy(true);
    await onSignIn(token ? { token: given } : { participant: given });
    setBusy(false);
  }

  const problem = missing
    ? token
      ? "Paste your token to sign in."
      : "Type your participant id to sign in."
    : error;
  return (
    <main className="center signin">
      <div className="signin-theme">
        <ThemeToggle />
      </div>
      <form className="card" onSubmit={submit} noValidate aria-labelledby="signin-title">
        <h1 id="signin-title">Sign in to tiny-harness</h1>
        <label htmlFor="credential">{token ? "Bearer token" : "Your participant id"}</label>
        <input
          id="credential"
          name="credential"
          type={token ? "password" : "text"}
          autoComplete={token ? "off" : "username"}
          value={value}
          onChange={(e) => {
            setValue(e.target.value);
            setMissing(false);
          }}
          aria-invalid={problem ? true : undefined}
          aria-describedby="credential-help credential-problem"
          autoFocus
        />
        <p id="credential-help" className="help">
          {token
            ? "This gateway checks a Kubernetes token (for a ServiceAccount: kubectl create token NAME). It is kept for this tab only."
            : "This gateway takes the name you give as who you are, as the tasks list their participants (alice, bob …)."}
        </p>
        <p id="credential-problem" className="problem" role="alert">
          {problem}
        </p>
        <button type="submit" className="primary" disabled={busy}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
      </form>
    </main>
  );
}
