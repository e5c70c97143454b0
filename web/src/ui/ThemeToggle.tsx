// Light or dark: the system's choice until the participant picks one, which is kept.
import { useEffect, useState } from "react";
import { saveTheme, savedTheme, type Theme } from "../session";

function systemTheme(): Theme {
  return window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
}

export function ThemeToggle() {
  const [chosen, setChosen] = useState<Theme | null>(savedTheme);
  const [system, setSystem] = useState<Theme>(systemTheme);

  useEffect(() => {
    const query = window.matchMedia("(prefers-color-scheme: dark)");
    const changed = () => setSystem(systemTheme());
    query.addEventListener("change", changed);
    return () => query.removeEventListener("change", changed);
  }, []);

  const theme = chosen ?? system;
  useEffect(() => {
    if (chosen) document.documentElement.dataset.theme = chosen;
    else delete document.documentElement.dataset.theme;
  }, [chosen]);

  const other: Theme = theme === "dark" ? "light" : "dark";
  return (
    <button
      type="button"
      className="ghost"
      aria-pressed={theme === "dark"}
      onClick={() => {
        saveTheme(other);
        setChosen(other);
      }}
    >
      Dark theme
    </button>
  );
}
