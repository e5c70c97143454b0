// The web UI's entry: mount the app. The Buffer the A2A SDK needs for file parts comes first,
// before any of the SDK runs (buffer.ts).
import "./buffer";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App } from "./ui/App";
import "./styles.css";

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
