// The composer: what you type goes to the task as a message. Typing "/" opens a listbox of the
// card's commands, as a WAI-ARIA combobox (Ariakit's): Up and Down move, Tab or Enter takes
// the command, Escape closes the list; with the list closed, Enter sends.
//
// A message shows at once; when the gateway refuses it before writing anything (too large,
// too many requests) it is taken back out, and the text returns to the composer with what to
// do about it.
import {
  Combobox,
  ComboboxItem,
  ComboboxPopover,
  ComboboxProvider,
  useComboboxStore,
} from "@ariakit/react/combobox";
import { useState, type FormEvent, type KeyboardEvent } from "react";
import type { HarnessClient } from "../client";
import { accepted, offered, usage, type CommandSpec } from "../commands";
import { explain } from "../errors";
import { take, takeMessage, takeTask, withoutMessage } from "../fold";
import type { Views } from "../views";

const itemId = (command: CommandSpec) => `command-${command.name}`;

export function Composer({
  client,
  views,
  taskId,
  enabled,
  ended,
}: {
  client: HarnessClient;
  views: Views;
  taskId: string;
  enabled: boolean;
  ended: boolean;
}) {
  const [text, setText] = useState("");
  const [dismissed, setDismissed] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const [sending, setSending] = useState(0);
  const commands = offered(client.commands, text);
  const open = enabled && commands.length > 0 && !dismissed;

  const combobox = useComboboxStore({
    value: text,
    setValue: (value) => {
      setText(value);
      setDismissed(false);
      setProblem(null);
    },
    open,
    setOpen: (next) => {
      if (!next) setDismissed(true);
    },
  });

  function choose(command: CommandSpec) {
    setText(accepted(command));
    setDismissed(false);
  }

  function onKeyDown(event: KeyboardEvent<HTMLInputElement>) {
    if (event.key !== "Tab" || !open || event.shiftKey) return;
    const active = combobox.getState().activeId;
    const command = commands.find((c) => itemId(c) === active) ?? commands[0];
    if (!command) return;
    event.preventDefault();
    choose(command);
  }

  async function submit(event: FormEvent) {
    event.preventDefault();
    if (open) return; // Enter on the list takes the command (the item handles it)
    const body = text.trim();
    if (!body || !enabled) return;
    const { message, events } = client.send(body, { taskId });
    views.apply(taskId, (v) => takeMessage(v, message));
    setText("");
    setProblem(null);
    setSending((n) => n + 1);
    let written = false;
    try {
      for await (const item of events) {
        written = true;
        views.apply(taskId, (v) => take(v, item, Date.now()));
      }
      const task = await client.task(taskId);
      views.apply(taskId, (v) => takeTask(v, task, Date.now()));
    } catch (error) {
      setProblem(explain(error));
      if (!written) {
        // Refused before anything was written: nothing was sent, so take it back.
        views.apply(taskId, (v) => withoutMessage(v, message.messageId));
        setText((now) => now || body);
      }
    } finally {
      setSending((n) => n - 1);
    }
  }

  const hint = ended
    ? "The task has ended: nothing more can be sent to it."
    : "Enter sends. Type / for the commands.";
  return (
    <form className="composer" onSubmit={submit} aria-label="Send a message">
      <ComboboxProvider store={combobox}>
        <label htmlFor="composer-input" className="visually-hidden">
          Message
        </label>
        <div className="composer-row">
          <Combobox
            id="composer-input"
            autoSelect
            showOnChange={false}
            showOnClick={false}
            showOnKeyPress={false}
            disabled={!enabled}
            placeholder={ended ? "The task has ended" : "Write a message, or / for commands"}
            autoComplete="off"
            aria-describedby="composer-hint composer-problem"
            onKeyDown={onKeyDown}
          />
          <button type="submit" className="primary" disabled={!enabled || !text.trim() || open}>
            {sending ? "Sending…" : "Send"}
          </button>
        </div>
        <ComboboxPopover aria-label="Commands" className="commands" gutter={4} sameWidth>
          {commands.map((command) => (
            <ComboboxItem
              key={command.name}
              id={itemId(command)}
              className="command-option"
              value={accepted(command)}
              onClick={() => choose(command)}
            >
              <span className="command-usage">{usage(command)}</span>
              <span className="command-about">{command.description}</span>
            </ComboboxItem>
          ))}
        </ComboboxPopover>
      </ComboboxProvider>
      <p id="composer-hint" className="help">
        {hint}
      </p>
      <p id="composer-problem" className="problem" role="alert">
        {problem}
      </p>
    </form>
  );
}
