// What the browser keeps between page loads: who signed in and the chosen theme.
//
// A participant id (header mode) is a name, not a secret: it is kept in localStorage, so every
// tab of this browser acts as the same participant until Sign out. A bearer token is a secret:
// it is kept in sessionStorage only, for this tab's session, and never written to disk.
import type { Credentials } from "./client";

const PARTICIPANT = "tiny-harness.participant";
const TOKEN = "tiny-harness.token";
const THEME = "tiny-harness.theme";

export type Theme = "light" | "dark";

export function savedCredentials(): Credentials | null {
  const token = sessionStorage.getItem(TOKEN);
  if (token) return { token };
  const participant = localStorage.getItem(PARTICIPANT);
  return participant ? { participant } : null;
}

export function saveCredentials(credentials: Credentials): void {
  forgetCredentials();
  if ("token" in credentials) sessionStorage.setItem(TOKEN, credentials.token);
  else localStorage.setItem(PARTICIPANT, credentials.participant);
}

export function forgetCredentials(): void {
  sessionStorage.removeItem(TOKEN);
  localStorage.removeItem(PARTICIPANT);
}

export function savedTheme(): Theme | null {
  const theme = localStorage.getItem(THEME);
  return theme === "light" || theme === "dark" ? theme : null;
}

export function saveTheme(theme: Theme): void {
  localStorage.setItem(THEME, theme);
}
