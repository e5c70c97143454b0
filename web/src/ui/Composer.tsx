// The composer: what you type goes to the task as a message. Typing "/" opens a listbox of the
// card's commands, as a WAI-ARIA combobox (downshift's useCombobox): Up and Down move, Tab or
// Enter takes the command, Escape closes the list; with the list closed, Enter sends.
//
// A message shows at once; when the gateway refuses it before writing anything (too large,
// too many requests) it is taken back out, and the text returns to the composer with what to
// do about it.
import { useCombobox, type UseComboboxState, type UseComboboxStateChangeOptions } from "downshift";
import { useState, type FormEvent, type KeyboardEvent } from "react";
import type { HarnessClient } from "../client";
import { accepted, offered, usage, type CommandSpec } from "../commands";
import { explain } from "../errors";
import { take, takeMessage, takeTask, withoutMessage } from "../fold";
import type { ComposerWords } from "../question";
import type { Views } from "../views";

const { InputBlur, InputKeyDownEscape } = useCombobox.stateChangeTypes;

/** Downshift's choices, less two that would lose what was typed: Escape on a closed list
 * clears the input, and leaving the input takes the highlighted command. */
function keepTyped(
  state: UseComboboxState<CommandSpec>,
  { type, changes }: UseComboboxStateChangeOptions<CommandSpec>,
): Partial<UseComboboxState<CommandSpec>> {
  if (type === InputKeyDownEscape || type === InputBlur) {
    return { ...changes, inputValue: state.inputValue, selectedItem: state.selectedItem };
  }
  return changes;
}

export function Composer({
  client,
  views,
  taskId,
  enabled,
  words,
}: {
  client: HarnessClient;
  views: Views;
  taskId: string;
  enabled: boolean;
  /** Its label, placeholder, hint and button: a message, an answer, or an ended task's. */
  words: ComposerWords;
}) {
  const [text, setText] = useState("");
  const [dismissed, setDismissed] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const [sending, setSending] = useState(0);
  const commands = offered(client.commands, text);
  const open = enabled && commands.length > 0 && !dismissed;

  const combobox = useCombobox<CommandSpec>({
    items: commands,
    inputValue: text,
    selectedItem: null,
    isOpen: open,
    defaultHighlightedIndex: 0,
    itemToString: (command) => (command ? accepted(command) : ""),
    inputId: "composer-input",
    labelId: "composer-label",
    menuId: "composer-commands",
    getItemId: (index) => `command-${commands[index]?.name ?? index}`,
    stateReducer: keepTyped,
    // A command taken from the list (Enter, a click). Typing is taken by onChange below, in the
    // event itself: downshift calls this only after rendering, and a controlled input that
    // waits for that loses the keys typed meanwhile.
    onInputValueChange: ({ inputValue }) => {
      setText(inputValue ?? "");
      setDismissed(false);
    },
    onIsOpenChange: ({ isOpen }) => {
      if (!isOpen) setDismissed(true);
    },
  });

  function onKeyDown(event: KeyboardEvent<HTMLInputElement>) {
    if (event.key !== "Tab" || event.shiftKey || !open) return;
    const command = commands[Math.max(combobox.highlightedIndex, 0)];
    if (!command) return;
    event.preventDefault();
    setText(accepted(command));
  }

  async function submit(event: FormEvent) {
    event.preventDefault();
    if (open) return; // Enter on the list takes the command
    const body = text.trim();
    if (!body || !enabled) return;
    const { message, events } = client.send(body, { taskId });
    views.apply(taskId, (v) => takeMessage(v, message));
    setText("");
    setProblem(null);
    setSending((n) => n + 1);
    let written = false;
    try {
      try {
        for await (const item of events) {
          written = true;
          views.apply(taskId, (v) => take(v, item, Date.now()));
        }
      } catch (error) {
        setProblem(explain(error));
        if (!written) {
          // Refused before anything was written: nothing was sent, so take it back.
          views.apply(taskId, (v) => withoutMessage(v, message.messageId));
          setText((now) => now || body);
        }
        return;
      }
      // The message went through; this read only settles the view. A failure of it (too
      // many requests, say) is not the message's: the task's own stream brings the rest.
      const task = await client.task(taskId).catch(() => null);
      if (task) views.apply(taskId, (v) => takeTask(v, task, Date.now()));
    } finally {
      setSending((n) => n - 1);
    }
  }

  return (
    <form className="composer" onSubmit={submit} aria-label="Send a message">
      <label {...combobox.getLabelProps()} className="visually-hidden">
        {words.label}
      </label>
      <div className="composer-row">
        <div className="composer-field">
        <input
          {...combobox.getInputProps({
            onKeyDown,
            onChange: (event) => {
              setText(event.currentTarget.value);
              setDismissed(false);
              setProblem(null);
            },
            disabled: !enabled,
            placeholder: words.placeholder,
            autoComplete: "off",
            "aria-describedby": "composer-hint composer-problem",
          })}
        />
      <span id="composer-commands-label" className="visually-hidden">
        Commands
      </span>
      <ul
        {...combobox.getMenuProps({ "aria-labelledby": "composer-commands-label" })}
        className="commands"
        hidden={!open}
      >
        {open
          ? commands.map((command, index) => (
              <li
                key={command.name}
                className="command-option"
                {...combobox.getItemProps({ item: command, index })}
              >
                <span className="command-usage">{usage(command)}</span>
                <span className="command-about">{command.description}</span>
              </li>
            ))
          : null}
      </ul>
        </div>
        <button type="submit" className="primary" disabled={!enabled || !text.trim() || open}>
          {sending ? "Sending…" : words.send}
        </button>
      </div>
      <p id="composer-hint" className="help">
        {words.hint}
      </p>
      <p id="composer-problem" className="problem" role="alert">
        {problem}
      </p>
    </form>
  );
}
